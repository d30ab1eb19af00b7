// The public API (include/repoctx/repoctx.h) on the engine: snapshots swapped under a shared_ptr, models
// loaded on first use and used one operation at a time.
#include <cctype>
#include <chrono>
#include <filesystem>
#include <mutex>

#include <nlohmann/json.hpp>

#include "api/requests.h"
#include "generate/generator.h"
#include "index/index.h"
#include "llm/config.h"
#include "repoctx/repoctx.h"
#include "retrieve/aligncoder_snippets.h"
#include "retrieve/procedural/agent_tools.h"
#include "retrieve/retriever.h"
#include "retrieve/structural/structural.h"
#include "util/error.h"
#include "util/log.h"
#include "util/text.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace repoctx::api {

namespace {

// One loaded, immutable state of the index. Readers hold it by shared_ptr for the length of one operation;
// the RepoView inside reads a single SQLite snapshot, so a refresh committing meanwhile is invisible to it.
struct Snapshot {
  std::unique_ptr<Engine> engine;
  double load_seconds = 0;
  int64_t generation = 0;
};

IndexOptions index_options_of(const IndexParams& p) {
  IndexOptions io;
  io.db_path = p.db;
  io.threads = p.threads;
  io.snippet_lines = p.snippet_lines;
  io.walk.max_file_bytes = static_cast<uint64_t>(p.max_file_mb * 1048576.0);
  io.walk.follow_symlinks = p.follow_symlinks;
  io.walk.skip_vendored = !p.keep_vendored;
  io.walk.skip_generated = !p.keep_generated;
  io.progress = false;
  // The refreshes of an open index are automatic: they keep the index's own settings unless the caller
  // chose other ones.
  const IndexParams d;
  io.keep_stored_settings = p.max_file_mb == d.max_file_mb && p.follow_symlinks == d.follow_symlinks &&
                            p.keep_vendored == d.keep_vendored && p.keep_generated == d.keep_generated &&
                            p.snippet_lines == d.snippet_lines;
  return io;
}

ModelFlags model_flags_of(const ModelParams& m) {
  ModelFlags f;
  f.config = m.config;
  f.backend = m.backend;
  f.model = m.model;
  f.endpoints = m.endpoints;
  f.embed_backend = m.embed_backend;
  f.embed_model = m.embed_model;
  f.embed_endpoints = m.embed_endpoints;
  f.snippet_embed_backend = m.snippet_embed_backend;
  f.snippet_embed_model = m.snippet_embed_model;
  f.snippet_embed_endpoints = m.snippet_embed_endpoints;
  f.hidden_model = m.hidden_model;
  f.threads = m.threads;
  f.ctx = m.ctx;
  f.cache = m.cache;
  f.no_cache = m.no_cache;
  return f;
}

Hit hit_of(const Engine& e, const repoctx::Hit& h, int rank, bool with_text, const TargetContext* ctx) {
  const auto& v = e.view();
  Hit o;
  o.rank = rank;
  o.type = h.type == repoctx::Hit::Type::entity ? "entity" : h.type == repoctx::Hit::Type::snippet ? "snippet" : "file";
  o.file = hit_path(v, h);
  if (h.entity >= 0) {
    const auto& en = v.entities()[h.entity];
    o.qualname = en.qualname;
    o.kind = kind_name(en.kind);
    o.target = e.target_name(h.entity);
  }
  o.start_line = h.start_line;
  o.end_line = h.end_line;
  o.score = h.score;
  o.label = h.label;
  o.description = sanitize_utf8(h.description);
  o.features = h.features;
  if (with_text) {
    std::string text = h.text;
    if (text.empty() && h.file >= 0) {
      // The target's own file reads without the hidden body.
      bool masked = ctx && h.file == ctx->target.file;
      const std::string& content = masked ? ctx->masked_content : v.content(h.file);
      auto starts = line_starts(content);
      text = std::string(line_range(content, starts, h.start_line, h.end_line));
    }
    o.text = sanitize_utf8(text);
  }
  return o;
}

std::string lowercase(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string usage_text(const LlmUsage& u) {
  return u.by_purpose.empty() ? std::string() : u.to_json().dump();
}

ToolText tool_text(const ToolResult& r) {
  // The tools' errors say what was wrong and what to do; outside the repository, missing files and bad
  // patterns are all bad input from the caller's side.
  if (!r.ok) throw Error(ExitCode::bad_input, r.error);
  return ToolText{r.output};
}

ToolLimits limits_of(int max_chars, int max_matches, int max_lines) {
  ToolLimits l;
  if (max_chars <= 0 || max_matches < 0 || max_lines <= 0)
    throw Error(ExitCode::usage, "max_chars, max_lines and max_matches must be positive");
  l.max_output_chars = static_cast<size_t>(std::min(max_chars, 1 << 20));
  if (max_matches > 0) l.max_matches = std::min(max_matches, 100000);
  l.max_lines = std::min(max_lines, 100000);
  l.max_entries = l.max_lines;
  return l;
}

}  // namespace

struct Index::Impl {
  std::string repo;
  OpenParams params;
  mutable std::mutex snap_mu;
  std::shared_ptr<const Snapshot> snap;
  std::mutex refresh_mu;
  int64_t loads = 0;
  // Model backends are not re-entrant (one llama context, one cache connection per session): operations
  // that use a model hold this for their whole length.
  mutable std::mutex model_mu;
  mutable std::unique_ptr<LlmSession> session;

