#include "server/mcp_server.h"

#include <fmt/core.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <memory>
#include <set>

#include "api/json.h"
#include "retrieve/retriever.h"
#include "server/warmer.h"
#include "server/watcher.h"
#include "util/cancel.h"
#include "util/error.h"
#include "util/log.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace repoctx {

namespace {

// JSON-RPC 2.0 error codes (and MCP's use of the server range for "not initialized").
constexpr int kParseError = -32700, kInvalidRequest = -32600, kMethodNotFound = -32601, kInvalidParams = -32602,
              kInternalError = -32603, kNotInitialized = -32002;

struct RpcError : std::runtime_error {
  int code;
  RpcError(int c, const std::string& m) : std::runtime_error(m), code(c) {}
};

const std::vector<std::string> kKnownVersions = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};

std::string dump_json(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

json error_message(const json& id, int code, const std::string& message) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}};
}

std::string too_large(size_t limit) {
  return dump_json(error_message(nullptr, kInvalidRequest,
                                 fmt::format("Invalid Request: message larger than {} bytes; it is skipped", limit)));
}

json text_result(const std::string& text, const json& structured = nullptr, bool is_error = false) {
  json r = {{"content", json::array({{{"type", "text"}, {"text", text}}})}};
  if (!structured.is_null()) r["structuredContent"] = structured;
  if (is_error) r["isError"] = true;
  return r;
}

// What an agent reads: one line per hit, its text below when asked for.
std::string retrieve_text(const api::RetrieveResult& r) {
  std::string out;
  if (!r.target.empty()) out += "target: " + r.target + "\n";
  for (const auto& h : r.hits) {
    std::string name = h.qualname.empty() ? h.type : h.qualname;
    out += fmt::format("{:>3}. {:8.4f}  {}:{}-{}  {}{}\n", h.rank, h.score, h.file, h.start_line, h.end_line, name,
                       h.label.empty() ? "" : " [" + h.label + "]");
    if (!h.description.empty()) out += "       " + h.description + "\n";
    if (!h.text.empty()) out += h.text + (h.text.back() == '\n' ? "" : "\n") + "\n";
  }
  for (const auto& s : r.plan)
    out += fmt::format("step {}{}: {}\n", s.step, s.confirmed ? " (confirmed)" : "", s.description);
  if (r.hits.empty()) out += "no results\n";
  return out;
}

std::string localize_text(const api::LocalizeResult& r) {
  std::string out = fmt::format("{}: {} ranges, {} tokens, stopped: {}\n", r.strategy, r.hits.size(), r.context_tokens,
                                r.stop_reason.empty() ? "-" : r.stop_reason);
  for (const auto& h : r.hits) {
    out += fmt::format("{:>3}. {:8.4f}  {}:{}-{}{}\n", h.rank, h.score, h.file, h.start_line, h.end_line,
                       h.qualname.empty() ? "" : "  " + h.qualname);
    if (!h.text.empty()) out += h.text + (h.text.back() == '\n' ? "" : "\n") + "\n";
  }
  return out;
}

std::string symbols_text(const std::vector<api::Symbol>& v) {
  std::string out;
  for (const auto& s : v)
    out += fmt::format("{}:{}-{}  {:<9} {}\n", s.file, s.start_line, s.end_line, s.kind, s.qualname);
  return out.empty() ? "no symbols\n" : out;
}

json tool(const std::string& name, const std::string& title, const std::string& description, json schema) {
  return {{"name", name},
          {"title", title},
          {"description", description},
          {"inputSchema", std::move(schema)},
          {"annotations", {{"readOnlyHint", name != "refresh"}, {"openWorldHint", false}}}};
}

std::string type_of(const json& v) {
  if (v.is_string()) return "string";
  if (v.is_boolean()) return "boolean";
  if (v.is_number_integer() || v.is_number_unsigned()) return "integer";
  if (v.is_number()) return "number";
  if (v.is_object()) return "object";
  if (v.is_array()) return "array";
  return "null";
}

