#include "server/http_server.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "api/json.h"
#include "api/requests.h"
#include "retrieve/retriever.h"
#include "server/warmer.h"
#include "util/cancel.h"
#include "util/error.h"
#include "util/log.h"
#include "util/text.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace repoctx {

namespace {

// An answer other than 200: the HTTP status, a short machine code and the message.
struct HttpError : std::runtime_error {
  int status;
  std::string code;
  HttpError(int s, std::string c, const std::string& m) : std::runtime_error(m), status(s), code(std::move(c)) {}
};

HttpError http_error_of(const Error& e) {
  switch (e.code()) {
    case ExitCode::usage:
      return {400, "bad_request", e.what()};
    case ExitCode::bad_input:
      return {400, "bad_input", e.what()};
    case ExitCode::not_found:
      return {404, "not_found", e.what()};
    case ExitCode::llm:
      return {502, "llm_backend", e.what()};
    case ExitCode::interrupted:
      return {503, "shutting_down", std::string("the server is shutting down: ") + e.what()};
    default:
      return {500, "internal", e.what()};
  }
}

std::string dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

// Long operations on their own threads, so that a request can stop waiting (504) while the work finishes.
// Threads are joined, never detached: the index they use lives until every job is done.
class BackgroundJobs {
 public:
  explicit BackgroundJobs(int max_running) : max_(max_running) {}
  ~BackgroundJobs() { join_all(); }

  json run(std::function<json()> fn, double timeout_s) {
    auto st = std::make_shared<State>();
    {
      std::lock_guard lk(mu_);
      prune();
      if (static_cast<int>(jobs_.size()) >= max_)
        throw HttpError(503, "busy",
                        fmt::format("{} long operations are running (the limit); retry when one finishes", max_));
      jobs_.push_back(Job{st, std::thread([st, fn = std::move(fn)] {
                            json out;
                            std::exception_ptr err;
                            try {
                              out = fn();
                            } catch (...) {
                              err = std::current_exception();
                            }
                            std::lock_guard lk(st->mu);
                            st->result = std::move(out);
                            st->error = err;
                            st->done = true;
                            st->cv.notify_all();
                          })});
    }
    std::unique_lock lk(st->mu);
    if (!st->cv.wait_for(lk, std::chrono::duration<double>(timeout_s), [&] { return st->done; }))
      throw HttpError(504, "timeout",
                      fmt::format("the operation took longer than the request time limit ({} s); it goes on in the "
                                  "background and its model results are cached, so a retry resumes where it is",
                                  timeout_s));
    if (st->error) std::rethrow_exception(st->error);
    return std::move(st->result);
  }

  void join_all() {
    std::list<Job> jobs;
    {
      std::lock_guard lk(mu_);
      jobs.swap(jobs_);
    }
    for (auto& j : jobs) j.thread.join();
  }

 private:
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    json result;
    std::exception_ptr error;
  };
  struct Job {
    std::shared_ptr<State> state;
    std::thread thread;
  };
  void prune() {
    for (auto it = jobs_.begin(); it != jobs_.end();) {
      bool done;
      {
        std::lock_guard lk(it->state->mu);
        done = it->state->done;
      }
      if (done) {
        it->thread.join();
        it = jobs_.erase(it);
      } else {
        ++it;
      }
    }
  }
  int max_;
  std::mutex mu_;
  std::list<Job> jobs_;
};

// One served repository: its index (once loaded), its watcher and what the last refresh said. A repository
// loads on its own thread after the server listens, so a large one (or one indexed for the first time) does
// not keep the others from answering; until it has loaded its requests answer 503 "loading".
struct Served {
  enum class State { loading, ready, failed };
  std::string name, root;
  std::function<std::unique_ptr<api::Index>()> load;  // run once by the server's loader thread
  bool first_build = false;                           // load builds the index from scratch
  std::atomic<State> state{State::loading};
  std::unique_ptr<api::Index> index;  // set before `state` becomes ready, never changed after
  std::unique_ptr<RepoWatcher> watcher;
  std::mutex mu;
  std::string last_error;  // empty when the last refresh succeeded
  double last_refresh_s = 0;
  double ready_after_s = 0;  // seconds from listening until the load ended (ready or failed)
  bool queued = false;       // a first build waiting for another repository's to end
  double build_wait_s = 0;   // how long the first build waited for its turn
  int64_t refreshes = 0;
  Error load_error{ExitCode::failure, ""};  // when state is failed