  std::shared_ptr<const Snapshot> current() const {
    std::lock_guard lk(snap_mu);
    return snap;
  }

  std::string db_path() const { return params.index.db.empty() ? default_index_path(repo) : params.index.db; }

  std::shared_ptr<const Snapshot> load() {
    auto t0 = std::chrono::steady_clock::now();
    auto s = std::make_shared<Snapshot>();
    s->engine = Engine::open(db_path());
    // The sparse corpus is what most queries read first: built now, so that no request pays for it.
    s->engine->entity_bm25();
    s->load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    s->generation = ++loads;
    return s;
  }

  void publish(std::shared_ptr<const Snapshot> s) {
    std::lock_guard lk(snap_mu);
    snap = std::move(s);
  }

  LlmSession& llm_session() const {
    if (!session) session = std::make_unique<LlmSession>(llm_config_from(model_flags_of(params.models)));
    return *session;
  }
};

Index::Index(const std::string& repo, const OpenParams& params) : impl_(std::make_unique<Impl>()) {
  impl_->repo = repo;
  impl_->params = params;
  std::error_code ec;
  if (!fs::is_directory(repo, ec))
    throw Error(ExitCode::not_found, "repository path '" + repo + "' does not exist or is not a directory");
  if (params.refresh) build_index(repo, index_options_of(params.index));
  impl_->publish(impl_->load());
}

Index::~Index() = default;
Index::Index(Index&&) noexcept = default;
Index& Index::operator=(Index&&) noexcept = default;

const std::string& Index::repo() const {
  return impl_->repo;
}

RefreshStats Index::refresh(bool force) {
  std::lock_guard lk(impl_->refresh_mu);
  std::error_code ec;
  if (!fs::is_directory(impl_->repo, ec))
    throw Error(ExitCode::not_found,
                "repository '" + impl_->repo + "' is gone (deleted or unmounted); the last loaded index keeps serving");
  IndexOptions io = index_options_of(impl_->params.index);
  io.force = force;
  IndexStats st = build_index(impl_->repo, io);
  RefreshStats r;
  r.db = st.db_path;
  r.files = static_cast<int64_t>(st.files_seen);
  r.parsed = static_cast<int64_t>(st.parsed);
  r.unchanged = static_cast<int64_t>(st.unchanged);
  r.removed = static_cast<int64_t>(st.removed);
  r.skipped = static_cast<int64_t>(st.skipped);
  r.with_errors = static_cast<int64_t>(st.files_with_errors);
  r.entities = static_cast<int64_t>(st.entities);
  r.seconds = st.seconds;
  r.complete = st.complete;
  // An interrupted run leaves a consistent but partial index: the previous snapshot keeps serving, and the
  // next refresh finishes the run and swaps.
  bool changed = st.parsed > 0 || st.removed > 0 || !impl_->current()->engine->view().complete();
  if (st.complete && changed) {
    impl_->publish(impl_->load());
    r.reloaded = true;
  }
  return r;
}

int64_t Index::warm(const std::function<bool()>& should_stop) const {
  auto snap = impl_->current();
  return warm_structural(*snap->engine, should_stop) ? snap->generation : 0;
}

RetrieveResult Index::retrieve(const RetrieveParams& request) const {
  RetrieveParams p = request;
  p.strategy = strategy_for(request);
  const RetrieverInfo& info = retriever_info(p.strategy);  // an unknown name fails before any work
  RetrieverOptions ro = retriever_options(p);
  auto snap = impl_->current();
  const Engine& eng = *snap->engine;
  RetrievalQuery q = retrieval_query(eng, p);
  RetrievalResult res;
  ModelNeeds needs = retriever_needs(p.strategy, ro);
  if (needs.any()) {
    std::lock_guard lk(impl_->model_mu);
    Models models = impl_->llm_session().models(needs);
    res = run_retrieval(eng, *make_retriever(p.strategy, eng, models, ro), q, p);
  } else {
    res = run_retrieval(eng, *make_retriever(p.strategy, eng, Models{}, ro), q, p);
  }
  RetrieveResult out;
  out.strategy = p.strategy;
  out.score = info.score;
  if (q.target) out.target = eng.target_name(q.target->entity);
  out.query = searched_text(eng, q, ro);
  int rank = 1;
  for (const auto& h : res.hits) out.hits.push_back(hit_of(eng, h, rank++, p.with_text, q.context.get()));
  for (const auto& st : res.plan) {
    PlanStep ps{st.id, sanitize_utf8(st.description), st.confirmed, {}};
    for (size_t i : st.hits) ps.hits.push_back(static_cast<int>(i) + 1);
    out.plan.push_back(std::move(ps));
  }
  if (p.trace && !res.trace.is_null()) out.trace = res.trace.dump(-1, ' ', false, json::error_handler_t::replace);
  out.usage = usage_text(res.usage);
  return out;
}

LocalizeResult Index::localize(const LocalizeParams& p) const {
  const RetrieverInfo& info = retriever_info(p.strategy);
  if (!info.localizes) {
    std::string names;
    for (const auto& s : localize_strategies()) names += (names.empty() ? "" : ", ") + s.name;
    throw Error(ExitCode::usage, "'" + p.strategy + "' is not a localization strategy (localize runs: " + names + ")");
  }
  if (trim(p.request).empty()) throw Error(ExitCode::usage, "give the request: an issue text or a commit message");
  RetrieverOptions ro;
  ro.locate_model = p.locate_model;
  for (const auto& [name, value] : p.params) apply_retriever_param(ro, name, value);
  auto snap = impl_->current();
  const Engine& eng = *snap->engine;
  RetrievalQuery q;
  q.text = p.request;
  RetrievalResult res;
  if (info.needs.any()) {
    std::lock_guard lk(impl_->model_mu);
    res = make_retriever(p.strategy, eng, impl_->llm_session().models(info.needs), ro)->run(q);
  } else {
    res = make_retriever(p.strategy, eng, Models{}, ro)->run(q);
  }
  LocalizeResult out;
  out.strategy = p.strategy;
  out.score = info.score;
  if (res.trace.is_object()) {
    out.context_tokens = res.trace.value("context_tokens", 0);
    out.stop_reason = res.trace.value("stop_reason", "");
  }
  int rank = 1;
  for (const auto& h : res.hits) out.hits.push_back(hit_of(eng, h, rank++, p.with_text, nullptr));
  if (p.trace && !res.trace.is_null()) out.trace = res.trace.dump(-1, ' ', false, json::error_handler_t::replace);
  out.usage = usage_text(res.usage);
  return out;
}

std::vector<Symbol> Index::symbols(const SymbolsParams& p) const {
  auto snap = impl_->current();
  const Engine& eng = *snap->engine;
  const auto& v = eng.view();
  if (!p.kind.empty() && !kind_from_name(p.kind))
    throw Error(ExitCode::usage, "unknown kind '" + p.kind + "' (class, function, method, variable, attribute, ...)");
  if (!p.file.empty() && !v.file_by_path(p.file))
    throw Error(ExitCode::not_found, "file '" + p.file + "' is not in the index (paths are relative to the root)");
  if (p.limit < 0) throw Error(ExitCode::usage, "limit must be >= 0");
  std::string needle = lowercase(p.name);
  std::vector<Symbol> out;
  auto visit = [&](int i) {
    const auto& e = v.entities()[i];
    const auto& f = v.files()[e.file];
    if (!p.kind.empty() && p.kind != kind_name(e.kind)) return true;
    if (!needle.empty() && lowercase(e.qualname).find(needle) == std::string::npos) return true;
    out.push_back(Symbol{f.path, f.module, e.qualname, kind_name(e.kind), sanitize_utf8(e.signature),
                         f.path + "::" + e.qualname, e.start_line, e.end_line, e.decorated_start_line});
    return p.limit == 0 || static_cast<int>(out.size()) < p.limit;
  };
  if (!p.file.empty()) {
    const FileRec& f = v.files()[*v.file_by_path(p.file)];
    for (int i = f.first_entity; i < f.first_entity + f.n_entities; ++i)
      if (!visit(i)) break;
  } else {
    for (int i = 0; i < static_cast<int>(v.entities().size()); ++i)
      if (!visit(i)) break;
  }
  return out;
}

std::vector<FileInfo> Index::files(const FilesParams& p) const {
  auto snap = impl_->current();
  std::vector<FileInfo> out;
  for (const auto& f : snap->engine->view().files()) {
    if (p.errors_only && f.n_errors == 0) continue;
    out.push_back(FileInfo{f.path, f.module, language_name(f.language), f.line_count, f.n_entities, f.n_errors});
  }
  return out;
}

std::vector<Snippet> Index::snippets(const SnippetsParams& p) const {
  auto snap = impl_->current();
  const Engine& eng = *snap->engine;
  const auto& v = eng.view();
  auto f = v.file_by_path(p.file);
  if (!f)
    throw Error(ExitCode::not_found, "file '" + p.file + "' is not in the index (paths are relative to the root)");
  std::vector<Snippet> out;
  if (p.dependency) {
    for (const auto& d : dependency_snippets(eng, *f)) out.push_back(Snippet{0, 0, d.label, sanitize_utf8(d.text)});
    return out;
  }
  const FileRec& fr = v.files()[*f];
  for (int s = fr.first_snippet; s < fr.first_snippet + fr.n_snippets; ++s)
    out.push_back(
        Snippet{v.snippets()[s].start_line, v.snippets()[s].end_line, "", sanitize_utf8(eng.snippet_text(s))});
  return out;
}

ToolText Index::read(const ReadParams& p) const {
  if (p.start_line < 1) throw Error(ExitCode::usage, "start_line is 1-based: give 1 or more");
  if (p.end_line != 0 && p.end_line < p.start_line) throw Error(ExitCode::usage, "end_line is before start_line");
  auto snap = impl_->current();
  RepoTools tools(*snap->engine, nullptr, limits_of(p.max_chars, 0, p.max_lines));
  return tool_text(tools.read_lines(p.path, p.start_line, p.end_line));
}

ToolText Index::grep(const GrepParams& p) const {
  auto snap = impl_->current();
  RepoTools tools(*snap->engine, nullptr, limits_of(p.max_chars, p.max_matches, 200));
  return tool_text(tools.grep(p.pattern, p.path, p.fixed));
}

GenerateResult Index::generate(const GenerateParams& p) const {
  check_generation_method(p.method);
  if (p.target.empty()) throw Error(ExitCode::usage, "generate needs a target (path::Qual.name)");
  GenerationParams gp;
  gp.method = p.method;
  gp.prompt_budget_tokens = p.prompt_budget_tokens;
  gp.max_tokens = p.max_tokens;
  gp.max_rounds = p.max_rounds;
  for (const auto& [name, value] : p.params) {
    json v = json::parse(value, nullptr, false);
    gp.apply(json{{name, v.is_discarded() ? json(value) : v}});
  }
  auto snap = impl_->current();
  const Engine& eng = *snap->engine;
  TargetRef t = eng.resolve_target(p.target);
  std::lock_guard lk(impl_->model_mu);
  Models models = impl_->llm_session().models(generation_method_needs(p.method));
  GenerationOutcome g = generate_function(eng, models, t, gp);
  GenerateResult out;
  out.method = g.method;
  out.target = eng.target_name(t.entity);
  out.body = sanitize_utf8(g.body);
  out.function_text = sanitize_utf8(g.function_text);
  out.diff = sanitize_utf8(g.diff);
  out.rounds = g.rounds;
  for (const auto& f : g.findings) out.findings.push_back(f.to_json().dump());
  if (p.trace && !g.trace.is_null()) out.trace = g.trace.dump(-1, ' ', false, json::error_handler_t::replace);
  out.usage = usage_text(g.usage);
  return out;
}

IndexInfo Index::info() const {
  auto snap = impl_->current();
  const auto& v = snap->engine->view();
  IndexInfo i;
  i.root = v.root();
  i.db = v.db_path();
  i.files = static_cast<int64_t>(v.files().size());
  i.entities = static_cast<int64_t>(v.entities().size());
  i.snippets = static_cast<int64_t>(v.snippets().size());
  i.complete = v.complete();
  i.fast_load = v.image() != nullptr;
  i.load_seconds = snap->load_seconds;
  i.generation = snap->generation;
  return i;
}

CacheStats Index::cache_stats() const {
  std::lock_guard lk(impl_->model_mu);
  LlmCache& cache = impl_->llm_session().cache();
  repoctx::CacheStats st = cache.stats();
  CacheStats out;
  out.path = cache.path();
  out.hits = st.hits;
  out.misses = st.misses;
  for (const auto& [key, row] : st.by_op_model) {
    auto tab = key.find('\t');
    out.rows.push_back(CacheStatsRow{key.substr(0, tab), tab == std::string::npos ? "" : key.substr(tab + 1),
                                     row.entries, row.prompt_tokens, row.completion_tokens});
  }
  return out;
}

bool Index::has_llm() const {
  std::lock_guard lk(impl_->model_mu);
  return impl_->llm_session().has_llm();
}

std::vector<StrategyInfo> strategies() {
  std::vector<StrategyInfo> out;
  for (const auto& r : retriever_registry())
    out.push_back(StrategyInfo{r.name, r.description, r.needs.describe(), r.score});
  return out;
}

std::vector<StrategyInfo> localize_strategies() {
  std::vector<StrategyInfo> out;
  for (const auto& r : retriever_registry())
    if (r.localizes) out.push_back(StrategyInfo{r.name, r.description, r.needs.describe(), r.score});
  return out;
}

std::vector<std::string> generation_methods() {
  return repoctx::generation_methods();
}

int error_code(const std::exception& e) {
  if (auto* err = dynamic_cast<const Error*>(&e)) return static_cast<int>(err->code());
  return static_cast<int>(ExitCode::failure);
}

}  // namespace repoctx::api
