// `repoctx mcp`: a Model Context Protocol server over stdio (JSON-RPC 2.0, one message per line, protocol
// revision 2025-11-25; older revisions the client asks for are accepted when known).
//
// Methods: initialize, notifications/initialized, ping, tools/list, tools/call (other notifications are
// ignored). Tools, on the public API (include/repoctx/repoctx.h) with its parameter tables as input
// schemas: retrieve, symbols, read_file, grep, refresh, and procedural when a model is configured.
// Protocol errors are JSON-RPC errors (-32700 parse error, -32600 invalid request or a message over the
// size limit, -32601 unknown method, -32602 unknown tool or bad params, -32002 before initialize); a
// tool that fails (a target not found, a path outside the repository, bad arguments) answers a result with
// isError = true and the message, so that the model can correct itself. Requests are answered in order.
// Ends at end of input, or on SIGINT/SIGTERM; returns 0.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "repoctx/repoctx.h"

namespace repoctx {

struct McpOptions {
  size_t max_message_bytes = 4 << 20;  // a longer line is refused with -32600 and skipped
  bool watch = true;                   // refresh the index when its files change
  bool warm = true;                    // warm each snapshot in the background (server/warmer.h)
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
  std::string protocol_ = kMcpProtocolVersion;
};

}  // namespace repoctx
