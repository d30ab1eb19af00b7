#include "server/http_server.h"

#include <httplib.h>
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
#include <thread>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "api/json.h"
#include "retrieve/retriever.h"
#include "server/warmer.h"
#include "util/cancel.h"
#include "util/error.h"
#include "util/log.h"

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

void set_error(httplib::Response& res, int status, const std::string& code, const std::string& message) {
  res.status = status;
  res.set_content(dump({{"error", {{"status", status}, {"code", code}, {"message", message}}}}), "application/json");
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

// One served repository: its index, its watcher and what the last refresh said.
struct Served {
  std::string name;
  std::unique_ptr<api::Index> index;
  std::unique_ptr<RepoWatcher> watcher;
  std::mutex mu;
  std::string last_error;  // empty when the last refresh succeeded
  double last_refresh_s = 0;
  int64_t refreshes = 0;

  json refresh(bool force) {
    try {
      api::RefreshStats st = index->refresh(force);
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
    json j = api::to_json(index->info());
    j["name"] = name;
    std::lock_guard lk(mu);
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

class HttpServer {
 public:
  HttpServer(std::vector<ServedRepo> repos, const ServeOptions& opt) : opt_(opt), jobs_(opt.max_background) {
    for (auto& r : repos) {
      auto s = std::make_unique<Served>();
      s->name = r.name;
      s->index = std::move(r.index);
      served_.push_back(std::move(s));
    }
  }

  int run();

 private:
  Served& pick(const json& body, const httplib::Request& req);
  json body_of(const httplib::Request& req);
  void route(const std::string& path, const std::string& method,
             std::function<json(const httplib::Request&, const json&)> fn);
  void add_routes();
  void add_watchers();
  void install_handlers();
  void announce(int port);
  json status_of(size_t i) {
    json j = served_[i]->status();
    j["warm"] = warmer_ && warmer_->warm(i);  // the warmer holds the indexes in served_'s order
    return j;
  }

  ServeOptions opt_;
  httplib::Server svr_;
  std::vector<std::unique_ptr<Served>> served_;
  BackgroundJobs jobs_;
  std::map<std::string, std::string> methods_;  // path -> method served
  std::atomic<int64_t> requests_{0}, errors_{0};
  std::unique_ptr<IndexWarmer> warmer_;  // null with --no-warm
};

Served& HttpServer::pick(const json& body, const httplib::Request& req) {
  std::string name;
  if (body.contains("repo")) {
    if (!body["repo"].is_string()) throw HttpError(400, "bad_request", "field 'repo' must be a string");
    name = body["repo"].get<std::string>();
  } else if (req.has_param("repo")) {
    name = req.get_param_value("repo");
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

json HttpServer::body_of(const httplib::Request& req) {
  if (req.body.empty()) return json::object();
  try {
    json j = json::parse(req.body);
    if (!j.is_object()) throw HttpError(400, "bad_json", "the request body must be a JSON object");
    return j;
  } catch (const json::parse_error& e) {
    throw HttpError(400, "bad_json", std::string("the request body is not valid JSON: ") + e.what());
  }
}

// Registers `path` for `method`, the other method answering 405, every failure a JSON error.
void HttpServer::route(const std::string& path, const std::string& method,
                       std::function<json(const httplib::Request&, const json&)> fn) {
  methods_[path] = method;
  auto handler = [this, fn = std::move(fn)](const httplib::Request& req, httplib::Response& res) {
    ++requests_;
    try {
      json body = req.method == "POST" ? body_of(req) : json::object();
      res.set_content(dump(fn(req, body)), "application/json");
    } catch (const HttpError& e) {
      set_error(res, e.status, e.code, e.what());
    } catch (const Error& e) {
      HttpError h = http_error_of(e);
      set_error(res, h.status, h.code, h.what());
    } catch (const std::exception& e) {
      set_error(res, 500, "internal", e.what());
    }
    if (res.status >= 400) ++errors_;
  };
  auto wrong = [method](const httplib::Request& req, httplib::Response& res) {
    res.set_header("Allow", method);
    set_error(res, 405, "method_not_allowed", req.path + " takes " + method + ", not " + req.method);
  };
  if (method == "GET") {
    svr_.Get(path, handler);
    svr_.Post(path, wrong);
  } else {
    svr_.Post(path, handler);
    svr_.Get(path, wrong);
  }
}

void HttpServer::add_routes() {
  route("/v1/health", "GET", [this](const httplib::Request&, const json&) {
    json repos = json::array();
    for (size_t i = 0; i < served_.size(); ++i) repos.push_back(status_of(i));
    return json{{"status", "ok"},
                {"pid", getpid()},
                {"requests", requests_.load()},
                {"errors", errors_.load()},
                {"repos", repos}};
  });
  route("/v1/repos", "GET", [this](const httplib::Request&, const json&) {
    json repos = json::array();
    for (size_t i = 0; i < served_.size(); ++i) repos.push_back(status_of(i));
    return repos;
  });
  route("/v1/strategies", "GET", [](const httplib::Request&, const json&) { return api::to_json(api::strategies()); });
  route("/v1/cache/stats", "GET", [this](const httplib::Request& req, const json& body) {
    return api::to_json(pick(body, req).index->cache_stats());
  });
  auto refresh = [this](const httplib::Request& req, const json& body) {
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
  route("/v1/retrieve", "POST", [this](const httplib::Request& req, const json& body) {
    Served& s = pick(body, req);
    auto p = api::params_from_json(body, api::retrieve_fields(), {"repo"});
    if (retriever_info(p.strategy).needs.any())
      return jobs_.run([&s, p] { return api::to_json(s.index->retrieve(p)); }, opt_.request_timeout_s);
    return api::to_json(s.index->retrieve(p));
  });
  route("/v1/localize", "POST", [this](const httplib::Request& req, const json& body) {
    Served& s = pick(body, req);
    auto p = api::params_from_json(body, api::localize_fields(), {"repo"});
    if (retriever_info(p.strategy).needs.any())
      return jobs_.run([&s, p] { return api::to_json(s.index->localize(p)); }, opt_.request_timeout_s);
    return api::to_json(s.index->localize(p));
  });
  route("/v1/localize/strategies", "GET",
        [](const httplib::Request&, const json&) { return api::to_json(api::localize_strategies()); });
  route("/v1/symbols", "POST", [this](const httplib::Request& req, const json& body) {
    return api::to_json(pick(body, req).index->symbols(api::params_from_json(body, api::symbols_fields(), {"repo"})));
  });
  route("/v1/files", "POST", [this](const httplib::Request& req, const json& body) {
    return api::to_json(pick(body, req).index->files(api::params_from_json(body, api::files_fields(), {"repo"})));
  });
  route("/v1/snippets", "POST", [this](const httplib::Request& req, const json& body) {
    return api::to_json(pick(body, req).index->snippets(api::params_from_json(body, api::snippets_fields(), {"repo"})));
  });
  route("/v1/read", "POST", [this](const httplib::Request& req, const json& body) {
    auto p = api::params_from_json(body, api::read_fields(), {"repo"});
    return json{{"path", p.path}, {"text", pick(body, req).index->read(p).text}};
  });
  route("/v1/grep", "POST", [this](const httplib::Request& req, const json& body) {
    auto p = api::params_from_json(body, api::grep_fields(), {"repo"});
    return json{{"pattern", p.pattern}, {"text", pick(body, req).index->grep(p).text}};
  });
  route("/v1/generate", "POST", [this](const httplib::Request& req, const json& body) {
    Served& s = pick(body, req);
    auto p = api::params_from_json(body, api::generate_fields(), {"repo"});
    return jobs_.run([&s, p] { return api::to_json(s.index->generate(p)); }, opt_.request_timeout_s);
  });
}

void HttpServer::install_handlers() {
  // Every error the library answers itself (404 unknown path, 413 body too large, 400 malformed request
  // line, 414 URI too long) gets the same JSON body as ours; responses that already have one are kept.
  svr_.set_error_handler(httplib::Server::HandlerWithResponse([this](const httplib::Request& req,
                                                                     httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    if (res.status == 404) {
      std::string paths;
      for (const auto& [p, m] : methods_) paths += (paths.empty() ? "" : ", ") + m + " " + p;
      set_error(res, 404, "not_found", "no endpoint " + req.method + " " + req.path + " (endpoints: " + paths + ")");
    } else if (res.status == 413) {
      set_error(
          res, 413, "too_large",
          fmt::format("the request body is larger than the limit ({} bytes; --max-body-bytes)", opt_.max_body_bytes));
    } else {
      set_error(res, res.status, "bad_request", fmt::format("malformed HTTP request (status {})", res.status));
    }
    ++errors_;
    return httplib::Server::HandlerResponse::Handled;
  }));
  svr_.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      set_error(res, 500, "internal", e.what());
    } catch (...) {
      set_error(res, 500, "internal", "unknown failure");
    }
  });
  if (!opt_.token.empty()) {
    svr_.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      const std::string auth = req.get_header_value("Authorization");
      const std::string prefix = "Bearer ";
      if (auth.compare(0, prefix.size(), prefix) == 0 && same_token(auth.substr(prefix.size()), opt_.token))
        return httplib::Server::HandlerResponse::Unhandled;
      res.set_header("WWW-Authenticate", "Bearer");
      set_error(res, 401, "unauthorized", "missing or wrong bearer token (header 'Authorization: Bearer TOKEN')");
      ++errors_;
      return httplib::Server::HandlerResponse::Handled;
    });
  }
  int threads =
      opt_.threads > 0 ? opt_.threads : static_cast<int>(std::max(8u, 2 * std::thread::hardware_concurrency()));
  svr_.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  svr_.set_payload_max_length(opt_.max_body_bytes);
  auto rt = std::chrono::duration<double>(opt_.read_timeout_s);
  svr_.set_read_timeout(static_cast<time_t>(rt.count()),
                        static_cast<time_t>((rt.count() - std::floor(rt.count())) * 1e6));
  svr_.set_keep_alive_max_count(100000);
  svr_.set_tcp_nodelay(true);
}

void HttpServer::add_watchers() {
  if (!opt_.watch) return;
  for (auto& s : served_) {
    api::IndexInfo info = s->index->info();
    std::vector<std::string> skip = {fs::path(info.db).parent_path().string()};
    Served* sp = s.get();
    s->watcher = std::make_unique<RepoWatcher>(info.root, skip, opt_.watch_opt, [sp] {
      try {
        json st = sp->refresh(false);
        if (st.value("reloaded", false))
          log_info("{}: refreshed ({} files re-parsed, {} removed) in {:.2f} s", sp->name, st["parsed"].get<int64_t>(),
                   st["removed"].get<int64_t>(), st["seconds"].get<double>());
      } catch (const std::exception& e) {
        log_warn("{}: refresh failed: {}", sp->name, e.what());
      }
    });
  }
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

int HttpServer::run() {
  add_routes();
  install_handlers();
  int port = opt_.port;
  if (port == 0) {
    port = svr_.bind_to_any_port(opt_.host);
  } else if (!svr_.bind_to_port(opt_.host, port)) {
    port = -1;
  }
  if (port < 0)
    throw Error(ExitCode::usage, fmt::format("cannot listen on {}:{} (address in use or not local?); choose another "
                                             "--host/--port",
                                             opt_.host, opt_.port));
  add_watchers();
  std::atomic<bool> done{false};
  // Stops the server when SIGINT/SIGTERM sets the cancellation flag; stop() is retried because it does
  // nothing until listen_after_bind() has started.
  std::thread monitor([&] {
    while (!done && !interrupted()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    while (!done) {
      svr_.stop();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  // Each repository's snapshots warmed in the background (server/warmer.h); health says "warm".
  if (opt_.warm) {
    std::vector<std::pair<std::string, const api::Index*>> indexes;
    for (auto& s : served_) indexes.emplace_back(s->name, s->index.get());
    warmer_ = std::make_unique<IndexWarmer>(std::move(indexes));
  }
  announce(port);
  svr_.listen_after_bind();  // returns once stopped, after the request threads finished their requests
  done = true;
  monitor.join();
  warmer_.reset();
  log_info("stopping: requests in flight finished; waiting for background operations");
  for (auto& s : served_) s->watcher.reset();
  jobs_.join_all();
  log_info("stopped after {} requests", requests_.load());
  return 0;
}

}  // namespace

int serve_http(std::vector<ServedRepo> repos, const ServeOptions& opt) {
  HttpServer server(std::move(repos), opt);
  return server.run();
}

}  // namespace repoctx
