// `repoctx mcp`: a Model Context Protocol server over stdio (JSON-RPC 2.0, one message per line, protocol
// revision 2025-11-25; older revisions the client asks for are accepted when known).
//
// Methods: initialize, notifications/initialized, ping, tools/list, tools/call (other notifications are
// ignored). Tools, on the public API (include/repoctx/repoctx.h) with its parameter tables as input
// schemas: retrieve, symbols, read_file, grep, refresh, and procedural when a model is configured.
// Every message is checked before it is built: its size (max_message_bytes), its JSON nesting
// (api::kMaxRequestDepth); a tool's arguments must match the input schema tools/list announced (fields,
// types, ranges, enums), and models are chosen by the names the server loaded at start, never by path
// (server/request_policy.h). A failed tool call or refresh answers an error and the server goes on.
// Protocol errors are JSON-RPC errors (-32700 parse error or JSON nested too deeply, -32600 invalid request
// or a message over the size limit, -32601 unknown method, -32602 unknown tool or bad params, -32002 before
// initialize); a tool that fails (a target not found, a path outside the repository, bad arguments) answers a result
// with isError = true and the message, so that the model can correct itself. Requests are answered in order. Ends at
// end of input, or on SIGINT/SIGTERM; returns 0.
#pragma once

#include <cstddef>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "repoctx/repoctx.h"
#include "server/request_policy.h"

namespace repoctx {

struct McpOptions {
  size_t max_message_bytes = 4 << 20;  // a longer line is refused with -32600 and skipped
  bool watch = true;                   // refresh the index when its files change
  bool warm = true;                    // warm each snapshot in the background (server/warmer.h)
  ServerModels models;                 // the models tool calls may choose, by name
};

// Splits a byte stream into lines (messages), each at most `max_bytes`: a longer line is reported once as
// too long and its bytes are dropped as they arrive, so that no line is ever held beyond the limit.
class LineReader {
 public:
  explicit LineReader(size_t max_bytes) : max_(max_bytes) {}
  // Appends bytes; calls on_line(line) for each complete line (CR LF and LF ends; the end removed) and
  // on_too_long() once for each line over the limit.
  void feed(std::string_view bytes, const std::function<void(std::string_view)>& on_line,
            const std::function<void()>& on_too_long);
  // What is left at end of input (a last line without its end), unless it was too long.
  std::string_view rest() const { return discarding_ ? std::string_view() : std::string_view(buf_); }

 private:
  size_t max_;
  std::string buf_;
  bool discarding_ = false;  // inside a line longer than the limit
};

inline constexpr const char* kMcpProtocolVersion = "2025-11-25";

class McpServer {
 public:
  McpServer(api::Index& index, McpOptions opt = {});
  // The answer to one message (a JSON text); empty for notifications. Never throws.
  std::string handle(const std::string& line);
  // Reads messages from `in_fd` and writes answers to `out` until end of input or cancellation.
  int serve(int in_fd, std::FILE* out);

 private:
  nlohmann::json dispatch(const std::string& method, const nlohmann::json& params);
  nlohmann::json tools() const;
  nlohmann::json call_tool(const std::string& name, const nlohmann::json& args);

  api::Index& index_;
  McpOptions opt_;
  bool initialized_ = false;
  bool has_llm_ = false;
  nlohmann::json tools_;  // tools/list's answer, made once
  std::string protocol_ = kMcpProtocolVersion;
};

}  // namespace repoctx
