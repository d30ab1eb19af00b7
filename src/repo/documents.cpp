#include "repo/documents.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "util/cancel.h"
#include "util/hash.h"
#include "util/text.h"

namespace repoctx {

std::string TermVec::serialize() const {
  std::string out(terms.size() * 12, '\0');
  char* p = out.data();
  for (const auto& [id, tf] : terms) {
    std::memcpy(p, &id, 8);
    std::memcpy(p + 8, &tf, 4);
    p += 12;
  }
  return out;
}

TermVec TermVec::deserialize(std::string_view blob, uint32_t length) {
  TermVec tv;
  tv.length = length;
  size_t n = blob.size() / 12;
  tv.terms.resize(n);
  const char* p = blob.data();
  for (size_t i = 0; i < n; ++i, p += 12) {
    std::memcpy(&tv.terms[i].first, p, 8);
    std::memcpy(&tv.terms[i].second, p + 8, 4);
  }
  return tv;
}

TermVec term_vector(std::string_view text) {
  thread_local std::vector<uint64_t> ids;
  ids.clear();
  tokenize_hashes(text, ids);
  std::sort(ids.begin(), ids.end());
  TermVec tv;
  tv.length = static_cast<uint32_t>(ids.size());
  for (size_t i = 0; i < ids.size();) {
    size_t j = i;
    while (j < ids.size() && ids[j] == ids[i]) ++j;
    tv.terms.emplace_back(ids[i], static_cast<uint32_t>(j - i));
    i = j;
  }
  return tv;
}

std::vector<SnippetSpan> split_aggregate(std::string_view source, int max_lines) {
  if (max_lines < 1) max_lines = 1;
  auto lines = split_lines(source);
  // Mini-blocks (eq. 14), long ones pre-cut into max_lines chunks.
  std::vector<SnippetSpan> blocks;
  int n = static_cast<int>(lines.size());
  for (int i = 0; i < n;) {
    if (is_blank(lines[i])) {
      ++i;
      continue;
    }
    int j = i;
    while (j < n && !is_blank(lines[j])) ++j;
    for (int a = i; a < j; a += max_lines) {
      int b = std::min(j, a + max_lines);
      blocks.push_back({a + 1, b, b - a});
    }
    i = j;
  }
  // Aggregation (eq. 15-16): extend while the sum of block lengths stays <= L.
  std::vector<SnippetSpan> out;
  for (size_t i = 0; i < blocks.size();) {
    SnippetSpan s = blocks[i];
    size_t j = i + 1;
    while (j < blocks.size() && s.code_lines + blocks[j].code_lines <= max_lines) {
      s.end_line = blocks[j].end_line;
      s.code_lines += blocks[j].code_lines;
      ++j;
    }
    out.push_back(s);
    i = j;
  }
  return out;
}

std::string entity_signature_block(const Entity& e) {
  std::string out;
  for (const auto& d : e.decorators) out += "@" + d + "\n";
  out += e.signature;
  if (!e.docstring.empty()) {
    out += "\n    \"\"\"";
    bool first = true;
    for (auto line : split_lines(e.docstring)) {
      if (!first) out += "\n    ";
      out.append(line);
      first = false;
    }
    out += "\"\"\"";
  }
  return out;
}

namespace {

// The byte range of a statement's document: its lines, but where it shares its first or last line with
// other statements through `;` (`a = 1; b = 2`), only its own part of that line. Without the cut, n
// statements on one line would each score the whole line: n^2 work and memory.
std::pair<size_t, size_t> own_lines(const Entity& e, std::string_view source, const std::vector<uint32_t>& starts) {
  std::string_view lines = line_range(source, starts, e.decorated_start_line, e.end_line);
  if (lines.empty() || lines.data() < source.data()) return {0, 0};
  size_t a = static_cast<size_t>(lines.data() - source.data()), b = a + lines.size();
  size_t s = std::min<size_t>(e.start_byte, source.size()), t = std::min<size_t>(e.end_byte, source.size());
  if (s < a || t > b || s > t) return {a, b};
  size_t semi = source.substr(a, s - a).rfind(';');
  if (semi != std::string_view::npos) a += semi + 1;
  size_t next = t;
  while (next < b && (source[next] == ' ' || source[next] == '\t')) ++next;
  if (next < b && source[next] == ';') b = t;
  return {a, b};
}

}  // namespace

std::string entity_document(const Entity& e, const std::vector<const Entity*>& children, std::string_view source,
                            const std::vector<uint32_t>& starts) {
  if (!is_type(e.kind)) {
    auto [a, b] = own_lines(e, source, starts);
    return std::string(source.substr(a, b - a));
  }
  std::string out = entity_signature_block(e);
  for (const Entity* m : children) {
    out += "\n    ";
    if (m->kind == EntityKind::attribute || m->kind == EntityKind::field) {
      auto text = source.substr(std::min<size_t>(m->start_byte, source.size()),
                                std::min<size_t>(m->end_byte - m->start_byte, 200));
      out.append(text.substr(0, text.find('\n')));
    } else {
      out += m->signature;
    }
  }
  return out;
}

EntityTerms entity_term_vectors(const ParsedFile& pf, std::string_view source, const std::vector<uint32_t>& starts) {
  EntityTerms out;
  const auto& ents = pf.entities;
  std::vector<std::vector<const Entity*>> children(ents.size());
  for (const auto& m : ents)
    if (m.parent >= 0 && static_cast<size_t>(m.parent) < ents.size() && is_type(ents[m.parent].kind))
      children[m.parent].push_back(&m);
  size_t budget = kEntityDocumentBudget * source.size() + (1u << 20), used = 0;
  out.terms.reserve(ents.size());
  for (size_t i = 0; i < ents.size(); ++i) {
    if ((i & 255) == 0 && interrupted()) break;
    const Entity& e = ents[i];
    size_t size = 0;
    if (is_type(e.kind)) {
      for (const Entity* m : children[i]) size += m->signature.size() + 200;
    } else {
      auto [a, b] = own_lines(e, source, starts);
      size = b - a;
    }
    if (used + size > budget) {
      ++out.shortened;
      out.terms.push_back(term_vector(e.name + "\n" + entity_signature_block(e)));
      continue;
    }
    used += size;
    out.terms.push_back(term_vector(entity_document(e, children[i], source, starts)));
  }
  return out;
}

}  // namespace repoctx