bool has_type(const json& v, const json& type) {
  if (type.is_array()) return std::any_of(type.begin(), type.end(), [&](const json& t) { return has_type(v, t); });
  std::string t = type.get<std::string>(), got = type_of(v);
  if (t == got) return true;
  if (t == "number" && got == "integer") return true;
  // 10.0 is an integer to a JSON Schema validator (and to JavaScript clients, which have one number type).
  return t == "integer" && got == "number" && std::floor(v.get<double>()) == v.get<double>();
}

// Checks `v` against the subset of JSON Schema the tools' input schemas use (type, enum, minimum, maximum,
// properties, required, additionalProperties), so that a call is held to exactly what tools/list announced.
// Throws Error(usage) naming the first mismatch.
void check_schema(const json& v, const json& schema, const std::string& where) {
  auto bad = [&](const std::string& what) { return Error(ExitCode::usage, where + " " + what); };
  if (schema.contains("type") && !has_type(v, schema["type"]))
    throw bad("must be of type " + schema["type"].dump() + ", got " + type_of(v));
  if (schema.contains("enum") && std::find(schema["enum"].begin(), schema["enum"].end(), v) == schema["enum"].end())
    throw bad("is " + v.dump() + "; valid values: " + schema["enum"].dump());
  if (v.is_number()) {
    double d = v.get<double>();
    if (schema.contains("minimum") && d < schema["minimum"].get<double>())
      throw bad("must be at least " + schema["minimum"].dump());
    if (schema.contains("maximum") && d > schema["maximum"].get<double>())
      throw bad("must be at most " + schema["maximum"].dump());
  }
  if (!v.is_object()) return;
  const json& props = schema.contains("properties") ? schema["properties"] : json::object();
  for (const auto& [k, x] : v.items()) {
    std::string field = "field '" + k + "'";
    if (props.contains(k)) {
      check_schema(x, props[k], field);
    } else if (schema.contains("additionalProperties")) {
      const json& extra = schema["additionalProperties"];
      if (extra.is_boolean() && !extra.get<bool>()) {
        std::string names;
        for (const auto& [name, s] : props.items()) names += (names.empty() ? "" : ", ") + name;
        throw Error(ExitCode::usage, "unknown " + field + "; valid fields: " + names);
      }
      if (extra.is_object()) check_schema(x, extra, where + " " + field);
    }
  }
  if (schema.contains("required"))
    for (const auto& r : schema["required"])
      if (!v.contains(r.get<std::string>())) throw bad("needs field '" + r.get<std::string>() + "'");
}

}  // namespace

void LineReader::feed(std::string_view bytes, const std::function<void(std::string_view)>& on_line,
                      const std::function<void()>& on_too_long) {
  while (!bytes.empty()) {
    size_t nl = bytes.find('\n');
    std::string_view part = bytes.substr(0, nl);
    if (!discarding_ && buf_.size() + part.size() > max_ + 1) {  // + 1: a CR before the LF is not counted
      discarding_ = true;  // too long already: report it once, drop its bytes until its end
      buf_.clear();
      on_too_long();
    }
    if (!discarding_) buf_.append(part);
    if (nl == std::string_view::npos) return;
    bytes.remove_prefix(nl + 1);
    if (discarding_) {
      discarding_ = false;
      continue;
    }
    std::string line = std::move(buf_);
    buf_.clear();
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.size() > max_)
      on_too_long();
    else
      on_line(line);
  }
}

McpServer::McpServer(api::Index& index, McpOptions opt) : index_(index), opt_(opt) {
  has_llm_ = index_.has_llm();
  tools_ = tools();
}

