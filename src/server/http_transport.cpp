#include "server/http_transport.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <list>
#include <sstream>

#include <fmt/core.h>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "util/error.h"
#include "util/log.h"

namespace repoctx {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;
using Parser = http::request_parser<http::string_body>;

std::string HttpHead::header(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (k == name) return v;
  return {};
}

bool HttpHead::has_header(std::string_view name) const {
  return std::any_of(headers.begin(), headers.end(), [&](const auto& h) { return h.first == name; });
}

namespace {

std::chrono::milliseconds ms(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(std::max(0.001, seconds) * 1000));
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Percent-decoding of a query component ('+' is a space). Hand-written: the Boost of Debian 12 (1.74)
// predates Boost.URL, and a query here holds at most a repository name.
std::string url_decode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%' && i + 2 < s.size() && hex_value(s[i + 1]) >= 0 && hex_value(s[i + 2]) >= 0) {
      out += static_cast<char>(hex_value(s[i + 1]) * 16 + hex_value(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

HttpHead head_of(const Parser& parser) {
  const auto& req = parser.get();
  HttpHead h;
  h.method = std::string(req.method_string());
  h.target = std::string(req.target());
  auto q = h.target.find('?');
  h.path = h.target.substr(0, q);
  if (q != std::string::npos) {
    std::string_view rest = std::string_view(h.target).substr(q + 1);
    while (!rest.empty()) {
      auto amp = rest.find('&');
      std::string_view kv = rest.substr(0, amp);
      auto eq = kv.find('=');
      if (!kv.empty())
        h.query[url_decode(kv.substr(0, eq))] = eq == std::string_view::npos ? "" : url_decode(kv.substr(eq + 1));
      if (amp == std::string_view::npos) break;
      rest.remove_prefix(amp + 1);
    }
  }
  for (const auto& f : req) {
    std::string name(f.name_string());
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    h.headers.emplace_back(std::move(name), std::string(f.value()));
  }
  h.has_body = parser.chunked() || (parser.content_length() && *parser.content_length() > 0);
  return h;
}

http::response<http::string_body> to_beast(const HttpResponse& r, unsigned version, bool keep_alive) {
  http::response<http::string_body> res{static_cast<http::status>(r.status), version};
  res.set(http::field::server, "repoctx");
  res.set(http::field::content_type, r.content_type);
  for (const auto& [k, v] : r.headers) res.set(k, v);
  res.body() = r.body;
  res.keep_alive(keep_alive);
  res.prepare_payload();
  return res;
}

}  // namespace

struct HttpTransport::Impl {
  HttpLimits limits;
  HttpHandlers handlers;
  net::io_context ioc{1};
  tcp::acceptor acceptor{ioc};
  net::thread_pool pool;
  std::atomic<int> pending{0};
  std::atomic<bool> stopping{false};  // read by workers as they answer

  class Connection;
  std::list<std::shared_ptr<Connection>> connections;  // every open connection, oldest first (event loop only)

  Impl(HttpLimits l, HttpHandlers h)
      : limits(l), handlers(std::move(h)), pool(static_cast<size_t>(std::max(1, l.threads))) {}

  void configure(Parser& p) const {
    p.header_limit(static_cast<std::uint32_t>(std::min<size_t>(limits.max_header_bytes, UINT32_MAX)));
    p.body_limit(static_cast<std::uint64_t>(limits.max_body_bytes));
  }

  HttpResponse error(int status, const std::string& code, const std::string& message) const {
    return handlers.error(status, code, message);
  }

  // The answer for a request that could not be read whole; nullopt when the client is gone or timed out
  // (nobody to answer).
  std::optional<HttpResponse> read_failure(const beast::error_code& ec) const {
    if (ec == http::error::body_limit)
      return error(
          413, "too_large",
          fmt::format("the request body is larger than the limit ({} bytes; --max-body-bytes)", limits.max_body_bytes));
    if (ec == http::error::header_limit)
      return error(
          431, "headers_too_large",
          fmt::format("the request line and headers are larger than the limit ({} bytes)", limits.max_header_bytes));
    // The rest of the parser's errors are malformed requests; a client that left, went quiet or stopped
    // mid-message (socket errors, timeouts, end of stream) has nobody left to answer.
    bool parse_error = ec.category() == http::make_error_code(http::error::bad_method).category();
    if (parse_error && ec != http::error::end_of_stream && ec != http::error::partial_message &&
        ec != http::error::need_more)
      return error(400, "bad_request", "malformed HTTP request: " + ec.message());
    return std::nullopt;
  }

  HttpResponse run_handler(const HttpRequest& req) const {
    try {
      return handlers.handle(req);
    } catch (const std::exception& e) {
      return error(500, "internal", e.what());
    } catch (...) {
      return error(500, "internal", "unknown failure");
    }
  }

  std::optional<HttpResponse> admit(const Parser& p) const {
    try {
      return handlers.admit(head_of(p));
    } catch (const std::exception& e) {
      return error(500, "internal", e.what());
    }
  }

  void make_room(const std::string& client);
  void accept();
  void watch_stop(const std::function<bool()>& should_stop, std::shared_ptr<net::steady_timer> timer);
  void begin_stop();
};

class HttpTransport::Impl::Connection : public std::enable_shared_from_this<Connection> {
 public:
  enum class Phase { head, body, busy, writing };

  Connection(Impl& t, tcp::socket socket, std::string client)
      : t_(t), stream_(std::move(socket)), client_(std::move(client)) {}

  const std::string& client() const { return client_; }
  Phase phase() const { return phase_.load(); }
  Clock::time_point since() const { return since_; }
  bool waiting() const { return phase_ == Phase::head || phase_ == Phase::body; }

  void start() { read_head(); }

  // Closes the socket: the pending read ends with an error and the connection leaves the table.
  void close() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.socket().close(ec);
  }

 private:
  void read_head() {
    phase_ = Phase::head;
    since_ = Clock::now();
    if (t_.stopping) return finish();
    parser_.emplace();
    t_.configure(*parser_);
    stream_.expires_after(ms(t_.limits.header_timeout_s));
    http::async_read_header(stream_, buffer_, *parser_,
                            [self = shared_from_this()](beast::error_code ec, size_t) { self->on_head(ec); });
  }

  void on_head(beast::error_code ec) {
    if (ec) return fail(ec);
    version_ = parser_->get().version();
    if (auto refused = t_.admit(*parser_)) return respond(std::move(*refused), true);
    phase_ = Phase::body;
    stream_.expires_after(ms(t_.limits.body_timeout_s));
    const auto& req = parser_->get();
    auto expect = req[http::field::expect];
    if (!parser_->is_done() && beast::iequals(expect, "100-continue")) {
      auto cont = std::make_shared<http::response<http::empty_body>>(http::status::continue_, req.version());
      http::async_write(stream_, *cont, [self = shared_from_this(), cont](beast::error_code e, size_t) {
        if (e) return self->fail(e);
        self->read_body();
      });
      return;
    }
    read_body();
  }

  void read_body() {
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, size_t) { self->on_body(ec); });
  }

