// The HTTP/1.1 transport of `repoctx serve`: connections on one event loop (Boost.Beast over Asio), complete
// requests handed to a pool of worker threads. A connection holds no worker until its request has arrived
// whole, so slow, idle or half-sent clients cost a socket, not a thread:
//
//   accept -> read the head (deadline, size limit) -> admit(head): host, origin, token, route, content type,
//   answered and closed without reading the body when refused -> read the body (deadline, size limit for
//   Content-Length and chunked bodies alike) -> handle(request) on a worker -> write (deadline) -> next.
//
// Connections are bounded in total and per client address. When a new connection would pass a bound, the
// connection of that scope that has waited longest without a complete request is closed to make room (an
// attacker's idle sockets cannot lock out a client that sends its request at once); when every connection
// of the scope is running a request, the new one is closed. Requests queued or running on the workers are
// bounded too: past the bound a request is answered 503 at once.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace repoctx {

struct HttpLimits {
  size_t max_header_bytes = 16 * 1024;  // request line and headers
  size_t max_body_bytes = 1 << 20;
  double header_timeout_s = 10;  // the head must arrive within this of the connection (or the last answer)
  double body_timeout_s = 30;    // the body must arrive within this of the head
  double write_timeout_s = 30;   // a client must take its answer within this
  int max_connections = 512;
  int max_connections_per_client = 256;  // per remote address
  int max_pending = 64;                  // requests queued or running on the workers; more answer 503
  int threads = 8;                       // worker threads
};

// The request line and headers, as admit() sees them before any body byte is read.
struct HttpHead {
  std::string method;                                        // "GET", "POST", ...
  std::string target;                                        // as sent: path and query
  std::string path;                                          // target without the query
  std::map<std::string, std::string> query;                  // percent-decoded; a repeated name keeps its last value
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased, in order
  bool has_body = false;                                     // Content-Length > 0 or chunked
  // The first header of this (lower-case) name, or empty.
  std::string header(std::string_view name) const;
  bool has_header(std::string_view name) const;
};

struct HttpRequest {
  HttpHead head;
  std::string body;
  std::string client;  // remote address
};

struct HttpResponse {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;
};

struct HttpHandlers {
  // Runs on the event loop before the body is read: cheap checks only. A response refuses the request
  // (it is sent, and the connection closed, without reading the body); nullopt admits it.
  std::function<std::optional<HttpResponse>(const HttpHead&)> admit;
  // Runs on a worker with the whole request. Exceptions become 500 answers.
  std::function<HttpResponse(const HttpRequest&)> handle;
  // The answer for a failure the transport detects itself (malformed request, too large, busy, ...).
  std::function<HttpResponse(int status, const std::string& code, const std::string& message)> error;
};

class HttpTransport {
 public:
  HttpTransport(HttpLimits limits, HttpHandlers handlers);
  ~HttpTransport();
  HttpTransport(const HttpTransport&) = delete;
  HttpTransport& operator=(const HttpTransport&) = delete;

  // Binds host:port (port 0 = any free port) and returns the port bound. Throws Error(usage) when the
  // address cannot be bound.
  int bind(const std::string& host, int port);
  // Serves until should_stop() returns true (polled every 50 ms), then stops accepting, closes the
  // connections that wait for a request, lets the requests in flight finish and answer, and returns.
  void run(const std::function<bool()>& should_stop);

  // The bytes of one HTTP exchange in memory: `raw` parsed with the same limits and passed through the same
  // admit/handle path as a connection's request; returns the serialized answer, or empty when `raw` is not a
  // whole request (a connection would wait for more). For fuzzing and tests.
  std::string answer_bytes(std::string_view raw);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace repoctx