json McpServer::tools() const {
  json t = json::array();
  json retrieve = api::params_schema(api::retrieve_fields(), {}, {"trace"});
  retrieve["properties"]["structural_model"]["enum"] = opt_.models.structural_names();
  retrieve["properties"]["structural_model"]["description"] =
      "structural: the ranking model, by the names this server loaded at start (builtin = the shipped one)";
  retrieve["properties"]["model_file"]["enum"] = opt_.models.aligncoder_names();
  retrieve["properties"]["model_file"]["description"] =
      "aligncoder, rlcoder: the AlignRetriever model, by the names this server loaded at start (builtin = the "
      "built-in one, untrained = the ablation without training)";
  retrieve["properties"]["locate_model"]["enum"] = json::array({"builtin"});
  retrieve["properties"]["locate_model"]["description"] = "locate: the model (a server serves the built-in one)";
  // Only the strategies this server can run: those needing a model are listed when one is configured.
  json usable = json::array();
  for (const auto& r : retriever_registry())
    if (r.name != "procedural" && (has_llm_ || !(r.needs.llm || r.needs.hidden || r.needs.embedder)))
      usable.push_back(r.name);
  retrieve["properties"]["strategy"]["enum"] = usable;
  t.push_back(tool("retrieve", "Retrieve code context",
                   "Ranked functions, classes and snippets of the repository relevant to a target function (its "
                   "body treated as absent: what is needed to write it) or to a free-text query. Give \"target\" "
                   "(path/to/file.py::Qualified.name) or \"query\". Strategies: sparse (BM25), structural (scope, "
                   "imports and usage), imports, same-file, aligncoder-snippets, ...",
                   retrieve));
  if (has_llm_) {
    std::set<std::string> omit;
    for (const auto& f : api::retrieve_fields())
      if (f.name != "target" && f.name != "k" && f.name != "params" && f.name != "with_text") omit.insert(f.name);
    omit.insert("trace");
    t.push_back(tool("procedural", "Procedural retrieval (ProjAgent)",
                     "Slow (many model calls): decomposes the target function into steps and finds, for each, the "
                     "repository functions implementing similar steps, with an agent exploring the repository. "
                     "Returns the plan and the context for each step.",
                     api::params_schema(api::retrieve_fields(), {"target"}, omit)));
  }
  json localize = api::params_schema(api::localize_fields(), {"request"}, {"trace"});
  localize["properties"]["locate_model"]["enum"] = json::array({"builtin"});
  localize["properties"]["locate_model"]["description"] = "locate: the model (a server serves the built-in one)";
  json usable_localize = json::array();
  for (const auto& r : retriever_registry())
    if (r.localizes && (has_llm_ || !r.needs.any())) usable_localize.push_back(r.name);
  localize["properties"]["strategy"]["enum"] = usable_localize;
  t.push_back(tool("localize", "Localize a change request",
                   "The line ranges of the repository that a change request (an issue text or a commit message) "
                   "needs, as the context-retrieval study gathers them: study-bm25 (BM25 over 512-character "
                   "chunks until 500 tokens) without a model, ReAct agents and AutoCodeRover with one.",
                   localize));
  t.push_back(tool("symbols", "List definitions",
                   "Definitions (classes, functions, methods, variables) of the repository with their files and "
                   "lines, filtered by kind, file or a part of the qualified name.",
                   api::params_schema(api::symbols_fields())));
  t.push_back(tool("read_file", "Read lines of a file",
                   "Numbered lines of a file of the repository (paths relative to its root; nothing outside the "
                   "repository can be read).",
                   api::params_schema(api::read_fields(), {"path"})));
  t.push_back(tool("grep", "Search the repository",
                   "Lines matching an RE2 regular expression (or a literal with fixed) in the repository's source "
                   "files, as path:line: text, bounded.",
                   api::params_schema(api::grep_fields(), {"pattern"})));
  t.push_back(tool(
      "refresh", "Refresh the index",
      "Re-indexes the files that changed since the index was loaded (the server also does so when it "
      "sees files change).",
      {{"type", "object"},
       {"properties", {{"force", {{"type", "boolean"}, {"default", false}, {"description", "re-parse every file"}}}}},
       {"additionalProperties", false}}));
  return t;
}