  void on_body(beast::error_code ec) {
    if (ec) return fail(ec);
    stream_.expires_never();
    if (t_.pending.load() >= t_.limits.max_pending)
      return respond(
          t_.error(503, "busy",
                   fmt::format("{} requests are queued or running (the limit); retry shortly", t_.limits.max_pending)),
          false);
    phase_ = Phase::busy;
    since_ = Clock::now();
    auto req = std::make_shared<HttpRequest>();
    req->head = head_of(*parser_);
    req->body = std::move(parser_->get().body());
    req->client = client_;
    keep_alive_ = parser_->get().keep_alive();
    ++t_.pending;
    // The worker starts the answer's write itself: nothing else touches a busy connection (the loop closes
    // only waiting ones), the first bytes usually go out at once from this thread, and the completion runs
    // on the loop. Handing the answer back to the loop first made every answer wait for the loop thread,
    // which under load queues behind the workers.
    net::post(t_.pool, [self = shared_from_this(), req] {
      HttpResponse res = self->t_.run_handler(*req);
      --self->t_.pending;
      self->respond(std::move(res), !self->keep_alive_);
    });
  }

  void fail(const beast::error_code& ec) {
    if (auto answer = t_.read_failure(ec)) return respond(std::move(*answer), true);
    finish();
  }