  // The loaded index; a request to a repository still loading or that failed to load answers 503.
  api::Index& ready() {
    switch (state.load(std::memory_order_acquire)) {
      case State::ready:
        return *index;
      case State::loading:
        throw HttpError(503, "loading",
                        "repository '" + name +
                            "' is still loading (reading or building its index); retry shortly: /v1/health says "
                            "\"state\": \"ready\" once it answers");
      case State::failed:
        break;
    }
    std::lock_guard lk(mu);
    throw HttpError(503, "load_failed",
                    "repository '" + name + "' could not be loaded: " + load_error.what() +
                        " (fix it and restart the server; the other repositories keep serving)");
  }

  json refresh(bool force) {
    api::Index& ix = ready();
    try {
      api::RefreshStats st = ix.refresh(force);
      std::lock_guard lk(mu);
      last_error.clear();
      ++refreshes;
      last_refresh_s = st.seconds;
      return api::to_json(st);
    } catch (const std::exception& e) {
      std::lock_guard lk(mu);
      last_error = e.what();
      throw;
    }
  }

  json status() {
    const State st = state.load(std::memory_order_acquire);
    json j = st == State::ready ? api::to_json(index->info()) : json{{"root", root}};
    j["name"] = name;
    j["state"] = st == State::ready ? "ready" : st == State::loading ? "loading" : "failed";
    std::lock_guard lk(mu);
    if (st == State::failed) j["error"] = load_error.what();
    if (st != State::loading) j["ready_after_s"] = ready_after_s;
    if (first_build) {
      if (st == State::loading) j["queued"] = queued;
      j["build_wait_s"] = build_wait_s;
    }
    if (st != State::ready) return j;
    j["fresh"] = last_error.empty();
    if (!last_error.empty()) j["last_error"] = last_error;
    j["refreshes"] = refreshes;
    j["watching"] = watcher ? (watcher->polling() ? "poll" : "inotify") : "off";
    return j;
  }
};

