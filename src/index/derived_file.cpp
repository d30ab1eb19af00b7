#include "index/derived_file.h"

#include <cstdint>
#include <cstring>

#include "index/query_image.h"
#include "util/file_io.h"
#include "util/hash.h"
#include "util/log.h"

namespace repoctx {

namespace {

// Layout: magic, then the version, the image token and the payload's checksum (each a u32 length and its
// bytes, native byte order like the image beside it), then the payload to the end of the file.
constexpr std::string_view kDerivedMagic = "RCTXDRV1";

const std::string* derived_image_token(const RepoView& view) {
  return view.image() && !view.db_path().empty() ? &view.image()->token() : nullptr;
}

void put_field(std::string& out, std::string_view s) {
  const auto n = static_cast<uint32_t>(s.size());
  out.append(reinterpret_cast<const char*>(&n), sizeof n);
  out.append(s);
}

bool take_field(std::string_view& in, std::string_view& out) {
  uint32_t n = 0;
  if (in.size() < sizeof n) return false;
  std::memcpy(&n, in.data(), sizeof n);
  in.remove_prefix(sizeof n);
  if (in.size() < n) return false;
  out = in.substr(0, n);
  in.remove_prefix(n);
  return true;
}

}  // namespace

std::optional<std::string> read_derived_file(const RepoView& view, const std::string& name, std::string_view version) {
  const std::string* token = derived_image_token(view);
  if (!token) return std::nullopt;
  const std::string path = view.db_path() + "-" + name;
  auto bytes = read_file_if_present(path);
  if (!bytes) return std::nullopt;
  std::string_view in = *bytes, stored_version, stored_token, checksum;
  if (in.substr(0, kDerivedMagic.size()) == kDerivedMagic) {
    in.remove_prefix(kDerivedMagic.size());
    if (take_field(in, stored_version) && stored_version == version && take_field(in, stored_token) &&
        stored_token == *token && take_field(in, checksum) && checksum == content_hash(in))
      return std::string(in);
  }
  log_debug("{}: derived from another index, build or damaged; deriving it again", path);
  return std::nullopt;
}

void write_derived_file(const RepoView& view, const std::string& name, std::string_view version,
                        std::string_view payload) {
  const std::string* token = derived_image_token(view);
  if (!token) return;
  std::string out(kDerivedMagic);
  put_field(out, version);
  put_field(out, *token);
  put_field(out, content_hash(payload));
  out.append(payload);
  const std::string path = view.db_path() + "-" + name;
  if (write_file_atomically(path, out)) return;
  log_debug("{}: cannot keep it there; the next process derives it again", path);
}

}  // namespace repoctx
