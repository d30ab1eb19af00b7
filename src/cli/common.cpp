#include "cli/common.h"

#include <fmt/core.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "generate/generator.h"
#include "util/error.h"
#include "util/log.h"
#include "util/text.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace repoctx {

void add_output_options(CLI::App* c, OutputOptions& o, bool json) {
  // The log level is set as the flag is parsed, so it holds before any handler runs.
  c->add_flag("-q,--quiet", o.quiet, "only warnings and errors on stderr")
      ->group("Output")
      ->each([](const std::string&) { g_log_level = static_cast<int>(LogLevel::warn); });
  c->add_flag("-v,--verbose", o.verbose, "debug messages (timings) on stderr")
      ->group("Output")
      ->each([](const std::string&) { g_log_level = static_cast<int>(LogLevel::debug); });
  if (json) c->add_flag("--json", o.json, "machine-readable output on stdout")->group("Output");
}

CLI::Validator top_k_range() {
  return CLI::Range(1, kMaxTopK);
}

CLI::Validator finite_range(double lo, double hi, const std::string& what) {
  return CLI::Validator(
      [lo, hi, what](std::string& s) -> std::string {
        const char* b = s.c_str();
        char* end = nullptr;
        double v = std::strtod(b, &end);
        if (end == b || *end != '\0' || !std::isfinite(v) || v < lo || v > hi)
          return fmt::format("'{}' is not a number of {} between {} and {}", s, what, lo, hi);
        return {};
      },
      fmt::format("{} in [{} - {}]", what, lo, hi));
}

void print_json(const json& j) {
  std::cout << j.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
}

void exit_after_output(int code) {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  std::quick_exit(code);
}

void add_repo_options(CLI::App* c, RepoOptions& o, bool refresh) {
  c->add_option("repo", o.repo,
                "repository root (a folder of Python, Java, Go, JavaScript/TypeScript, Rust, C/C++ or C# sources)")
      ->required();
  c->add_option("--db", o.db,
                "index database (default: <repo>/.repoctx/index.db for git trees, else "
                "~/.cache/repoctx/indexes/...)");
  if (refresh) c->add_flag("--no-refresh", o.no_refresh, "use the index as it is, without an incremental update first");
  const char* g = refresh ? "Index (used by the automatic refresh)" : "Index";
  c->add_option("--max-file-mb", o.max_file_mb, "skip (with a warning) source files larger than this")
      ->capture_default_str()
      ->group(g);
  c->add_flag("--follow-symlinks", o.follow_symlinks, "follow directory symlinks (loops are detected)")->group(g);
  c->add_flag("--keep-vendored", o.keep_vendored, "index vendored trees (vendor/, third_party/, extern/, ...)")
      ->group(g);
  c->add_flag("--keep-generated", o.keep_generated, "index files marked as generated (\"do not edit\", *_pb2.py)")
      ->group(g);
  c->add_option("--threads", o.threads, "parser threads (0 = all cores)")->capture_default_str()->group(g);
  c->add_option("--snippet-lines", o.snippet_lines, "AlignCoder split-aggregate snippet length L")
      ->capture_default_str()
      ->group(g);
}

IndexOptions index_options(const RepoOptions& o, bool progress) {
  IndexOptions io;
  io.db_path = o.db;
  io.threads = o.threads;
  io.snippet_lines = o.snippet_lines;
  io.walk.max_file_bytes = static_cast<uint64_t>(o.max_file_mb * 1048576.0);
  io.walk.follow_symlinks = o.follow_symlinks;
  io.walk.skip_vendored = !o.keep_vendored;
  io.walk.skip_generated = !o.keep_generated;
  io.progress = progress;
  return io;
}

std::string db_path_for(const RepoOptions& o) {
  return o.db.empty() ? default_index_path(o.repo) : o.db;
}

void refresh_index(const RepoOptions& o, const OutputOptions& out) {
  if (!fs::exists(o.repo)) throw Error(ExitCode::not_found, "repository path '" + o.repo + "' does not exist");
  if (o.no_refresh) return;
  IndexOptions io = index_options(o, !out.quiet);
  // A query's refresh keeps the index's own settings unless the command was given other ones.
  const RepoOptions d;
  io.keep_stored_settings = o.max_file_mb == d.max_file_mb && o.follow_symlinks == d.follow_symlinks &&
                            o.keep_vendored == d.keep_vendored && o.keep_generated == d.keep_generated &&
                            o.snippet_lines == d.snippet_lines;
  IndexStats st = build_index(o.repo, io);
  warn_if_empty(st, o.repo);
  if (st.parsed > 0 && !out.quiet) log_info("index refreshed: {} files re-parsed", st.parsed);
}

std::unique_ptr<Engine> open_engine(const RepoOptions& o, const OutputOptions& out) {
  refresh_index(o, out);
  return Engine::open(db_path_for(o));
}

void warn_if_empty(const IndexStats& st, const std::string& repo) {
  if (st.files_seen > 0) return;
  log_warn(
      "no source files (Python, Java, Go, JavaScript/TypeScript, Rust, C) under '{}'{}: the index is empty (`repoctx "
      "files {} --skipped` lists "
      "what the walk skipped)",
      repo, st.skipped ? fmt::format(" ({} skipped)", st.skipped) : "", repo);
}