bool same_token(const std::string& a, const std::string& b) {
  // Constant time in the length of the expected token: a wrong token must not leak its matching prefix.
  unsigned diff = a.size() == b.size() ? 0u : 1u;
  for (size_t i = 0; i < b.size(); ++i) diff |= static_cast<unsigned char>(i < a.size() ? a[i] : 0) ^ b[i];
  return diff == 0;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// The host part of a Host header value ("name", "name:port", "[v6]", "[v6]:port"), lower-cased.
std::string host_name(const std::string& value) {
  std::string v = lower(value);
  if (!v.empty() && v[0] == '[') {
    auto close = v.find(']');
    return close == std::string::npos ? v : v.substr(0, close + 1);
  }
  auto colon = v.find(':');
  return colon == std::string::npos ? v : v.substr(0, colon);
}

HttpResponse error_response(int status, const std::string& code, const std::string& message) {
  HttpResponse r;
  r.status = status;
  r.body = dump({{"error", {{"status", status}, {"code", code}, {"message", message}}}});
  if (status == 401) r.headers.emplace_back("WWW-Authenticate", "Bearer");
  return r;
}

class HttpServer {
 public:
  HttpServer(std::vector<ServedRepo> repos, const ServeOptions& opt) : opt_(opt), jobs_(opt.max_background) {
    for (auto& r : repos) {
      auto s = std::make_unique<Served>();
      s->name = r.name;
      s->root = r.root;
      if (r.index) {
        s->index = std::move(r.index);
        s->state = Served::State::ready;
      } else if (r.load) {
        s->load = std::move(r.load);
        s->first_build = r.first_build;
      } else {
        throw Error(ExitCode::failure, "repository '" + r.name + "' has neither an index nor a way to load one");
      }
      served_.push_back(std::move(s));
    }
    for (const char* h : {"127.0.0.1", "localhost", "[::1]"}) hosts_.insert(h);
    if (opt_.host != "0.0.0.0" && opt_.host != "::")
      hosts_.insert(host_name(opt_.host.find(':') != std::string::npos && opt_.host[0] != '[' ? "[" + opt_.host + "]"
                                                                                              : opt_.host));
    for (const auto& h : opt_.allow_hosts) hosts_.insert(host_name(h));
    for (const auto& o : opt_.allow_origins) origins_.insert(lower(o));
    add_routes();
  }

  ~HttpServer() {  // loaders still running when run() ended by an exception
    for (auto& t : loaders_)
      if (t.joinable()) t.join();
  }
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int run();
  HttpHandlers handlers();
  std::optional<HttpResponse> admit(const HttpHead& head) const;
  HttpResponse handle(const HttpRequest& req);

 private:
  using Handler = std::function<json(const HttpRequest&, const json&)>;
  struct Route {
    std::string method;
    Handler fn;
  };
  Served& pick(const json& body, const HttpRequest& req);
  void route(const std::string& path, const std::string& method, Handler fn) {
    routes_[path] = {method, std::move(fn)};
  }
  void add_routes();
  void add_watcher(Served& s);
  void start_loading(std::chrono::steady_clock::time_point listening);
  std::unique_ptr<api::Index> build_in_turn(Served& s);
  bool all_failed() const {
    return !served_.empty() && std::all_of(served_.begin(), served_.end(),
                                           [](const auto& s) { return s->state.load() == Served::State::failed; });
  }
  void announce(int port);
  json status_of(size_t i) {
    json j = served_[i]->status();
    j["warm"] = warmer_ && warmer_->warm(i);  // the warmer holds the indexes in served_'s order
    return j;
  }
  template <class P>
  P params_of(const json& body, const std::vector<api::Field<P>>& fields) const {
    return api::params_from_json(body, fields, {"repo"});
  }

  ServeOptions opt_;
  std::vector<std::unique_ptr<Served>> served_;
  BackgroundJobs jobs_;
  std::map<std::string, Route> routes_;  // path -> what serves it
  std::set<std::string> hosts_, origins_;
  mutable std::atomic<int64_t> requests_{0}, errors_{0};  // counted by const admit() too
  std::unique_ptr<IndexWarmer> warmer_;                   // null with --no-warm
  std::vector<std::thread> loaders_;                      // one per repository loading, joined at the end
  std::mutex build_turn_;                                 // held by the one first build running
};

Served& HttpServer::pick(const json& body, const HttpRequest& req) {
  std::string name;
  if (body.contains("repo")) {
    if (!body["repo"].is_string()) throw HttpError(400, "bad_request", "field 'repo' must be a string");
    name = body["repo"].get<std::string>();
  } else if (auto it = req.head.query.find("repo"); it != req.head.query.end()) {
    name = it->second;
  }
  std::string names;
  for (const auto& s : served_) names += (names.empty() ? "" : ", ") + s->name;
  if (name.empty()) {
    if (served_.size() == 1) return *served_[0];
    throw HttpError(400, "bad_request", "several repositories are served: give \"repo\" (one of " + names + ")");
  }
  for (auto& s : served_)
    if (s->name == name) return *s;
  throw HttpError(404, "not_found", "no repository '" + name + "' is served (served: " + names + ")");
}

// The checks made on the head alone, before the body is read: who may ask (Host, Origin, token), then what
// (endpoint, method, content type). Cheap: it runs on the event loop.
std::optional<HttpResponse> HttpServer::admit(const HttpHead& head) const {
  auto refuse = [&](int status, const std::string& code, const std::string& message) {
    ++errors_;
    return error_response(status, code, message);
  };
  std::string host = head.header("host");
  if (host.empty() || !hosts_.count(host_name(host)))
    return refuse(400, "bad_host",
                  "Host '" + host +
                      "' is not a name of this server (loopback names and --host are accepted; add others with "
                      "--allow-host)");
  if (head.has_header("origin") && !origins_.count(lower(head.header("origin"))))
    return refuse(403, "cross_origin",
                  "requests from web pages (Origin '" + head.header("origin") +
                      "') are refused; a trusted origin can be allowed with --allow-origin");
  if (!opt_.token.empty()) {
    const std::string auth = head.header("authorization");
    const std::string prefix = "Bearer ";
    if (auth.compare(0, prefix.size(), prefix) != 0 || !same_token(auth.substr(prefix.size()), opt_.token))
      return refuse(401, "unauthorized", "missing or wrong bearer token (header 'Authorization: Bearer TOKEN')");
  }
  auto it = routes_.find(head.path);
  if (it == routes_.end()) {
    std::string paths;
    for (const auto& [p, r] : routes_) paths += (paths.empty() ? "" : ", ") + r.method + " " + p;
    return refuse(404, "not_found", "no endpoint " + head.method + " " + head.path + " (endpoints: " + paths + ")");
  }
  if (head.method != it->second.method) {
    auto r = refuse(405, "method_not_allowed", head.path + " takes " + it->second.method + ", not " + head.method);
    r.headers.emplace_back("Allow", it->second.method);
    return r;
  }
  if (head.method == "POST") {
    std::string type = lower(head.header("content-type"));
    std::string media(trim(std::string_view(type).substr(0, type.find(';'))));
    if (media != "application/json")
      return refuse(415, "unsupported_media_type",
                    "a POST body must be JSON sent with 'Content-Type: application/json' (got '" + type + "')");
  } else if (head.has_body) {
    return refuse(400, "bad_request", head.method + " requests carry no body");
  }
  return std::nullopt;
}

HttpResponse HttpServer::handle(const HttpRequest& req) {
  ++requests_;
  HttpResponse res;
  try {
    const Route& r = routes_.at(req.head.path);  // admit() let only known paths through
    json body = json::object();
    if (req.head.method == "POST" && !req.body.empty()) {
      try {
        body = api::parse_request_json(req.body);
      } catch (const Error& e) {
        throw HttpError(400, "bad_json", std::string("the request body is ") + e.what());
      }
      if (!body.is_object()) throw HttpError(400, "bad_json", "the request body must be a JSON object");
    }
    res.body = dump(r.fn(req, body));
  } catch (const HttpError& e) {
    res = error_response(e.status, e.code, e.what());
    if (e.code == "loading") res.headers.emplace_back("Retry-After", "1");
  } catch (const Error& e) {
    HttpError h = http_error_of(e);
    res = error_response(h.status, h.code, h.what());
  } catch (const std::exception& e) {
    res = error_response(500, "internal", e.what());
  }
  if (res.status >= 400) ++errors_;
  return res;
}

void HttpServer::add_routes() {
  route("/v1/health", "GET", [this](const HttpRequest&, const json&) {
    json repos = json::array();
    for (size_t i = 0; i < served_.size(); ++i) repos.push_back(status_of(i));
    return json{{"status", "ok"},
                {"pid", getpid()},
                {"requests", requests_.load()},
                {"errors", errors_.load()},
                {"repos", repos}};
  });
  route("/v1/repos", "GET", [this](const HttpRequest&, const json&) {
    json repos = json::array();
    for (size_t i = 0; i < served_.size(); ++i) repos.push_back(status_of(i));
    return repos;
  });
  route("/v1/strategies", "GET", [](const HttpRequest&, const json&) { return api::to_json(api::strategies()); });
  route("/v1/models", "GET", [this](const HttpRequest&, const json&) {
    return json{{"structural", opt_.models.structural_names()}, {"aligncoder", opt_.models.aligncoder_names()}};
  });
  route("/v1/cache/stats", "GET", [this](const HttpRequest& req, const json& body) {
    return api::to_json(pick(body, req).ready().cache_stats());
  });
  auto refresh = [this](const HttpRequest& req, const json& body) {
    Served& s = pick(body, req);
    if (body.contains("force") && !body["force"].is_boolean())
      throw HttpError(400, "bad_request", "field 'force' must be true or false");
    for (const auto& [k, v] : body.items())
      if (k != "repo" && k != "force") throw HttpError(400, "bad_request", "unknown field '" + k + "' (repo, force)");
    bool force = body.value("force", false);
    return jobs_.run([&s, force] { return s.refresh(force); }, opt_.request_timeout_s);
  };
  route("/v1/refresh", "POST", refresh);
  route("/v1/index", "POST", refresh);
  route("/v1/retrieve", "POST", [this](const HttpRequest& req, const json& body) {
    api::Index& ix = pick(body, req).ready();
    auto p = params_of(body, api::retrieve_fields());
    opt_.models.resolve(p);
    if (retriever_info(api::strategy_for(p)).needs.any())
      return jobs_.run([&ix, p] { return api::to_json(ix.retrieve(p)); }, opt_.request_timeout_s);
    return api::to_json(ix.retrieve(p));
  });
  route("/v1/localize", "POST", [this](const HttpRequest& req, const json& body) {
    api::Index& ix = pick(body, req).ready();
    auto p = params_of(body, api::localize_fields());
    opt_.models.resolve(p);
    if (retriever_info(p.strategy).needs.any())
      return jobs_.run([&ix, p] { return api::to_json(ix.localize(p)); }, opt_.request_timeout_s);
    return api::to_json(ix.localize(p));
  });
  route("/v1/localize/strategies", "GET",
        [](const HttpRequest&, const json&) { return api::to_json(api::localize_strategies()); });
  route("/v1/symbols", "POST", [this](const HttpRequest& req, const json& body) {
    return api::to_json(pick(body, req).ready().symbols(params_of(body, api::symbols_fields())));
  });
  route("/v1/files", "POST", [this](const HttpRequest& req, const json& body) {
    return api::to_json(pick(body, req).ready().files(params_of(body, api::files_fields())));
  });
  route("/v1/snippets", "POST", [this](const HttpRequest& req, const json& body) {
    return api::to_json(pick(body, req).ready().snippets(params_of(body, api::snippets_fields())));
  });
  route("/v1/read", "POST", [this](const HttpRequest& req, const json& body) {
    auto p = params_of(body, api::read_fields());
    return json{{"path", p.path}, {"text", pick(body, req).ready().read(p).text}};
  });
  route("/v1/grep", "POST", [this](const HttpRequest& req, const json& body) {
    auto p = params_of(body, api::grep_fields());
    return json{{"pattern", p.pattern}, {"text", pick(body, req).ready().grep(p).text}};
  });
  route("/v1/generate", "POST", [this](const HttpRequest& req, const json& body) {
    api::Index& ix = pick(body, req).ready();
    auto p = params_of(body, api::generate_fields());
    opt_.models.resolve(p.params);
    return jobs_.run([&ix, p] { return api::to_json(ix.generate(p)); }, opt_.request_timeout_s);
  });
}

void HttpServer::add_watcher(Served& s) {
  if (!opt_.watch) return;
  api::IndexInfo info = s.index->info();
  std::vector<std::string> skip = {fs::path(info.db).parent_path().string()};
  Served* sp = &s;
  auto w = std::make_unique<RepoWatcher>(info.root, skip, opt_.watch_opt, [sp] {
    try {
      json st = sp->refresh(false);
      if (st.value("reloaded", false))
        log_info("{}: refreshed ({} files re-parsed, {} removed) in {:.2f} s", sp->name, st["parsed"].get<int64_t>(),
                 st["removed"].get<int64_t>(), st["seconds"].get<double>());
    } catch (const std::exception& e) {
      log_warn("{}: refresh failed: {}", sp->name, e.what());
    }
  });
  std::lock_guard lk(s.mu);
  s.watcher = std::move(w);
}

// Each repository not loaded yet loads on its own thread: they are independent, and a small one must not
// wait behind a large one. Its watcher starts once it has loaded; the warmer picks it up then.
void HttpServer::start_loading(std::chrono::steady_clock::time_point listening) {
  for (auto& sp : served_) {
    Served* s = sp.get();
    if (s->state.load() == Served::State::ready) {
      add_watcher(*s);
      continue;
    }
    loaders_.emplace_back([this, s, listening] {
      auto since = [listening] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - listening).count();
      };
      try {
        s->index = s->first_build ? build_in_turn(*s) : s->load();
        {
          std::lock_guard lk(s->mu);
          s->ready_after_s = since();
        }
        s->state.store(Served::State::ready, std::memory_order_release);
        log_info("{}: ready {:.2f} s after listening ({} files)", s->name, since(), s->index->info().files);
        add_watcher(*s);
      } catch (const std::exception& e) {
        const auto* err = dynamic_cast<const Error*>(&e);
        {
          std::lock_guard lk(s->mu);
          s->load_error = Error(err ? err->code() : ExitCode::failure, e.what());
          s->ready_after_s = since();
        }
        s->state.store(Served::State::failed, std::memory_order_release);
        log_warn("{}: cannot load: {}", s->name, e.what());
      }
    });
  }
}