  void respond(HttpResponse r, bool close_after) {
    bool keep = !close_after && !t_.stopping;
    phase_ = Phase::writing;
    auto res = std::make_shared<http::response<http::string_body>>(to_beast(r, version_, keep));
    stream_.expires_after(ms(t_.limits.write_timeout_s));
    http::async_write(stream_, *res, [self = shared_from_this(), res, keep](beast::error_code ec, size_t) {
      if (ec || !keep) {
        self->close();
        return self->finish();
      }
      self->read_head();
    });
  }

  void finish() {
    close();
    auto it = std::find(t_.connections.begin(), t_.connections.end(), shared_from_this());
    if (it != t_.connections.end()) t_.connections.erase(it);
    if (t_.stopping && t_.connections.empty()) t_.ioc.stop();
  }

  Impl& t_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<Parser> parser_;
  std::string client_;
  // Written by the worker that answers (see on_body), read by the loop when it looks for a connection to close.
  std::atomic<Phase> phase_{Phase::head};
  Clock::time_point since_ = Clock::now();
  bool keep_alive_ = true;
  unsigned version_ = 11;
};

// Frees a place for a new connection of `client`: within the client's bound and the total bound, the
// connection that has waited longest without a complete request is closed. Returns with nothing closed
// when every candidate is running a request (the caller then refuses the newcomer).
void HttpTransport::Impl::make_room(const std::string& client) {
  auto evict_oldest = [&](bool same_client) {
    std::shared_ptr<Connection> oldest;
    for (const auto& c : connections)
      if (c->waiting() && (!same_client || c->client() == client) && (!oldest || c->since() < oldest->since()))
        oldest = c;
    if (!oldest) return false;
    oldest->close();
    connections.remove(oldest);
    return true;
  };
  int mine = static_cast<int>(
      std::count_if(connections.begin(), connections.end(), [&](const auto& c) { return c->client() == client; }));
  if (mine >= limits.max_connections_per_client && evict_oldest(true)) --mine;
  if (static_cast<int>(connections.size()) >= limits.max_connections) evict_oldest(false);
}

void HttpTransport::Impl::accept() {
  acceptor.async_accept([this](beast::error_code ec, tcp::socket socket) {
    if (stopping || !acceptor.is_open()) return;
    if (!ec) {
      beast::error_code e2;
      auto ep = socket.remote_endpoint(e2);
      std::string client = e2 ? "?" : ep.address().to_string();
      make_room(client);
      int mine = static_cast<int>(
          std::count_if(connections.begin(), connections.end(), [&](const auto& c) { return c->client() == client; }));
      if (static_cast<int>(connections.size()) >= limits.max_connections || mine >= limits.max_connections_per_client) {
        socket.close(e2);  // every place is running a request
      } else {
        socket.set_option(tcp::no_delay(true), e2);
        auto c = std::make_shared<Connection>(*this, std::move(socket), client);
        connections.push_back(c);
        c->start();
      }
    } else if (ec == net::error::no_descriptors) {
      // Out of file descriptors: make room by closing the longest-waiting connection, then go on.
      for (const auto& c : connections)
        if (c->waiting()) {
          c->close();
          break;
        }
    }
    accept();
  });
}

