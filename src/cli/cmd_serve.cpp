// serve, mcp, report, bench-serve: repoctx behind an HTTP API and an MCP server, traces as HTML pages, and
// the serving benchmark.
#include <fmt/core.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "bench/serve.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "index/index.h"
#include "server/http_server.h"
#include "server/mcp_server.h"
#include "server/report.h"
#include "util/error.h"
#include "util/file_io.h"
#include "util/log.h"
#include "util/paths.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace repoctx {
namespace {

api::OpenParams open_params(const RepoOptions& r, const ModelOptions& m) {
  api::OpenParams p;
  p.index.db = r.db;
  p.index.max_file_mb = r.max_file_mb;
  p.index.follow_symlinks = r.follow_symlinks;
  p.index.keep_vendored = r.keep_vendored;
  p.index.keep_generated = r.keep_generated;
  p.index.threads = r.threads;
  p.index.snippet_lines = r.snippet_lines;
  p.refresh = !r.no_refresh;
  api::ModelParams& mp = p.models;
  mp.config = m.config;
  mp.backend = m.backend;
  mp.model = m.model;
  mp.endpoints = m.endpoints;
  mp.embed_backend = m.embed_backend;
  mp.embed_model = m.embed_model;
  mp.embed_endpoints = m.embed_endpoints;
  mp.snippet_embed_backend = m.snippet_embed_backend;
  mp.snippet_embed_model = m.snippet_embed_model;
  mp.snippet_embed_endpoints = m.snippet_embed_endpoints;
  mp.hidden_model = m.hidden_model;
  mp.threads = m.threads;
  mp.ctx = m.ctx;
  mp.cache = m.cache;
  mp.no_cache = m.no_cache;
  return p;
}

// The models a server offers requests, named at start: clients choose by name, never by path.
void add_model_file_options(CLI::App* c, std::vector<std::string>& structural, std::vector<std::string>& align) {
  c->add_option("--structural-model", structural,
                "[NAME=]FILE: a structural ranking model requests may choose by NAME (a bare FILE is 'default', "
                "used when a request names none; 'builtin' is always there)")
      ->group("Server");
  c->add_option("--align-model", align,
                "[NAME=]FILE: an AlignRetriever model requests may choose by NAME (parameter model_path)")
      ->group("Server");
}

ServerModels server_models(const std::vector<std::string>& structural, const std::vector<std::string>& align) {
  ServerModels m;
  for (const auto& s : structural) ServerModels::add(m.structural, s, "--structural-model");
  for (const auto& s : align) ServerModels::add(m.aligncoder, s, "--align-model");
  return m;
}

bool loopback(const std::string& host) {
  return host == "127.0.0.1" || host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

// ------------------------------------------------------------------------------------------ serve
struct ServeCmd {
  std::vector<std::string> repos;  // PATH or NAME=PATH
  RepoOptions repo;                // index options (repo itself unused)
  ModelOptions models;
  OutputOptions out;
  ServeOptions opt;
  bool no_watch = false, no_warm = false;
  std::vector<std::string> structural_models, align_models;

  int run() {
    opt.models = server_models(structural_models, align_models);
    if (opt.token.empty()) {
      if (const char* t = std::getenv("REPOCTX_SERVE_TOKEN")) opt.token = t;
    }
    if (!loopback(opt.host) && opt.token.empty())
      throw Error(ExitCode::usage, "serving on '" + opt.host +
                                       "' without a token would expose the repositories to the network: give --token "
                                       "(or REPOCTX_SERVE_TOKEN), or keep the default --host 127.0.0.1");
    if (repos.size() > 1 && !repo.db.empty())
      throw Error(ExitCode::usage, "--db names one index: give it with one repository only");
    opt.watch = !no_watch;
    opt.warm = !no_warm;
    std::vector<ServedRepo> served;
    for (const auto& spec : repos) {
      auto eq = spec.find('=');
      std::string path = eq == std::string::npos ? spec : spec.substr(eq + 1);
      std::string name = eq == std::string::npos ? fs::path(fs::absolute(path)).lexically_normal().filename().string()
                                                 : spec.substr(0, eq);
      if (name.empty()) name = "repo";
      for (const auto& s : served)
        if (s.name == name)
          throw Error(ExitCode::usage, "two repositories are named '" + name + "': name them with NAME=PATH");
      std::error_code ec;
      if (!fs::is_directory(path, ec))
        throw Error(ExitCode::not_found, "repository path '" + path + "' does not exist or is not a directory");
      // Loaded by the server once it listens (each on its own thread), so that one large repository does not
      // keep the others from answering.
      const std::string db = repo.db.empty() ? default_index_path(path) : repo.db;
      served.push_back(
          ServedRepo{name, path, nullptr,
                     [path, params = open_params(repo, models)] { return std::make_unique<api::Index>(path, params); },
                     !fs::exists(db, ec)});
    }
    return serve_http(std::move(served), opt);
  }
};

void add_index_flags(CLI::App* c, RepoOptions& o) {
  const char* g = "Index";
  c->add_option("--db", o.db, "index database (one repository only)")->group(g);
  c->add_flag("--no-refresh", o.no_refresh, "load the index as it is, without an incremental update first")->group(g);
  c->add_option("--max-file-mb", o.max_file_mb, "skip source files larger than this")->capture_default_str()->group(g);
  c->add_flag("--follow-symlinks", o.follow_symlinks, "follow directory symlinks")->group(g);
  c->add_flag("--keep-vendored", o.keep_vendored, "index vendored trees")->group(g);
  c->add_flag("--keep-generated", o.keep_generated, "index files marked as generated")->group(g);
  c->add_option("--threads", o.threads, "parser threads (0 = all cores)")->capture_default_str()->group(g);
  c->add_option("--snippet-lines", o.snippet_lines, "AlignCoder snippet length L")->capture_default_str()->group(g);
}

void add_serve(CLI::App& app, Commands& out) {
  auto s = std::make_shared<ServeCmd>();
  auto* c = app.add_subcommand("serve", "serve indexes over an HTTP JSON API (warm engines, one per repository)");
  c->add_option("repos", s->repos, "repositories to serve: PATH or NAME=PATH (the name requests use)")
      ->required()
      ->expected(1, -1);
  const char* g = "Server";
  c->add_option("--host", s->opt.host, "address to listen on")->capture_default_str()->group(g);
  c->add_option("--port", s->opt.port, "port (0 = any free port)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str()
      ->group(g);
  c->add_option("--token", s->opt.token, "bearer token every request must carry (default: $REPOCTX_SERVE_TOKEN)")
      ->group(g);
  c->add_option("--request-threads", s->opt.limits.threads, "worker threads for requests (0 = max(8, 2 x cores))")
      ->check(CLI::Range(0, 1024))
      ->group(g);
  c->add_option("--max-body-bytes", s->opt.limits.max_body_bytes, "largest request body (Content-Length or chunked)")
      ->check(CLI::Range(size_t{1}, size_t{1} << 30))
      ->capture_default_str()
      ->group(g);
  c->add_option("--header-timeout", s->opt.limits.header_timeout_s,
                "seconds a client has to send a request's line and headers (also the keep-alive idle time)")
      ->check(CLI::Range(0.1, 3600.0))
      ->capture_default_str()
      ->group(g);
  c->add_option("--body-timeout", s->opt.limits.body_timeout_s, "seconds a client has to send a request's body")
      ->check(CLI::Range(0.1, 3600.0))
      ->capture_default_str()
      ->group(g);
  c->add_option("--max-connections", s->opt.limits.max_connections,
                "open connections at most (the longest-waiting idle one is closed for a newcomer)")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str()
      ->group(g);
  c->add_option("--max-connections-per-client", s->opt.limits.max_connections_per_client,
                "open connections at most from one address")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str()
      ->group(g);
  c->add_option("--allow-host", s->opt.allow_hosts,
                "a Host name requests may use besides the loopback names and --host (e.g. a reverse proxy's)")
      ->group(g);
  c->add_option("--allow-origin", s->opt.allow_origins,
                "an Origin (scheme://host:port) whose web pages may call the server (none by default)")
      ->group(g);
  add_model_file_options(c, s->structural_models, s->align_models);
  c->add_option("--request-timeout", s->opt.request_timeout_s, "seconds a model operation or refresh may take")
      ->capture_default_str()
      ->group(g);
  c->add_option("--max-background", s->opt.max_background, "model operations and refreshes running at once")
      ->capture_default_str()
      ->group(g);
  c->add_flag("--no-watch", s->no_watch, "do not refresh the indexes when files change")->group(g);
  c->add_flag("--no-warm", s->no_warm,
              "do not build the per-file facts of LLM-free retrieval in the background after each load (each "
              "file's first request builds its own)")
      ->group(g);
  c->add_flag("--poll", s->opt.watch_opt.force_poll, "watch by polling instead of inotify")->group(g);
  // A zero, negative or NaN interval would poll in a busy loop (one index run after another).
  c->add_option("--poll-interval", s->opt.watch_opt.poll_s, "seconds between polls")
      ->check(finite_range(0.05, 3600, "seconds"))
      ->capture_default_str()
      ->group(g);
  c->add_option("--ready-file", s->opt.ready_file, "write {\"host\", \"port\", \"pid\"} here once listening")->group(g);
  add_index_flags(c, s->repo);
  add_output_options(c, s->out, false);
  add_model_options(c, s->models);
  out.push_back({c, [s] { return s->run(); }});
}

// -------------------------------------------------------------------------------------------- mcp
struct McpCmd {
  RepoOptions repo;
  ModelOptions models;
  OutputOptions out;
  McpOptions opt;
  bool no_watch = false, no_warm = false;
  std::vector<std::string> structural_models, align_models;

  int run() {
    opt.models = server_models(structural_models, align_models);
    opt.models.load();
    opt.watch = !no_watch;
    opt.warm = !no_warm;
    api::Index index(repo.repo, open_params(repo, models));
    McpServer server(index, opt);
    log_info("MCP server on stdio for {} (protocol {})", repo.repo, kMcpProtocolVersion);
    return server.serve(0, stdout);
  }
};

void add_mcp(CLI::App& app, Commands& out) {
  auto m = std::make_shared<McpCmd>();
  auto* c = app.add_subcommand("mcp", "Model Context Protocol server on stdio for one repository");
  add_repo_options(c, m->repo);
  add_output_options(c, m->out, false);
  add_model_options(c, m->models);
  c->add_option("--max-message-bytes", m->opt.max_message_bytes, "largest JSON-RPC message")
      ->check(CLI::Range(size_t{64}, size_t{1} << 30))
      ->capture_default_str()
      ->group("Server");
  add_model_file_options(c, m->structural_models, m->align_models);
  c->add_flag("--no-watch", m->no_watch, "do not refresh the index when files change")->group("Server");
  c->add_flag("--no-warm", m->no_warm,
              "do not build the per-file facts of LLM-free retrieval in the background after each load")
      ->group("Server");
  out.push_back({c, [m] { return m->run(); }});
}

// ----------------------------------------------------------------------------------------- report
struct ReportCmd {
  std::string trace, output;
  OutputOptions out;

  int run() const {
    std::string text = read_file(trace, "trace");
    json t = json::parse(text, nullptr, false);
    if (t.is_discarded())
      throw Error(ExitCode::bad_input, "'" + trace + "' is not valid JSON (write a trace with --trace FILE)");
    std::string html = render_report(t, fs::path(trace).filename().string());
    if (output.empty() || output == "-") {
      std::cout << html;
      return 0;
    }
    write_file(output, html);
    if (!out.quiet) log_info("wrote {} ({} bytes)", output, html.size());
    return 0;
  }
};

void add_report(CLI::App& app, Commands& out) {
  auto r = std::make_shared<ReportCmd>();
  auto* c = app.add_subcommand("report", "one self-contained HTML page for a retrieval or generation trace");
  c->add_option("trace", r->trace, "trace file (retrieve --strategy procedural --trace, generate --trace)")->required();
  c->add_option("-o,--output", r->output, "HTML file to write (default: stdout)");
  add_output_options(c, r->out, false);
  out.push_back({c, [r] { return r->run(); }});
}

// ------------------------------------------------------------------------------------ bench-serve
void add_bench_serve(CLI::App& app, Commands& out) {
  struct Bench {
    ServeBenchOptions o;
    OutputOptions out;
    std::string out_path;
  };
  auto b = std::make_shared<Bench>();
  auto* c = app.add_subcommand("bench-serve",
                               "cold CLI retrieve vs ripgrep, warm `serve` latency under concurrency, MCP round trips");
  c->add_option("repo", b->o.repo, "repository (indexed first if needed)")->required();
  c->add_option("--db", b->o.db, "index database");
  c->add_option("--query", b->o.query, "the cold query")->capture_default_str();
  c->add_option("--cold-runs", b->o.cold_runs, "runs of each cold command")->capture_default_str();
  c->add_option("--requests", b->o.requests, "warm requests per strategy")->capture_default_str();
  c->add_option("--clients", b->o.clients, "concurrent clients")->capture_default_str();
  c->add_option("--mcp-calls", b->o.mcp_calls, "MCP tools/call round trips")->capture_default_str();
  c->add_option("--mcp-sdk", b->o.mcp_sdk, "folder whose node_modules holds @modelcontextprotocol/sdk")
      ->default_str(REPOCTX_MCP_SDK_DIR);
  c->add_option("--rg", b->o.rg, "ripgrep executable")->capture_default_str();
  c->add_option("--node", b->o.node, "Node.js executable")->capture_default_str();
  c->add_option("--binary", b->o.binary,
                "repoctx executable the server, the cold runs and the MCP server run (default: this one; another "
                "build's executable compares two builds under the same client)")
      ->check(CLI::ExistingFile);
  c->add_option("--out", b->out_path, "also write the JSON report here");
  add_output_options(c, b->out);
  out.push_back({c, [b] {
                   if (b->o.cold_runs < 1 || b->o.requests < 1 || b->o.clients < 1 || b->o.mcp_calls < 1)
                     throw Error(ExitCode::usage, "--cold-runs, --requests, --clients and --mcp-calls must be >= 1");
                   if (b->o.mcp_sdk.empty()) b->o.mcp_sdk = REPOCTX_MCP_SDK_DIR;
                   if (b->o.binary.empty()) b->o.binary = self_exe();
                   b->o.mcp_script = data_file("bench/mcp_roundtrip.mjs");
                   json r = run_bench_serve(b->o);
                   if (!b->out_path.empty()) write_file(b->out_path, r.dump(2) + "\n");
                   if (b->out.json)
                     print_json(r);
                   else
                     std::cout << bench_serve_markdown(r);
                   return 0;
                 }});
}

}  // namespace

void add_serve_commands(CLI::App& app, Commands& out) {
  add_serve(app, out);
  add_mcp(app, out);
  add_report(app, out);
  add_bench_serve(app, out);
}

}  // namespace repoctx