// A first build waits for the one running to end; shown in health as "queued" meanwhile.
std::unique_ptr<api::Index> HttpServer::build_in_turn(Served& s) {
  const auto asked = std::chrono::steady_clock::now();
  {
    std::lock_guard lk(s.mu);
    s.queued = true;
  }
  std::lock_guard turn(build_turn_);
  {
    std::lock_guard lk(s.mu);
    s.queued = false;
    s.build_wait_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - asked).count();
  }
  throw_if_interrupted("the server stopped before this repository's index was built");
  return s.load();
}

void HttpServer::announce(int port) {
  log_info("serving {} repositor{} on http://{}:{} (pid {}; SIGTERM or Ctrl-C stops)", served_.size(),
           served_.size() == 1 ? "y" : "ies", opt_.host, port, getpid());
  if (opt_.ready_file.empty()) return;
  std::string tmp = opt_.ready_file + ".tmp";
  {
    std::ofstream f(tmp);
    f << dump({{"host", opt_.host}, {"port", port}, {"pid", getpid()}}) << "\n";
  }
  std::error_code ec;
  fs::rename(tmp, opt_.ready_file, ec);
  if (ec) log_warn("cannot write the ready file '{}': {}", opt_.ready_file, ec.message());
}

HttpLimits limits_of(const ServeOptions& opt) {
  HttpLimits l = opt.limits;
  if (l.threads <= 0) l.threads = static_cast<int>(std::max(8u, 2 * std::thread::hardware_concurrency()));
  return l;
}