void HttpTransport::Impl::begin_stop() {
  stopping = true;
  beast::error_code ec;
  acceptor.close(ec);
  for (const auto& c : std::list<std::shared_ptr<Connection>>(connections))
    if (c->waiting()) c->close();
  if (connections.empty()) ioc.stop();
}

void HttpTransport::Impl::watch_stop(const std::function<bool()>& should_stop,
                                     std::shared_ptr<net::steady_timer> timer) {
  timer->expires_after(std::chrono::milliseconds(50));
  timer->async_wait([this, should_stop, timer](beast::error_code) {
    if (should_stop()) return begin_stop();
    watch_stop(should_stop, timer);
  });
}

HttpTransport::HttpTransport(HttpLimits limits, HttpHandlers handlers)
    : impl_(std::make_unique<Impl>(limits, std::move(handlers))) {}

HttpTransport::~HttpTransport() {
  impl_->pool.join();
}

int HttpTransport::bind(const std::string& host, int port) {
  auto fail = [&](const std::string& why) {
    return Error(ExitCode::usage,
                 fmt::format("cannot listen on {}:{} ({}); choose another --host/--port", host, port, why));
  };
  beast::error_code ec;
  tcp::resolver resolver(impl_->ioc);
  auto endpoints =
      resolver.resolve(host, std::to_string(port), tcp::resolver::passive | tcp::resolver::numeric_service, ec);
  if (ec || endpoints.empty()) throw fail(ec ? ec.message() : "no address");
  tcp::endpoint ep = endpoints.begin()->endpoint();
  auto& a = impl_->acceptor;
  a.open(ep.protocol(), ec);
  if (!ec) a.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) a.bind(ep, ec);
  if (!ec) a.listen(net::socket_base::max_listen_connections, ec);
  if (ec) throw fail(ec.message());
  return a.local_endpoint().port();
}

void HttpTransport::run(const std::function<bool()>& should_stop) {
  impl_->accept();
  impl_->watch_stop(should_stop, std::make_shared<net::steady_timer>(impl_->ioc));
  impl_->ioc.run();
  impl_->pool.join();  // handlers still running (their answers are no longer written) finish
}

std::string HttpTransport::answer_bytes(std::string_view raw) {
  Parser parser;
  impl_->configure(parser);
  beast::error_code ec;
  net::const_buffer buf(raw.data(), raw.size());
  auto serialize = [](const HttpResponse& r, unsigned version) {
    std::ostringstream out;
    out << to_beast(r, version, false);
    return out.str();
  };
  auto feed = [&] {
    while (buf.size() > 0 && !ec) {
      size_t used = parser.put(buf, ec);
      if (ec == http::error::need_more) {
        ec = {};
        break;
      }
      buf += used;
      if (used == 0 || parser.is_header_done()) break;
    }
  };
  feed();
  if (!ec && !parser.is_header_done()) return {};
  if (ec) {
    auto answer = impl_->read_failure(ec);
    return answer ? serialize(*answer, 11) : std::string();
  }
  unsigned version = parser.get().version();
  if (auto refused = impl_->admit(parser)) return serialize(*refused, version);
  while (!parser.is_done() && buf.size() > 0 && !ec) {
    size_t used = parser.put(buf, ec);
    if (ec == http::error::need_more) {
      ec = {};
      break;
    }
    buf += used;
    if (used == 0) break;
  }
  if (!ec && !parser.is_done()) {
    // A body without a length ends with the input (only responses may do that; a request without a length
    // has no body).
    parser.put_eof(ec);
    if (!ec && !parser.is_done()) return {};
  }
  if (ec) {
    auto answer = impl_->read_failure(ec);
    return answer ? serialize(*answer, version) : std::string();
  }
  HttpRequest req;
  req.head = head_of(parser);
  req.body = std::move(parser.get().body());
  req.client = "fuzz";
  return serialize(impl_->run_handler(req), version);
}

}  // namespace repoctx