json McpServer::call_tool(const std::string& name, const json& args) {
  for (const auto& t : tools_)
    if (t["name"] == name) check_schema(args, t["inputSchema"], "the arguments of " + name + ":");
  if (name == "retrieve" || (name == "procedural" && has_llm_)) {
    auto p = api::params_from_json(args, api::retrieve_fields());
    opt_.models.resolve(p);
    if (name == "procedural") p.strategy = "procedural";
    api::RetrieveResult r = index_.retrieve(p);
    return text_result(retrieve_text(r), api::to_json(r));
  }
  if (name == "localize") {
    auto p = api::params_from_json(args, api::localize_fields());
    opt_.models.resolve(p);
    api::LocalizeResult r = index_.localize(p);
    return text_result(localize_text(r), api::to_json(r));
  }
  if (name == "symbols") {
    auto v = index_.symbols(api::params_from_json(args, api::symbols_fields()));
    return text_result(symbols_text(v), json{{"symbols", api::to_json(v)}});
  }
  if (name == "read_file") return text_result(index_.read(api::params_from_json(args, api::read_fields())).text);
  if (name == "grep") return text_result(index_.grep(api::params_from_json(args, api::grep_fields())).text);
  if (name == "refresh") {
    for (const auto& [k, v] : args.items())
      if (k != "force" || !v.is_boolean()) throw Error(ExitCode::usage, "refresh takes only \"force\" (true/false)");
    api::RefreshStats st = index_.refresh(args.value("force", false));
    return text_result(fmt::format("{} files, {} re-parsed, {} removed{}", st.files, st.parsed, st.removed,
                                   st.reloaded ? "; the new index serves" : ""),
                       api::to_json(st));
  }
  std::string names;
  for (const auto& t : tools_) names += (names.empty() ? "" : ", ") + t["name"].get<std::string>();
  throw RpcError(kInvalidParams, "Unknown tool: " + name + " (tools: " + names + ")");
}

json McpServer::dispatch(const std::string& method, const json& params) {
  if (method == "ping") return json::object();
  if (method == "initialize") {
    if (!params.is_object() || !params.contains("protocolVersion") || !params["protocolVersion"].is_string())
      throw RpcError(kInvalidParams, "initialize needs params.protocolVersion (a string such as \"" +
                                         std::string(kMcpProtocolVersion) + "\")");
    std::string asked = params["protocolVersion"].get<std::string>();
    bool known = std::find(kKnownVersions.begin(), kKnownVersions.end(), asked) != kKnownVersions.end();
    protocol_ = known ? asked : kMcpProtocolVersion;
    initialized_ = true;
    return {{"protocolVersion", protocol_},
            {"capabilities", {{"tools", {{"listChanged", false}}}}},
            {"serverInfo", {{"name", "repoctx"}, {"title", "repoctx code context"}, {"version", "0.1.0"}}},
            {"instructions",
             "repoctx indexes one repository and retrieves the code context needed to write or change a function. "
             "Use retrieve with a target (path/to/file.py::Qualified.name) or a query, then read_file or grep to "
             "look closer."}};
  }
  if (!initialized_) throw RpcError(kNotInitialized, "the server is not initialized: send initialize first");
  if (method == "tools/list") return {{"tools", tools_}};
  if (method == "tools/call") {
    if (!params.is_object() || !params.contains("name") || !params["name"].is_string())
      throw RpcError(kInvalidParams, "tools/call needs params.name (a string)");
    json args = params.value("arguments", json::object());
    if (args.is_null()) args = json::object();
    if (!args.is_object()) throw RpcError(kInvalidParams, "tools/call params.arguments must be an object");
    std::string name = params["name"].get<std::string>();
    try {
      return call_tool(name, args);
    } catch (const RpcError&) {
      throw;
    } catch (const Error& e) {
      if (e.code() == ExitCode::interrupted) throw RpcError(kInternalError, e.what());
      return text_result(std::string("error: ") + e.what(), nullptr, true);  // the model can correct itself
    }
  }
  throw RpcError(kMethodNotFound, "Method not found: " + method);
}

