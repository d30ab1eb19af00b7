#include "retrieve/structural/unit_refs_store.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "index/derived_file.h"
#include "index/symbol_graph.h"
#include "retrieve/structural/file_facts.h"

namespace repoctx::structural {

namespace {

// Payload (index/derived_file.h): u64 entities, u64 units, u64 references, i32 units[units],
// u32 offsets[units + 1], i32 references[references].
constexpr const char* kUnitRefsFile = "unit-refs";

struct UnitRefsReader {
  std::string_view rest;
  template <class T>
  bool get(T& out) {
    if (rest.size() < sizeof(T)) return false;
    std::memcpy(&out, rest.data(), sizeof(T));
    rest.remove_prefix(sizeof(T));
    return true;
  }
  template <class T>
  bool array(std::vector<T>& out, uint64_t n) {
    if (n > rest.size() / sizeof(T)) return false;
    out.resize(n);
    if (n) std::memcpy(out.data(), rest.data(), n * sizeof(T));
    rest.remove_prefix(n * sizeof(T));
    return true;
  }
};

template <class T>
void put_raw(std::string& out, const T& v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof(T));
}

// Whether the units and their references are those of this view: units ascending and exactly its units,
// references ascending and in range (a file of a matching image and build holds nothing else; checked anyway,
// as queries index arrays with them).
bool unit_refs_match(const RepoView& view, const std::vector<int32_t>& units, const std::vector<uint32_t>& offsets,
                     const std::vector<int32_t>& refs) {
  const int n = static_cast<int>(view.entities().size());
  size_t next = 0;
  for (int e = 0; e < n; ++e) {
    if (!is_unit(view, e)) continue;
    if (next >= units.size() || units[next] != e) return false;
    ++next;
  }
  if (next != units.size() || offsets.size() != units.size() + 1 || offsets.front() != 0 ||
      offsets.back() != refs.size())
    return false;
  for (size_t u = 0; u < units.size(); ++u) {
    if (offsets[u] > offsets[u + 1]) return false;
    for (uint32_t i = offsets[u]; i < offsets[u + 1]; ++i)
      if (refs[i] < 0 || refs[i] >= n || (i > offsets[u] && refs[i] <= refs[i - 1])) return false;
  }
  return true;
}

}  // namespace

std::optional<UnitRefs> read_unit_refs(const RepoView& view) {
  auto payload = read_derived_file(view, kUnitRefsFile, kResolverVersion);
  if (!payload) return std::nullopt;
  UnitRefsReader r{*payload};
  uint64_t n_entities = 0, n_units = 0, n_refs = 0;
  std::vector<int32_t> units, refs;
  std::vector<uint32_t> offsets;
  if (!r.get(n_entities) || n_entities != view.entities().size() || !r.get(n_units) || !r.get(n_refs) ||
      !r.array(units, n_units) || !r.array(offsets, n_units + 1) || !r.array(refs, n_refs) || !r.rest.empty() ||
      !unit_refs_match(view, units, offsets, refs))
    return std::nullopt;
  UnitRefs out;
  out.reserve(units.size());
  for (size_t u = 0; u < units.size(); ++u)
    out.emplace_back(units[u], std::vector<int>(refs.begin() + offsets[u], refs.begin() + offsets[u + 1]));
  return out;
}

void write_unit_refs(const RepoView& view, const UnitRefs& unit_refs) {
  std::string out;
  uint64_t n_refs = 0;
  for (const auto& [unit, refs] : unit_refs) n_refs += refs.size();
  put_raw(out, static_cast<uint64_t>(view.entities().size()));
  put_raw(out, static_cast<uint64_t>(unit_refs.size()));
  put_raw(out, n_refs);
  for (const auto& [unit, refs] : unit_refs) put_raw(out, static_cast<int32_t>(unit));
  uint32_t offset = 0;
  put_raw(out, offset);
  for (const auto& [unit, refs] : unit_refs) put_raw(out, offset += static_cast<uint32_t>(refs.size()));
  for (const auto& [unit, refs] : unit_refs)
    for (int e : refs) put_raw(out, static_cast<int32_t>(e));
  write_derived_file(view, kUnitRefsFile, kResolverVersion, out);
}

}  // namespace repoctx::structural