void add_model_options(CLI::App* c, ModelOptions& f) {
  const char* g = "Model";
  c->add_option("--config", f.config, "model configuration file (JSON; see docs/LLM.md)")->group(g);
  c->add_option("--backend", f.backend, "llama (in-process GGUF) or openai (OpenAI-compatible server)")->group(g);
  c->add_option("--model", f.model, "GGUF file (llama) or model name (openai)")->group(g);
  c->add_option("--endpoint", f.endpoints,
                "OpenAI-compatible base URL, e.g. http://127.0.0.1:8080/v1 (repeatable: round-robin with failover)")
      ->group(g);
  c->add_option("--embed-backend", f.embed_backend, "backend of the embedding model (default: as --backend)")->group(g);
  c->add_option("--embed-model", f.embed_model, "embedding model (GGUF file or model name); default: the LLM")
      ->group(g);
  c->add_option("--embed-endpoint", f.embed_endpoints, "embedding server base URL (repeatable)")->group(g);
  c->add_option("--snippet-embed-backend", f.snippet_embed_backend,
                "backend of the snippet-validation embedding model (default: as --embed-backend)")
      ->group(g);
  c->add_option("--snippet-embed-model", f.snippet_embed_model,
                "embedding model of ProjAgent's snippet validation (GGUF file or model name); default: the "
                "embedding model")
      ->group(g);
  c->add_option("--snippet-embed-endpoint", f.snippet_embed_endpoints,
                "snippet-validation embedding server base URL (repeatable)")
      ->group(g);
  c->add_option("--hidden-model", f.hidden_model,
                "GGUF file whose hidden states project steps (procedural; default: the LLM, which must then be a GGUF)")
      ->group(g);
  c->add_option("--llm-threads", f.threads, "llama backend threads (0 = all cores)")->group(g);
  c->add_option("--ctx", f.ctx, "llama backend context length")->group(g);
  c->add_option("--cache", f.cache, "LLM cache database (default ~/.cache/repoctx/llm-cache.db)")->group(g);
  c->add_flag("--no-cache", f.no_cache, "do not read cached LLM results (fresh results are still stored)")->group(g);
}

LlmConfig llm_config(const ModelOptions& f) {
  return llm_config_from(f);
}

ModelSet open_models(const ModelOptions& o, const ModelNeeds& needs) {
  ModelSet s;
  if (!needs.any()) return s;
  s.session = std::make_unique<LlmSession>(llm_config(o));
  s.models = s.session->models(needs);
  return s;
}

json hit_json(const Engine& e, const Hit& h, int rank, bool with_text, const TargetContext* ctx) {
  const auto& v = e.view();
  json j;
  j["rank"] = rank;
  j["type"] = h.type == Hit::Type::entity ? "entity" : h.type == Hit::Type::snippet ? "snippet" : "file";
  j["file"] = hit_path(v, h);
  if (h.entity >= 0) {
    const auto& en = v.entities()[h.entity];
    j["qualname"] = en.qualname;
    j["kind"] = kind_name(en.kind);
    j["target"] = e.target_name(h.entity);
  }
  j["start_line"] = h.start_line;
  j["end_line"] = h.end_line;
  j["score"] = h.score;
  if (!h.label.empty()) j["label"] = h.label;
  if (!h.description.empty()) j["description"] = sanitize_utf8(h.description);
  if (!h.features.empty()) j["features"] = h.features;
  if (with_text) {
    std::string text = h.text;
    if (text.empty() && h.file >= 0) {
      bool masked = ctx && h.file == ctx->target.file;
      const std::string& content = masked ? ctx->masked_content : v.content(h.file);
      auto starts = line_starts(content);
      text = std::string(line_range(content, starts, h.start_line, h.end_line));
    }
    j["text"] = sanitize_utf8(text);
  }
  return j;
}

void apply_params(ProceduralParams& p, const std::vector<std::string>& kvs, CompletionParams* completion) {
  for (const auto& kv : kvs) {
    auto eq = kv.find('=');
    if (eq == std::string::npos) throw Error(ExitCode::usage, "--param takes NAME=VALUE, got '" + kv + "'");
    json v = json::parse(kv.substr(eq + 1), nullptr, false);
    if (v.is_discarded()) v = kv.substr(eq + 1);
    std::string name = kv.substr(0, eq);
    if (completion && CompletionParams::has(name))
      completion->apply(json{{name, v}});
    else
      p.apply(json{{name, v}});
  }
}

void apply_params(GenerationParams& g, const std::vector<std::string>& kvs) {
  for (const auto& kv : kvs) {
    auto eq = kv.find('=');
    if (eq == std::string::npos) throw Error(ExitCode::usage, "--param takes NAME=VALUE, got '" + kv + "'");
    json v = json::parse(kv.substr(eq + 1), nullptr, false);
    if (v.is_discarded()) v = kv.substr(eq + 1);
    g.apply(json{{kv.substr(0, eq), v}});
  }
}

void apply_params(RetrieverOptions& ro, const std::vector<std::string>& kvs) {
  for (const auto& kv : kvs) {
    auto eq = kv.find('=');
    if (eq == std::string::npos) throw Error(ExitCode::usage, "--param takes NAME=VALUE, got '" + kv + "'");
    apply_retriever_param(ro, kv.substr(0, eq), kv.substr(eq + 1));
  }
}

std::vector<std::string> read_target_specs(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(ExitCode::not_found, "cannot read targets file '" + path + "'");
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);)
    if (!trim(line).empty() && trim(line)[0] != '#') out.emplace_back(trim(line));
  return out;
}

std::vector<std::string> split_list(const std::string& csv) {
  std::vector<std::string> out;
  std::stringstream ss(csv);
  for (std::string item; std::getline(ss, item, ',');) {
    auto t = std::string(trim(item));
    if (!t.empty()) out.push_back(t);
  }
  return out;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  if (!f) throw Error(ExitCode::bad_input, "cannot write '" + path + "' (does its folder exist and is it writable?)");
}

std::string self_exe() {
  return fs::read_symlink("/proc/self/exe").string();
}

std::vector<std::string> g_argv;

}  // namespace repoctx
