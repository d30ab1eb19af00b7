// `repoctx serve`'s whole request path driven by arbitrary bytes: the HTTP parser with the server's limits,
// the admission checks made on the head (Host, Origin, route, method, content type), the bounded JSON
// parser, parameter validation, model-name resolution and every endpoint on a real index. Checked: no
// crash, every answer a well-formed HTTP response whose body is a JSON document, the outside marker never
// shown.
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzz_repo.h"
#include "server/http_server.h"

using namespace repoctx;

namespace {

HttpExchange* exchange = nullptr;

[[noreturn]] void violated(const char* what, std::string_view answer) {
  std::fprintf(stderr, "invariant violated: %s\n%.*s\n", what, static_cast<int>(std::min<size_t>(answer.size(), 600)),
               answer.data());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  auto root = fuzz::make_fuzz_repo("repoctx-fuzz-http");
  api::OpenParams op;
  op.index.db = (root / "index.db").string();
  op.index.threads = 1;
  std::vector<ServedRepo> repos;
  repos.push_back(
      {"repo", (root / "repo").string(), std::make_unique<api::Index>((root / "repo").string(), op), nullptr, false});
  ServeOptions opt;
  opt.watch = false;
  opt.warm = false;
  opt.limits.threads = 1;
  opt.limits.max_body_bytes = 4096;
  opt.limits.max_header_bytes = 2048;
  opt.request_timeout_s = 5;
  exchange = new HttpExchange(std::move(repos), opt);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view raw(reinterpret_cast<const char*>(data), size);
  std::string answer = exchange->answer(raw);
  if (answer.empty()) return 0;  // not a whole request: a connection would wait for more
  if (answer.rfind("HTTP/1.", 0) != 0) violated("an answer starts with the status line", answer);
  auto end = answer.find("\r\n\r\n");
  if (end == std::string::npos) violated("an answer has a head and a body", answer);
  auto body = nlohmann::json::parse(answer.substr(end + 4), nullptr, false);
  if (body.is_discarded()) violated("an answer's body is JSON", answer);
  int status = std::atoi(answer.c_str() + 9);
  if (status >= 400 && !(body.is_object() && body.contains("error"))) violated("an error answer says why", answer);
  if (fuzz::shows_outside_secret(raw, answer)) violated("nothing outside the repository", answer);
  return 0;
}