HttpHandlers HttpServer::handlers() {
  HttpHandlers h;
  h.admit = [this](const HttpHead& head) { return admit(head); };
  h.handle = [this](const HttpRequest& r) { return handle(r); };
  h.error = [this](int status, const std::string& code, const std::string& message) {
    ++errors_;
    return error_response(status, code, message);
  };
  return h;
}

int HttpServer::run() {
  HttpTransport transport(limits_of(opt_), handlers());
  int port = transport.bind(opt_.host, opt_.port);
  start_loading(std::chrono::steady_clock::now());
  // Each repository's snapshots warmed in the background (server/warmer.h) once it has loaded; health says
  // "warm".
  if (opt_.warm) {
    std::vector<IndexWarmer::Source> indexes;
    for (auto& sp : served_) {
      Served* s = sp.get();
      indexes.push_back({s->name, [s]() -> const api::Index* {
                           return s->state.load(std::memory_order_acquire) == Served::State::ready ? s->index.get()
                                                                                                   : nullptr;
                         }});
    }
    warmer_ = std::make_unique<IndexWarmer>(std::move(indexes));
  }
  announce(port);
  // Returns once stopped and the requests in flight answered; a server none of whose repositories could be
  // loaded stops too.
  transport.run([this] { return interrupted() || all_failed(); });
  warmer_.reset();
  log_info("stopping: requests in flight finished; waiting for background operations");
  for (auto& t : loaders_) t.join();
  for (auto& s : served_) s->watcher.reset();
  jobs_.join_all();
  log_info("stopped after {} requests", requests_.load());
  if (!interrupted() && all_failed()) {
    const Error& first = served_.front()->load_error;
    throw Error(first.code(), served_.size() == 1
                                  ? std::string(first.what())
                                  : std::string("no repository could be loaded; the first: ") + first.what());
  }
  return 0;
}

}  // namespace

int serve_http(std::vector<ServedRepo> repos, const ServeOptions& opt) {
  opt.models.load();
  HttpServer server(std::move(repos), opt);
  return server.run();
}

struct HttpExchange::Impl {
  HttpServer server;
  HttpTransport transport;
  Impl(std::vector<ServedRepo> repos, const ServeOptions& opt)
      : server(std::move(repos), opt), transport(limits_of(opt), server.handlers()) {}
};

HttpExchange::HttpExchange(std::vector<ServedRepo> repos, const ServeOptions& opt) {
  opt.models.load();
  impl_ = std::make_unique<Impl>(std::move(repos), opt);
}

HttpExchange::~HttpExchange() = default;

std::string HttpExchange::answer(std::string_view raw) {
  return impl_->transport.answer_bytes(raw);
}

}  // namespace repoctx
