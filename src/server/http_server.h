// `repoctx serve`: an HTTP JSON API over warm indexes, one per repository, loaded once (cpp-httplib).
//
//   GET  /v1/health /v1/repos /v1/strategies /v1/cache/stats
//   POST /v1/retrieve /v1/symbols /v1/files /v1/snippets /v1/read /v1/grep /v1/generate /v1/refresh (/v1/index)
//
// POST bodies are JSON objects holding the public API's parameters (include/repoctx/repoctx.h, api/json.h)
// plus "repo" (the served repository's name; optional when one is served). Every failure answers a JSON
// {"error": {"status", "code", "message"}} with a fitting HTTP status: 400 bad request or parameters,
// 401 missing/wrong bearer token, 404 unknown endpoint/repository/file/target, 405 wrong method, 413 body
// too large, 502 model backend failed, 503 shutting down or too many long requests, 504 past the request
// time limit, 500 anything else.
//
// Connections are handled by server/http_transport.h: an event loop reads each request whole, within
// deadlines and size limits, before a worker thread sees it. Before a body is read, a request must name this
// server in Host (loopback names by default: a web page the developer visits cannot reach it through DNS
// rebinding), carry no Origin that was not allowed (browsers announce cross-site requests so), carry the
// bearer token when one is set, name a known endpoint with its method, and POST with Content-Type
// application/json (a type no cross-site form or simple request can send): else 400/403/401/404/405/415
// without reading on. JSON nested deeper than api::kMaxRequestDepth answers 400. Clients choose models by
// the names the server loaded at start (server/request_policy.h), never by path.
//
// Operations that use a model (and refreshes) run on their own thread so that a request past its time limit
// can be answered (504) while its work finishes in the background (its LLM results are cached: a retry
// resumes). A failed request or refresh answers an error and leaves the server serving. A watcher (inotify,
// else polling) refreshes each index when its files change; a refresh swaps in a new snapshot, so readers
// never see a half-updated index. SIGINT/SIGTERM: stop accepting, finish the requests in flight, return 0.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "repoctx/repoctx.h"
#include "server/http_transport.h"
#include "server/request_policy.h"
#include "server/watcher.h"

namespace repoctx {

struct ServeOptions {
  std::string host = "127.0.0.1";
  int port = 8765;                 // 0 = any free port (announced on stderr and in ready_file)
  std::string token;               // bearer token required on every request; empty = none
  HttpLimits limits;               // connections, deadlines, sizes, worker threads (0 threads = max(8, 2 x cores))
  double request_timeout_s = 300;  // a model operation or refresh answers 504 after this
  int max_background = 4;          // long operations running at once; more answer 503
  std::vector<std::string> allow_hosts;    // Host names accepted besides the loopback names and --host
  std::vector<std::string> allow_origins;  // Origin values accepted (none by default)
  ServerModels models;                     // the models requests may choose, by name
  bool watch = true;                       // refresh each index when its files change
  WatchOptions watch_opt;
  bool warm = true;        // after each load, build the per-file facts LLM-free requests read (api::Index::warm)
  std::string ready_file;  // written ({"host", "port", "pid"}) once the server accepts connections
};

struct ServedRepo {
  std::string name;                                   // how requests name it ("repo")
  std::string root;                                   // its path (what health shows while it loads)
  std::unique_ptr<api::Index> index;                  // loaded already, or null and:
  std::function<std::unique_ptr<api::Index>()> load;  // run on its own thread once the server listens
  bool first_build = false;  // `load` builds the index from scratch: one such load runs at a time
};

// Listens first, then loads each repository that is not loaded yet on its own thread (first builds one at a
// time: each parses on every core, so side by side they would only add their peak memory): until it has, its
// requests answer 503 "loading" (Retry-After: 1) and health says "state": "loading", then "ready" (or
// "failed" with the error, and its requests 503 "load_failed"). Serves until SIGINT/SIGTERM (util/cancel.h),
// then finishes the requests in flight and returns 0. Throws Error(usage) when the address cannot be bound,
// and the load's error when no repository could be loaded.
int serve_http(std::vector<ServedRepo> repos, const ServeOptions& opt);

// A server's whole request path in memory, without sockets: the bytes of one request in, the bytes of its
// answer out, through the same parser, limits, admission checks and handlers as `serve` (for fuzzing and
// tests). Empty when the bytes are not a whole request.
class HttpExchange {
 public:
  HttpExchange(std::vector<ServedRepo> repos, const ServeOptions& opt);
  ~HttpExchange();
  std::string answer(std::string_view raw);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace repoctx