std::string McpServer::handle(const std::string& line) {
  json msg;
  try {
    msg = api::parse_request_json(line);
  } catch (const Error& e) {
    return dump_json(error_message(nullptr, kParseError, std::string("Parse error: the message is ") + e.what()));
  }
  if (msg.is_array())
    return dump_json(error_message(
        nullptr, kInvalidRequest,
        "Invalid Request: batches are not part of MCP (2025-06-18 and later); send one message per line"));
  if (!msg.is_object()) return dump_json(error_message(nullptr, kInvalidRequest, "Invalid Request: not a JSON object"));
  bool has_id = msg.contains("id");
  json id = has_id ? msg["id"] : json(nullptr);
  if (has_id && !id.is_string() && !id.is_number_integer())
    return dump_json(error_message(nullptr, kInvalidRequest, "Invalid Request: id must be a string or an integer"));
  if (msg.value("jsonrpc", json()) != "2.0")
    return dump_json(error_message(id, kInvalidRequest, "Invalid Request: \"jsonrpc\" must be \"2.0\""));
  if (!msg.contains("method") || !msg["method"].is_string()) {
    if (msg.contains("result") || msg.contains("error")) return "";  // a response: this server sends no requests
    return dump_json(error_message(id, kInvalidRequest, "Invalid Request: \"method\" must be a string"));
  }
  std::string method = msg["method"].get<std::string>();
  json params = msg.value("params", json::object());
  if (!has_id) return "";  // notifications (initialized, cancelled, ...) need no answer
  try {
    return dump_json({{"jsonrpc", "2.0"}, {"id", id}, {"result", dispatch(method, params)}});
  } catch (const RpcError& e) {
    return dump_json(error_message(id, e.code, e.what()));
  } catch (const std::exception& e) {
    return dump_json(error_message(id, kInternalError, std::string("Internal error: ") + e.what()));
  }
}

int McpServer::serve(int in_fd, std::FILE* out) {
  std::unique_ptr<RepoWatcher> watcher;
  if (opt_.watch) {
    api::IndexInfo info = index_.info();
    watcher = std::make_unique<RepoWatcher>(
        info.root, std::vector<std::string>{fs::path(info.db).parent_path().string()}, WatchOptions{}, [this] {
          try {
            index_.refresh();
          } catch (const std::exception& e) {
            log_warn("refresh failed: {}", e.what());
          }
        });
  }
  std::unique_ptr<IndexWarmer> warmer;
  if (opt_.warm)
    warmer = std::make_unique<IndexWarmer>(std::vector<IndexWarmer::Source>{
        {fs::path(index_.info().root).filename().string(), [this]() -> const api::Index* { return &index_; }}});
  // A client that goes away mid-request closes the pipe we answer on: the write fails (EPIPE, not a signal
  // that would kill the server) and the server ends as at end of input.
  std::signal(SIGPIPE, SIG_IGN);
  bool gone = false;
  auto answer = [&](const std::string& a) {
    if (a.empty() || gone) return;
    std::fputs(a.c_str(), out);
    std::fputc('\n', out);
    if (std::fflush(out) != 0 || std::ferror(out)) gone = true;
  };
  LineReader reader(opt_.max_message_bytes);
  char chunk[65536];
  bool eof = false;
  while (!interrupted() && !gone) {
    pollfd p{in_fd, POLLIN, 0};
    int r = poll(&p, 1, 200);
    if (r < 0 && errno != EINTR) break;
    if (r <= 0) continue;
    ssize_t n = read(in_fd, chunk, sizeof chunk);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) {  // end of input: the client is gone
      eof = true;
      break;
    }
    reader.feed(
        std::string_view(chunk, static_cast<size_t>(n)),
        [&](std::string_view line) {
          if (line.find_first_not_of(" \t") != std::string_view::npos) answer(handle(std::string(line)));
        },
        [&] { answer(too_large(opt_.max_message_bytes)); });
  }
  if (eof && reader.rest().find_first_not_of(" \t\r") != std::string_view::npos)
    answer(handle(std::string(reader.rest())));
  return 0;
}

}  // namespace repoctx
