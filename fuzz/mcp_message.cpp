// `repoctx mcp`'s message path driven by arbitrary bytes: line framing with the size limit, the bounded
// JSON parser, JSON-RPC validation, method dispatch, tool arguments checked against the announced schemas,
// model-name resolution and every tool on a real index. Checked: no crash, one JSON-RPC 2.0 answer (a
// result or an error) per request line and none for notifications, the outside marker never shown.
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "fuzz_repo.h"
#include "server/mcp_server.h"

using namespace repoctx;

namespace {

api::Index* index_ptr = nullptr;
McpServer* server = nullptr;

[[noreturn]] void violated(const char* what, const std::string& text) {
  std::fprintf(stderr, "invariant violated: %s\n%.600s\n", what, text.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  auto root = fuzz::make_fuzz_repo("repoctx-fuzz-mcp");
  api::OpenParams op;
  op.index.db = (root / "index.db").string();
  op.index.threads = 1;
  index_ptr = new api::Index((root / "repo").string(), op);
  McpOptions opt;
  opt.max_message_bytes = 4096;
  opt.watch = false;
  opt.warm = false;
  server = new McpServer(*index_ptr, opt);
  server->handle(R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25"}})");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  LineReader reader(4096);
  std::string_view input(reinterpret_cast<const char*>(data), size);
  auto check = [&](const std::string& answer) {
    if (answer.empty()) return;  // a notification or a response: nothing to answer
    auto j = nlohmann::json::parse(answer, nullptr, false);
    if (j.is_discarded() || !j.is_object() || j.value("jsonrpc", "") != "2.0")
      violated("an answer is a JSON-RPC 2.0 message", answer);
    if (j.contains("result") == j.contains("error")) violated("an answer holds a result or an error", answer);
    if (fuzz::shows_outside_secret(input, answer)) violated("nothing outside the repository", answer);
  };
  reader.feed(
      input, [&](std::string_view line) { check(server->handle(std::string(line))); }, [&] {});
  if (!reader.rest().empty()) check(server->handle(std::string(reader.rest())));
  return 0;
}
