#include "retrieve/structural.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "retrieve/retriever.h"
#include "retrieve/structural_gbdt.h"
#include "util/error.h"
#include "util/text.h"

namespace repoctx {

// The shipped model, embedded at build time from models/structural.json (see src/CMakeLists.txt).
extern const char* const kDefaultStructuralModel;

namespace {

enum F : int {
  f_class_direct,
  f_class_inherited,
  f_module,
  f_import,
  f_modattr,
  f_visible_member,
  f_accessible,
  f_global_bm25,
  f_neighbour,
  f_kind_function,
  f_kind_method,
  f_kind_class,
  f_kind_variable,
  f_kind_attribute,
  f_private,
  f_dunder,
  f_upper,
  f_bm25_rel,
  f_bm25_log,
  f_bm25_rank,
  f_name_in_query,
  f_name_overlap,
  f_vote,
  f_vote_count,
  f_vote_top5,
  f_file_usage,
  f_file_usage_frac,
  f_class_usage,
  f_import_unused,
  f_import_uses,
  f_proximity,
  f_param_match,
  f_method_of_own_class_private,
  // Per-target normalised evidence and interactions (raw counts differ between repositories).
  f_vote_rel,
  f_vote_rank,
  f_vote_file,
  f_vote_class,
  f_usage_rank,
  f_target_name_overlap,
  f_name_stem,
  f_direct_method,
  f_direct_attribute,
  f_module_function,
  f_module_class,
  f_import_class,
  f_import_function,
  f_popularity,
  f_popularity_rank,
  f_exception_class,
  // Module co-use: which members of a module the repository uses, and uses together.
  f_module_share,
  f_module_member_rank,
  f_module_file_uses,
  f_module_couse,
  f_module_couse_log,
  f_file_imported,
  // Same-file neighbours: the functions of the target's file most like it vote for what
  // they use (the global neighbours rarely include the target's own file's functions).
  f_local_vote,
  f_local_vote_rank,
  f_local_vote_rel,
  f_count
};

const std::vector<std::string> kFeatureNames = {
    "class_direct",
    "class_inherited",
    "module",
    "import",
    "modattr",
    "visible_member",
    "accessible",
    "global_bm25",
    "neighbour",
    "kind_function",
    "kind_method",
    "kind_class",
    "kind_variable",
    "kind_attribute",
    "private",
    "dunder",
    "upper",
    "bm25_rel",
    "bm25_log",
    "bm25_rank",
    "name_in_query",
    "name_overlap",
    "vote",
    "vote_count",
    "vote_top5",
    "file_usage",
    "file_usage_frac",
    "class_usage",
    "import_unused",
    "import_uses",
    "proximity",
    "param_match",
    "own_class_private_method",
    "vote_rel",
    "vote_rank",
    "vote_file",
    "vote_class",
    "usage_rank",
    "target_name_overlap",
    "name_stem",
    "direct_method",
    "direct_attribute",
    "module_function",
    "module_class",
    "import_class",
    "import_function",
    "popularity",
    "popularity_rank",
    "exception_class",
    "module_share",
    "module_member_rank",
    "module_file_uses",
    "module_couse",
    "module_couse_log",
    "file_imported",
    "local_vote",
    "local_vote_rank",
    "local_vote_rel",
};

std::unordered_set<std::string> identifiers(std::string_view text) {
  std::unordered_set<std::string> out;
  size_t i = 0;
  while (i < text.size()) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (std::isalpha(c) || c == '_') {
      size_t j = i;
      while (j < text.size() && (std::isalnum(static_cast<unsigned char>(text[j])) || text[j] == '_')) ++j;
      out.emplace(text.substr(i, j - i));
      i = j;
    } else {
      ++i;
    }
  }
  return out;
}

// Subword tokens of a name, without the compound form.
std::vector<std::string> name_parts(const std::string& name) {
  std::vector<std::string> toks = tokenize_code(name), out;
  for (auto& t : toks)
    if (t.find('_') == std::string::npos && t != [&] {
          std::string l;
          for (char c : name) l.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
          return l;
        }())
      out.push_back(t);
  if (out.empty() && !toks.empty()) out.push_back(toks.front());
  return out;
}

// The outermost function or method containing an entity (the "unit" whose references are its usage).
int unit_of(const RepoView& v, int e) {
  const auto& ents = v.entities();
  int unit = -1;
  for (int cur = e; cur >= 0; cur = ents[cur].parent_index)
    if (is_callable(ents[cur].kind)) unit = cur;
  return unit;
}

// A unit itself: the functions module co-use counts as users (users_of).
bool is_unit(const RepoView& v, int e) {
  return is_callable(v.entities()[e].kind) && unit_of(v, e) == e;
}

}  // namespace

const std::vector<std::string>& structural_feature_names() {
  return kFeatureNames;
}

// ---------------------------------------------------------------------------------------------- model
double StructuralModel::score(const std::vector<double>& x) const {
  double z = bias;
  for (size_t i = 0; i < weights.size() && i < x.size(); ++i) z += weights[i] * (x[i] - mean[i]) / scale[i];
  return z;
}

std::vector<double> StructuralModel::score_rows(const std::vector<std::vector<double>>& rows) const {
  std::vector<double> out;
  out.reserve(rows.size());
  for (const auto& x : rows) out.push_back(score(x));
  return out;
}

std::string StructuralModel::to_json() const {
  nlohmann::json j;
  j["ranker"] = "linear";
  j["features"] = features;
  j["weights"] = weights;
  j["mean"] = mean;
  j["scale"] = scale;
  j["bias"] = bias;
  j["provenance"] = nlohmann::json::parse(provenance_json, nullptr, false);
  return j.dump(1);
}

StructuralModel StructuralModel::from_json(const std::string& text, const std::string& origin) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.contains("weights"))
    throw Error(ExitCode::bad_input,
                "structural model '" + origin + "' is not a linear model file (JSON with features and weights)");
  StructuralModel m;
  m.features = j["features"].get<std::vector<std::string>>();
  m.weights = j["weights"].get<std::vector<double>>();
  m.mean = j["mean"].get<std::vector<double>>();
  m.scale = j["scale"].get<std::vector<double>>();
  m.bias = j["bias"].get<double>();
  if (j.contains("provenance")) m.provenance_json = j["provenance"].dump();
  if (m.features != structural_feature_names())
    throw Error(ExitCode::bad_input, "structural model '" + origin +
                                         "' was trained on other features than this build computes; retrain it with "
                                         "`repoctx train-structural`");
  for (auto& s : m.scale)
    if (s <= 0) s = 1;
  return m;
}

namespace {

// The text of a model file; empty path = the model built into repoctx.
std::string model_text(const std::string& path) {
  if (path.empty()) {
    if (!*kDefaultStructuralModel)
      throw Error(ExitCode::not_found,
                  "this build has no built-in structural model (models/structural.json was "
                  "missing at build time): train one with `repoctx train-structural` and pass --model");
    return kDefaultStructuralModel;
  }
  std::ifstream in(path);
  if (!in) throw Error(ExitCode::not_found, "cannot read structural model '" + path + "'");
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

}  // namespace

StructuralModel StructuralModel::load(const std::string& path) {
  return from_json(model_text(path), path.empty() ? "built-in" : path);
}

std::unique_ptr<StructuralRanker> structural_ranker_from_json(const std::string& text, const std::string& origin) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    throw Error(ExitCode::bad_input, "structural model '" + origin + "' is not JSON");
  std::string kind = j.contains("ranker") && j["ranker"].is_string() ? j["ranker"].get<std::string>() : "linear";
  if (kind == "gbdt") return GbdtRanker::from_json(j, origin);
  if (kind != "linear")
    throw Error(ExitCode::bad_input, "structural model '" + origin + "' has an unknown ranker '" + kind +
                                         "' (this build knows linear and gbdt)");
  return std::make_unique<StructuralModel>(StructuralModel::from_json(text, origin));
}

std::unique_ptr<StructuralRanker> load_structural_ranker(const std::string& path) {
  return structural_ranker_from_json(model_text(path), path.empty() ? "built-in" : path);
}

std::shared_ptr<const StructuralRanker> shared_structural_ranker(const std::string& path) {
  static std::mutex mu;
  // Never destroyed: freeing an XGBoost booster from a static destructor at exit runs after XGBoost's own
  // statics are gone (a crash at exit); the process is ending anyway.
  static auto& loaded = *new std::map<std::string, std::shared_ptr<const StructuralRanker>>();
  std::string key = path;
  if (!path.empty()) {
    std::error_code ec;
    auto size = std::filesystem::file_size(path, ec);
    auto mtime = std::filesystem::last_write_time(path, ec);
    if (ec) return load_structural_ranker(path);  // let the loader say what is wrong with it
    key += "|" + std::to_string(size) + "|" + std::to_string(mtime.time_since_epoch().count());
  }
  std::lock_guard lk(mu);
  auto it = loaded.find(key);
  if (it == loaded.end()) it = loaded.emplace(key, load_structural_ranker(path)).first;
  return it->second;
}

// ---------------------------------------------------------------------------------------------- features
namespace {

struct FileUsage {
  // Per reference of the file: the unit (outermost callable, -1 = module/class level), the entity whose
  // scope holds it, the chain root, and the repository entities it resolves to.
  struct Use {
    int unit;
    int scope;
    int root;  // id of the chain's first name (root_id)
    std::vector<int> along;
  };
  std::vector<Use> uses;
  std::unordered_map<std::string, int> root_id;  // distinct chain roots of the file -> 0, 1, ...
  // The same uses summed over the whole file, so that a request only takes away its hidden body's uses
  // (sorting each request's (entity, unit) pairs anew was 2% of a structural request's CPU on sympy):
  // the distinct (entity, unit) pairs, ascending, with the number of (use, along) entries giving each; the
  // distinct units (>= 0), ascending, with their uses; the uses of each root.
  std::vector<std::pair<int, int>> pairs;
  std::vector<int> pair_uses;
  std::vector<int> units, unit_uses;
  std::vector<int> root_uses;
  void summarise() {
    std::vector<std::pair<int, int>> all;
    std::vector<int> us;
    root_uses.assign(root_id.size(), 0);
    for (const auto& u : uses) {
      ++root_uses[static_cast<size_t>(u.root)];
      if (u.unit >= 0) us.push_back(u.unit);
      for (int c : u.along) all.emplace_back(c, u.unit);
    }
    count_distinct(all, pairs, pair_uses);
    count_distinct(us, units, unit_uses);
  }
  // The distinct values of `v`, ascending, and how often each occurs.
  template <class T>
  static void count_distinct(std::vector<T>& v, std::vector<T>& distinct, std::vector<int>& counts) {
    std::sort(v.begin(), v.end());
    for (size_t i = 0; i < v.size(); ++i) {
      if (i == 0 || v[i] != v[i - 1]) {
        distinct.push_back(v[i]);
        counts.push_back(0);
      }
      ++counts.back();
    }
  }
};

class FeatureBuilder {
 public:
  FeatureBuilder(const Engine& e) : e_(e), v_(e.view()), g_(e.graph()) {}

  const FileUsage& usage(int file) {
    return memo(usage_, file, [&] {
      FileUsage fu;
      const FileRec& f = v_.files()[file];
      for (const Reference& r : v_.references(file)) {
        int scope = r.scope >= 0 ? f.first_entity + r.scope : -1;
        FileUsage::Use u;
        u.scope = scope;
        u.unit = scope >= 0 ? unit_of(v_, scope) : -1;
        u.root = fu.root_id.try_emplace(r.chain.substr(0, r.chain.find('.')), static_cast<int>(fu.root_id.size()))
                     .first->second;
        u.along = g_.resolve(file, scope, r.chain).along;
        fu.uses.push_back(std::move(u));
      }
      fu.summarise();
      return fu;
    });
  }

  const std::vector<int>& refs_of(int entity) {
    return memo(refs_, entity, [&] { return g_.referenced_entities(entity); });
  }

  // How many functions of the repository reference each entity (outermost callables; computed once). The
  // references of each function are kept for refs_of(): neighbours are such functions, and a warm server
  // then never resolves them again.
  const std::vector<int>& popularity() {
    std::call_once(popularity_once_, [&] {
      const auto& ents = v_.entities();
      popularity_.assign(ents.size(), 0);
      std::vector<std::pair<int, std::vector<int>>> refs;
      for (size_t i = 0; i < ents.size(); ++i) {
        if (!is_callable(ents[i].kind) || unit_of(v_, static_cast<int>(i)) != static_cast<int>(i)) continue;
        refs.emplace_back(static_cast<int>(i), g_.referenced_entities(static_cast<int>(i)));
        for (int c : refs.back().second) ++popularity_[c];
      }
      std::lock_guard lk(mu_);
      for (auto& [e, r] : refs) refs_.emplace(e, std::move(r));
    });
    return popularity_;
  }

  // The subword tokens of every entity's name (name_parts), made once: a pool of ~1,000 candidates
  // tokenized its names twice per request. Also as ids of a vocabulary of every name part, so that a
  // request matches them against its query by id (string hashing per part and candidate was ~3% of it).
  const std::vector<int>& name_part_ids_of(int entity) {
    name_parts_once();
    return part_ids_[static_cast<size_t>(entity)];
  }
  // What an entity's name is (made with the name parts): read for every candidate of every request, where
  // comparing and hashing the strings was ~2% of it.
  struct NameFacts {
    int name_id;  // the same for entities of the same name
    bool dunder, private_, upper, exception_name;
  };
  const NameFacts& name_facts(int entity) {
    name_parts_once();
    return name_facts_[static_cast<size_t>(entity)];
  }
  // The id of an entity name, -1 when no entity has it.
  int name_id(const std::string& name) {
    name_parts_once();
    auto it = name_vocab_.find(name);
    return it == name_vocab_.end() ? -1 : it->second;
  }
  // The id of a name part, -1 when no entity's name has it.
  int part_id(const std::string& part) {
    name_parts_once();
    auto it = part_vocab_.find(part);
    return it == part_vocab_.end() ? -1 : it->second;
  }
  size_t n_parts() {
    name_parts_once();
    return part_vocab_.size();
  }

  // Each entity's file when it is a top-level one (defined outside any other), else -1; made once.
  const std::vector<int32_t>& top_level_file() {
    std::call_once(top_level_once_, [&] {
      const auto& ents = v_.entities();
      top_level_file_.resize(ents.size());
      for (size_t i = 0; i < ents.size(); ++i) top_level_file_[i] = ents[i].parent_index < 0 ? ents[i].file : -1;
    });
    return top_level_file_;
  }

  // A file's module-level imports (not star ones) as the scope tiers read them: the bound name and what it
  // resolves to. Module-level imports are never inside a hidden body, so this is a fact of the index;
  // resolving them was ~2% of a request, twice (scope tiers, module co-use).
  struct Binding {
    std::string bound;
    Resolution::Kind kind;
    int entity, file;
  };
  const std::vector<Binding>& bindings(int file) {
    return memo(bindings_, file, [&] {
      std::vector<Binding> out;
      for (const Import& im : v_.imports(file)) {
        if (im.scope != -1 || im.star) continue;
        std::string bound = im.bound_name();
        Resolution r = g_.module_member(file, bound);
        out.push_back({std::move(bound), r.kind, r.entity, r.file});
      }
      return out;
    });
  }

  // A class's members through its MRO (SymbolGraph::class_members walks the MRO and each class's entities).
  const std::vector<int>& members_of(int cls) {
    return memo(members_, cls, [&] { return g_.class_members(cls); });
  }
  // ---- module co-use: per engine, from the index only --------------------------------
  // users_of[c]: the functions (outermost callables) referencing entity c, ascending; module_users[f]: how
  // many functions reference any entity of file f. Queries remove the target's own function from both.
  struct ModuleCoUse {
    std::vector<std::vector<int>> users_of;
    std::vector<int> module_users;
  };
  const ModuleCoUse& module_couse() {
    std::call_once(couse_once_, [&] {
      popularity();  // caches every function's references
      const auto& ents = v_.entities();
      couse_.users_of.assign(ents.size(), {});
      couse_.module_users.assign(v_.files().size(), 0);
      std::vector<int> files;
      for (size_t i = 0; i < ents.size(); ++i) {
        int e = static_cast<int>(i);
        if (!is_unit(v_, e)) continue;
        files.clear();
        for (int c : refs_of(e)) {
          couse_.users_of[c].push_back(e);
          files.push_back(ents[c].file);
        }
        std::sort(files.begin(), files.end());
        files.erase(std::unique(files.begin(), files.end()), files.end());
        for (int f : files) ++couse_.module_users[f];
      }
    });
    return couse_;
  }
  // The use counts (users_of sizes) of a file's entities, descending: a request's module-member ranks
  // read them for every candidate file the target's function does not touch.
  const std::vector<int>& member_uses(int file) {
    return memo(member_uses_, file, [&] {
      const auto& cu = module_couse();
      const FileRec& mf = v_.files()[file];
      std::vector<int> pops;
      for (int i = mf.first_entity; i < mf.first_entity + mf.n_entities; ++i)
        pops.push_back(static_cast<int>(cu.users_of[i].size()));
      std::sort(pops.begin(), pops.end(), std::greater<>());
      return pops;
    });
  }
  // ---- end module co-use -----------------------------------------------------------------------------

  StructuralCandidates build(const TargetContext& ctx, const std::string& query, const StructuralParams& p);

  // Every per-file fact a request may read, built now instead of by the first request on each file (see
  // warm_structural). The same memo entries requests fill: a request running meanwhile finds them or builds
  // its own twin.
  bool warm(const std::function<bool()>& stop) {
    e_.visible_bm25();  // the neighbours' corpus, built by the first request otherwise
    popularity();
    module_couse();
    name_parts_once();
    top_level_file();
    const auto& ents = v_.entities();
    for (int f = 0; f < static_cast<int>(v_.files().size()); ++f) {
      if (stop && stop()) return false;
      usage(f);
      member_uses(f);
      g_.accessible_files(f);
      bindings(f);  // the scope tier's
      // The target's file is read and its entities' term vectors loaded (make_context, BM25 overrides).
      v_.content(f);
      if (v_.files()[f].n_entities > 0) v_.entity_terms(v_.files()[f].first_entity);
      const FileRec& fr = v_.files()[f];
      for (int i = fr.first_entity; i < fr.first_entity + fr.n_entities; ++i) {
        if (is_type(ents[i].kind)) members_of(i);
        if (is_callable(ents[i].kind)) refs_of(i);  // neighbours' references (nested ones are not in popularity)
      }
    }
    return true;
  }

 private:
  // cache[key], computed outside the lock on a miss (concurrent requests of a warm server share this
  // builder); a twin computed by another thread meanwhile is the same value, and the first one stored stays.
  // References stay valid: unordered_map never moves its elements.
  template <class Map, class Compute>
  const typename Map::mapped_type& memo(Map& cache, int key, Compute compute) {
    {
      std::lock_guard lk(mu_);
      auto it = cache.find(key);
      if (it != cache.end()) return it->second;
    }
    auto value = compute();
    std::lock_guard lk(mu_);
    return cache.emplace(key, std::move(value)).first->second;
  }

  void name_parts_once() {
    std::call_once(name_parts_once_, [&] {
      const auto& ents = v_.entities();
      part_ids_.reserve(ents.size());
      name_facts_.reserve(ents.size());
      for (const auto& en : ents) {
        std::vector<int> ids;
        for (auto& part : name_parts(en.name))
          ids.push_back(part_vocab_.try_emplace(std::move(part), static_cast<int>(part_vocab_.size())).first->second);
        part_ids_.push_back(std::move(ids));
        const std::string& nm = en.name;
        NameFacts nf;
        nf.name_id = name_vocab_.try_emplace(nm, static_cast<int>(name_vocab_.size())).first->second;
        nf.dunder = starts_with(nm, "__") && ends_with(nm, "__");
        nf.private_ = !nf.dunder && starts_with(nm, "_");
        nf.upper = !nm.empty() && std::none_of(nm.begin(), nm.end(),
                                               [](char ch) { return std::islower(static_cast<unsigned char>(ch)); });
        nf.exception_name = ends_with(nm, "Error") || ends_with(nm, "Exception") || ends_with(nm, "Warning");
        name_facts_.push_back(nf);
      }
    });
  }
  std::once_flag name_parts_once_;
  std::vector<std::vector<int>> part_ids_;
  std::unordered_map<std::string, int> part_vocab_;
  std::vector<NameFacts> name_facts_;
  std::unordered_map<std::string, int> name_vocab_;
  std::once_flag couse_once_;
  ModuleCoUse couse_;
  std::once_flag popularity_once_;
  std::vector<int> popularity_;
  std::once_flag top_level_once_;
  std::vector<int32_t> top_level_file_;
  const Engine& e_;
  const RepoView& v_;
  const SymbolGraph& g_;
  std::mutex mu_;
  std::unordered_map<int, FileUsage> usage_;
  std::unordered_map<int, std::vector<int>> refs_;
  std::unordered_map<int, std::vector<int>> members_;
  std::unordered_map<int, std::vector<int>> member_uses_;
  std::unordered_map<int, std::vector<Binding>> bindings_;
};

struct Ranked {
  int doc;
  double score;
};

// Deterministic order independent of internal ids: score, then path, line, qualified name.
void sort_docs(const RepoView& v, std::vector<Ranked>& r, size_t keep) {
  auto better = [&](const Ranked& a, const Ranked& b) {
    if (a.score != b.score) return a.score > b.score;
    return entity_before(v, a.doc, b.doc);
  };
  if (r.size() > keep) {
    std::partial_sort(r.begin(), r.begin() + static_cast<long>(keep), r.end(), better);
    r.resize(keep);
  } else {
    std::sort(r.begin(), r.end(), better);
  }
}

// The k first of the scored documents `keep` accepts, in sort_docs' order. Ties are broken by paths, and
// comparing strings (or copying) the ~20,000 documents a query touches cost more than scoring them: the
// k-th best score is found first with a heap of k numbers, and only the documents reaching it (every one
// tied with the k-th stays: the path decides among them) are sorted.
template <class Keep>
std::vector<Ranked> top_docs(const RepoView& v, const std::vector<ScoredDoc>& scored, size_t k, Keep&& keep) {
  std::vector<double> heap;  // min-heap of the k best scores so far
  heap.reserve(std::min(k, scored.size()) + 1);
  for (const auto& s : scored) {
    if (heap.size() == k && (k == 0 || s.score <= heap.front())) continue;
    if (!keep(s.doc)) continue;
    heap.push_back(s.score);
    std::push_heap(heap.begin(), heap.end(), std::greater<>());
    if (heap.size() > k) {
      std::pop_heap(heap.begin(), heap.end(), std::greater<>());
      heap.pop_back();
    }
  }
  const double cut = heap.size() == k && k > 0 ? heap.front() : -std::numeric_limits<double>::infinity();
  std::vector<Ranked> r;
  for (const auto& s : scored)
    if (s.score >= cut && keep(s.doc)) r.push_back({s.doc, s.score});
  sort_docs(v, r, k);
  return r;
}

using QueryTerms = std::vector<std::pair<uint64_t, uint32_t>>;  // query_terms()

// Per-entity values of one request in dense arrays indexed by entity id, valid where their stamp is the
// request's: hash maps keyed by entity ids (candidate rows, neighbour votes, co-use counts) were about a
// third of a structural request's CPU on sympy (perf), and a warm server answers many requests per thread.
// One per thread, reused without clearing (a new stamp invalidates everything); a nested use on the same
// thread (none today) gets a fresh one.
struct EntityScratch {
  struct Vote {
    double all, top5, file, cls;
    int n;
  };
  uint32_t stamp = 0, count_gen = 0;
  std::vector<uint32_t> row_stamp, vote_stamp, units_stamp, count_stamp, local_stamp;
  std::vector<uint32_t> full_ref_stamp, visible_ref_stamp;  // module co-use: what the target's function uses
  std::vector<uint32_t> file_stamp;                         // by file id: the accessible files
  std::vector<int32_t> row, units_begin, units_end, count;
  std::vector<Vote> vote;
  std::vector<double> local_vote;  // same-file neighbours' votes (CandidateBuild::local_votes)
  bool busy = false;

  // Starts a request over `n` entities in `n_files` files; co-use counts get a stamp of their own per file
  // (next_count_stamp).
  void begin(size_t n, size_t n_files) {
    if (row.size() < n) {
      for (auto* v :
           {&row_stamp, &vote_stamp, &units_stamp, &count_stamp, &local_stamp, &full_ref_stamp, &visible_ref_stamp})
        v->resize(n, 0);
      for (auto* v : {&row, &units_begin, &units_end, &count}) v->resize(n, 0);
      vote.resize(n);
      local_vote.resize(n);
    }
    if (file_stamp.size() < n_files) file_stamp.resize(n_files, 0);
    next_stamp();
  }
  void next_stamp() {
    if (++stamp == 0) {  // wrapped: every old stamp could look current
      for (auto* v :
           {&row_stamp, &vote_stamp, &units_stamp, &file_stamp, &local_stamp, &full_ref_stamp, &visible_ref_stamp})
        std::fill(v->begin(), v->end(), 0);
      stamp = 1;
    }
  }
  uint32_t next_count_stamp() {
    if (++count_gen == 0) {
      std::fill(count_stamp.begin(), count_stamp.end(), 0);
      count_gen = 1;
    }
    return count_gen;
  }
};

class ScratchLease {
 public:
  ScratchLease(size_t n, size_t n_files) {
    thread_local EntityScratch mine;
    if (mine.busy) {
      own_ = std::make_unique<EntityScratch>();
      s_ = own_.get();
    } else {
      s_ = &mine;
    }
    s_->busy = true;
    s_->begin(n, n_files);
  }
  ~ScratchLease() { s_->busy = false; }
  ScratchLease(const ScratchLease&) = delete;
  ScratchLease& operator=(const ScratchLease&) = delete;
  EntityScratch& operator*() const { return *s_; }
  EntityScratch* operator->() const { return s_; }

 private:
  std::unique_ptr<EntityScratch> own_;
  EntityScratch* s_;
};

// One target's candidates and their features, built family by family. Every family reads the repository
// with the target's body hidden (ctx).
struct CandidateBuild {
  FeatureBuilder& fb;
  const RepoView& v;
  const SymbolGraph& g;
  const TargetContext& ctx;
  const StructuralParams& p;
  const std::vector<EntityRec>& ents;
  const int t, file, cls;
  ScratchLease scratch;  // candidate rows, votes, using units, co-use counts by entity id
  const uint32_t stamp;  // the request's stamp in scratch
  StructuralCandidates out;
  // Usage in the target's file (outside the hidden body).
  const FileUsage* fusage = nullptr;
  std::vector<int> name_uses;  // uses of each of fusage's roots (bound names), by root id
  // (entity, unit using it) pairs, sorted and unique; scratch units_begin/end index them per entity.
  std::vector<std::pair<int, int>> entity_units;
  std::vector<int> used_entities;  // the entities of entity_units, ascending
  int n_units = 0;                 // units with any reference left
  // By candidate row: the index in fb.bindings(file) of the import binding that brought it in, -1 none
  // (a map to a copy of the bound name cost a node and a string per member of every imported module).
  std::vector<int32_t> bound_binding;
  // The entity BM25 pass's score of every document it touched (the first entry of a document is its sum).
  std::vector<ScoredDoc> entity_scores;
  int n_neighbours = 0;

  CandidateBuild(FeatureBuilder& b, const RepoView& view, const SymbolGraph& graph, const TargetContext& c,
                 const StructuralParams& params)
      : fb(b),
        v(view),
        g(graph),
        ctx(c),
        p(params),
        ents(view.entities()),
        t(c.target.entity),
        file(c.target.file),
        cls(graph.enclosing_class(c.target.entity)),
        scratch(view.entities().size(), view.files().size()),
        stamp(scratch->stamp) {}

  std::vector<double>* row(int c) {
    if (c < 0 || ctx.is_hidden_entity(c)) return nullptr;
    if (scratch->row_stamp[c] == stamp) return &out.features[static_cast<size_t>(scratch->row[c])];
    scratch->row_stamp[c] = stamp;
    scratch->row[c] = static_cast<int32_t>(out.entities.size());
    out.entities.push_back(c);
    out.features.emplace_back(f_count, 0.0);
    return &out.features.back();
  }

  bool used(int c) const { return scratch->units_stamp[c] == stamp; }
  // The units using c in the target's file (entity_units' range), empty when none.
  std::pair<const std::pair<int, int>*, const std::pair<int, int>*> units_of(int c) const {
    if (!used(c)) return {nullptr, nullptr};
    return {entity_units.data() + scratch->units_begin[c], entity_units.data() + scratch->units_end[c]};
  }
  const EntityScratch::Vote* vote_of(int c) const {
    return scratch->vote_stamp[c] == stamp ? &scratch->vote[c] : nullptr;
  }

  void class_members(int c, int feature) {
    int n = 0;
    for (int m : fb.members_of(c)) {
      if (n++ >= p.max_class_members) break;
      if (auto* r = row(m))
        (*r)[feature == f_class_direct && ents[m].parent_index != c ? f_class_inherited : feature] = 1;
    }
  }

  // The first binding to bring candidate c (which has a row) in is the one its import features read.
  void bind(int c, int32_t binding) {
    const auto k = static_cast<size_t>(scratch->row[c]);
    if (bound_binding.size() <= k) bound_binding.resize(k + 1, -1);
    if (bound_binding[k] < 0) bound_binding[k] = binding;
  }

  // Scope tiers: the target's class, its module, what the module imports, and members of visible classes.
  void scope_tiers() {
    const FileRec& tf = v.files()[file];
    if (cls >= 0) class_members(cls, f_class_direct);
    for (int i = tf.first_entity; i < tf.first_entity + tf.n_entities; ++i)
      if (ents[i].parent_index < 0)
        if (auto* r = row(i)) (*r)[f_module] = 1;
    std::vector<int> visible_classes;
    for (int i = tf.first_entity; i < tf.first_entity + tf.n_entities; ++i)
      if (ents[i].parent_index < 0 && is_type(ents[i].kind)) visible_classes.push_back(i);
    const auto& bindings = fb.bindings(file);
    for (int32_t j = 0; j < static_cast<int32_t>(bindings.size()); ++j) {
      const auto& b = bindings[static_cast<size_t>(j)];
      if (b.kind == Resolution::Kind::entity) {
        if (auto* rw = row(b.entity)) {
          (*rw)[f_import] = 1;
          bind(b.entity, j);
          if (is_type(ents[b.entity].kind)) visible_classes.push_back(b.entity);
        }
      } else if (b.kind == Resolution::Kind::module) {
        const FileRec& mf = v.files()[b.file];
        for (int i = mf.first_entity; i < mf.first_entity + mf.n_entities; ++i) {
          if (ents[i].parent_index >= 0) continue;
          if (auto* rw = row(i)) {
            (*rw)[f_modattr] = 1;
            bind(i, j);
          }
        }
      }
    }
    for (int c : visible_classes) class_members(c, f_visible_member);
  }

  // How often each bound name and each entity is used in the target's file outside the hidden body.
  void file_usage() {
    fusage = &fb.usage(file);
    // The file's summed uses less those in the hidden body: the pairs and units left with any use.
    const FileUsage& fu = *fusage;
    name_uses = fu.root_uses;
    std::vector<int> unit_left = fu.unit_uses, pair_left = fu.pair_uses;
    for (const auto& u : fu.uses) {
      if (!(u.scope >= 0 && v.is_within(u.scope, t))) continue;
      --name_uses[static_cast<size_t>(u.root)];
      if (u.unit >= 0)
        --unit_left[static_cast<size_t>(std::lower_bound(fu.units.begin(), fu.units.end(), u.unit) - fu.units.begin())];
      for (int c : u.along)
        --pair_left[static_cast<size_t>(std::lower_bound(fu.pairs.begin(), fu.pairs.end(), std::make_pair(c, u.unit)) -
                                        fu.pairs.begin())];
    }
    n_units = static_cast<int>(std::count_if(unit_left.begin(), unit_left.end(), [](int n) { return n > 0; }));
    entity_units.reserve(fu.pairs.size());
    for (size_t i = 0; i < fu.pairs.size(); ++i)
      if (pair_left[i] > 0) entity_units.push_back(fu.pairs[i]);
    for (size_t i = 0; i < entity_units.size(); ++i) {
      int c = entity_units[i].first;
      if (i == 0 || entity_units[i - 1].first != c) {
        scratch->units_stamp[c] = stamp;
        scratch->units_begin[c] = static_cast<int32_t>(i);
        used_entities.push_back(c);
      }
      scratch->units_end[c] = static_cast<int32_t>(i + 1);
    }
  }

  // TargetContext::is_hidden_entity, here where it runs for every document a query touches (a call into
  // another unit per document was ~2% of a request).
  bool hidden(int d) const {
    return d == t || (!ctx.removed_entities.empty() &&
                      std::binary_search(ctx.removed_entities.begin(), ctx.removed_entities.end(), d));
  }

  // BM25 over entities (statistics of the repository without the hidden body): the global top and the top
  // among the transitively importable files' top-level entities.
  void bm25_tiers(const Bm25Index& eb, const QueryTerms& q, const Bm25Overrides& eov) {
    // One pass for both tiers and for every candidate's score (candidate_features).
    entity_scores = eb.score_all(q, p.bm25, &eov);
    auto& accessible = scratch->file_stamp;
    for (int f : g.accessible_files(file, &ctx.hidden)) accessible[f] = stamp;
    std::vector<Ranked> global =
        top_docs(v, entity_scores, static_cast<size_t>(p.bm25_candidates), [&](int d) { return !hidden(d); });
    for (size_t i = 0; i < global.size(); ++i)
      if (auto* r = row(global[i].doc)) {
        (*r)[f_global_bm25] = 1;
        (*r)[f_bm25_rank] = 1.0 / (1.0 + static_cast<double>(i));
      }
    const std::vector<int32_t>& top_file = fb.top_level_file();
    for (const auto& a : top_docs(v, entity_scores, static_cast<size_t>(p.accessible_candidates), [&](int d) {
           return top_file[d] >= 0 && accessible[top_file[d]] == stamp && !hidden(d);
         }))
      if (auto* r = row(a.doc)) (*r)[f_accessible] = 1;
  }

  // What entity n references, as this request may see it: a function around the hidden target must not
  // see its body, so it is resolved with the body hidden.
  std::vector<int> refs_seen_from(int n) const {
    return v.is_within(t, n) ? g.referenced_entities(n, &ctx.hidden) : fb.refs_of(n);
  }

  // Neighbours: the functions whose signature and docstring are most like the target's vote for what
  // they reference.
  void neighbour_votes(const Bm25Index& visible, const QueryTerms& q) {
    Bm25Overrides vov;
    vov.removed = ctx.removed_entities;
    const auto keep = [&](int d) { return !hidden(d); };
    const auto k = static_cast<size_t>(p.neighbours);
    std::vector<Ranked> nb = top_docs(v, visible.top_k(q, p.bm25, &vov, k, keep), k, keep);
    n_neighbours = static_cast<int>(nb.size());
    double top = nb.empty() ? 1.0 : nb.front().score;
    for (size_t i = 0; i < nb.size(); ++i) {
      int n = nb[i].doc;
      const std::vector<int> refs = refs_seen_from(n);
      double w = top > 0 ? nb[i].score / top : 0;
      bool same_file = ents[n].file == file, same_class = cls >= 0 && g.enclosing_class(n) == cls;
      for (int c : refs) {
        if (c == t) continue;
        auto& vt = scratch->vote[c];
        if (scratch->vote_stamp[c] != stamp) {
          scratch->vote_stamp[c] = stamp;
          vt = {};
        }
        vt.all += w;
        if (same_file) vt.file += w;
        if (same_class) vt.cls += w;
        vt.n += 1;
        if (i < 5) vt.top5 += w;
        if (auto* r = row(c)) (*r)[f_neighbour] = 1;
      }
    }
  }

  // Same-file neighbours: the callables of the target's file, weighted by how like the target's signature
  // and docstring theirs are (BM25 under the same statistics as the global neighbours, relative to the
  // most similar one), the 10 most similar vote for what they reference. Their votes only describe
  // candidates the other families found (the pool stays as it is).
  void local_votes(const Bm25Index& visible, const QueryTerms& q) {
    Bm25Overrides vov;
    vov.removed = ctx.removed_entities;
    const auto pq = visible.prepare(q, p.bm25, &vov);
    const FileRec& tf = v.files()[file];
    std::vector<Ranked> sims;
    for (int i = tf.first_entity; i < tf.first_entity + tf.n_entities; ++i) {
      if (i == t || ctx.is_hidden_entity(i) || !is_callable(ents[i].kind) || !visible.has_doc(i)) continue;
      double sc = Bm25Index::score_prepared(pq, visible.doc_terms(i));
      if (sc > 0) sims.push_back({i, sc});
    }
    sort_docs(v, sims, 10);
    const double top = sims.empty() ? 1.0 : sims.front().score;
    for (const auto& nb : sims) {
      for (int c : refs_seen_from(nb.doc))
        if (c != t) {
          if (scratch->local_stamp[c] != stamp) {
            scratch->local_stamp[c] = stamp;
            scratch->local_vote[c] = 0;
          }
          scratch->local_vote[c] += nb.score / top;
        }
    }
  }

  // What a candidate is (kind, naming), how its name matches the query and the target's parameters.
  // part_marks: per name-part id, 1 when the query has it, 2 when the target's parameters do (bits).
  void name_features(std::vector<double>& x, int c, const std::vector<int>& query_names,
                     const std::vector<uint8_t>& part_marks) {
    const EntityRec& ce = ents[c];
    const auto& nf = fb.name_facts(c);
    x[f_kind_function] = ce.kind == EntityKind::function;
    x[f_kind_method] = ce.kind == EntityKind::method || ce.kind == EntityKind::constructor;
    x[f_kind_class] = is_type(ce.kind);
    x[f_kind_variable] = ce.kind == EntityKind::variable;
    x[f_kind_attribute] = ce.kind == EntityKind::attribute || ce.kind == EntityKind::field;
    x[f_dunder] = nf.dunder;
    x[f_private] = nf.private_;
    x[f_upper] = nf.upper;
    x[f_name_in_query] = std::binary_search(query_names.begin(), query_names.end(), nf.name_id) ? 1 : 0;
    const auto& parts = fb.name_part_ids_of(c);
    int hit = 0, phit = 0;
    for (int pt : parts) {
      hit += part_marks[static_cast<size_t>(pt)] & 1;
      phit += (part_marks[static_cast<size_t>(pt)] >> 1) & 1;
    }
    x[f_name_overlap] = parts.empty() ? 0 : static_cast<double>(hit) / static_cast<double>(parts.size());
    x[f_param_match] = parts.empty() ? 0 : static_cast<double>(phit) / static_cast<double>(parts.size());
  }

  // Votes, usage in the file and in the class, import usage, proximity.
  // binding_uses: the uses in the file (outside the hidden body) of each binding's bound name.
  void usage_features(std::vector<double>& x, int c, size_t k, int class_units, const std::vector<int>& binding_uses) {
    const EntityRec& ce = ents[c];
    if (const auto* vt = vote_of(c)) {
      x[f_vote] = vt->all;
      x[f_vote_count] = static_cast<double>(vt->n) / std::max(1, n_neighbours);
      x[f_vote_top5] = vt->top5;
      x[f_vote_file] = vt->file;
      x[f_vote_class] = vt->cls;
    }
    if (scratch->local_stamp[c] == stamp) x[f_local_vote] = scratch->local_vote[c];
    if (used(c)) {
      int users = 0, class_users = 0;
      auto [ub, ue] = units_of(c);
      for (auto p = ub; p != ue; ++p) {
        int u = p->second;
        if (u < 0) continue;
        ++users;
        if (cls >= 0 && ents[u].parent_index == cls) ++class_users;
      }
      x[f_file_usage] = std::log1p(users);
      x[f_file_usage_frac] = n_units > 0 ? static_cast<double>(users) / n_units : 0;
      x[f_class_usage] = class_units > 0 ? static_cast<double>(class_users) / class_units : 0;
    }
    if (k < bound_binding.size() && bound_binding[k] >= 0) {
      const int uses = binding_uses[static_cast<size_t>(bound_binding[k])];
      x[f_import_unused] = uses == 0;
      x[f_import_uses] = std::log1p(uses);
    }
    if (ce.file == file) x[f_proximity] = 1.0 / (1.0 + std::abs(ce.start_line - ents[t].start_line) / 100.0);
    x[f_method_of_own_class_private] = x[f_class_direct] * x[f_private];
    x[f_direct_method] = x[f_class_direct] * x[f_kind_method];
    x[f_direct_attribute] = x[f_class_direct] * x[f_kind_attribute];
    x[f_module_function] = x[f_module] * x[f_kind_function];
    x[f_module_class] = x[f_module] * x[f_kind_class];
    x[f_import_class] = x[f_import] * x[f_kind_class];
    x[f_import_function] = x[f_import] * x[f_kind_function];
  }

  // 1 / (1 + rank) of each candidate by feature `from` (candidates with 0 get 0), and value / max.
  void rank_feature(int from, int rank_to, int rel_to) {
    std::vector<std::pair<double, size_t>> r;
    for (size_t k = 0; k < out.features.size(); ++k)
      if (out.features[k][from] > 0) r.emplace_back(out.features[k][from], k);
    std::stable_sort(r.begin(), r.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    // Ties share the best rank, so the order of equal candidates cannot matter.
    size_t rank = 0;
    for (size_t i = 0; i < r.size(); ++i) {
      if (i > 0 && r[i].first < r[i - 1].first) rank = i;
      out.features[r[i].second][rank_to] = 1.0 / (1.0 + static_cast<double>(rank));
      if (rel_to >= 0) out.features[r[i].second][rel_to] = r[i].first / r.front().first;
    }
  }

  // How the candidate's name relates to the target's name: shared subwords, or one name inside the other
  // (`get_x` and `_get_x`, `x` and `x_impl`).
  void target_name_features(std::vector<double>& x, int c, const std::vector<int>& tparts, std::string_view tstem) {
    const EntityRec& ce = ents[c];
    const auto& parts = fb.name_part_ids_of(c);
    int hit = 0;
    for (int pt : parts) hit += std::find(tparts.begin(), tparts.end(), pt) != tparts.end() ? 1 : 0;
    x[f_target_name_overlap] = parts.empty() ? 0 : static_cast<double>(hit) / static_cast<double>(parts.size());
    std::string_view stem = ce.name;
    stem.remove_prefix(std::min(stem.find_first_not_of('_'), stem.size()));
    x[f_name_stem] = stem.size() >= 3 && tstem.size() >= 3 && stem != tstem &&
                     (tstem.find(stem) != std::string_view::npos || stem.find(tstem) != std::string_view::npos);
  }

  void candidate_features(const Bm25Index& eb, const QueryTerms& q, const Bm25Overrides& eov,
                          const std::string& query) {
    auto pq = eb.prepare(q, p.bm25, &eov);
    std::vector<int> query_names;  // ids of the entity names the query has as identifiers, ascending
    for (const auto& id : identifiers(query))
      if (int n = fb.name_id(id); n >= 0) query_names.push_back(n);
    std::sort(query_names.begin(), query_names.end());
    std::vector<uint8_t> part_marks(fb.n_parts(), 0);  // tokens no name has cannot match a name part
    auto mark = [&](const std::string& text, uint8_t bit) {
      for (auto& tok : tokenize_code(text))
        if (int id = fb.part_id(tok); id >= 0) part_marks[static_cast<size_t>(id)] |= bit;
    };
    mark(query, 1);
    for (const auto& prm : ents[t].params) {
      mark(prm.name, 2);
      mark(prm.annotation, 2);
    }
    int class_units = 0;
    const FileRec& tf = v.files()[file];
    if (cls >= 0)
      for (int i = tf.first_entity; i < tf.first_entity + tf.n_entities; ++i)
        if (ents[i].parent_index == cls && is_callable(ents[i].kind) && i != t) ++class_units;
    double max_bm25 = 0;
    // The entity pass's score of each candidate (its first entry; a document it did not touch has no query
    // term: 0), found through the candidates' rows in one pass over the scored documents (scattering all
    // ~20,000 of them into a per-document array and clearing it again cost more than the scoring).
    std::vector<double> bm25(out.entities.size(), 0.0);
    std::vector<char> found(out.entities.size(), 0);
    for (const auto& sd : entity_scores) {
      if (sd.doc < 0 || static_cast<size_t>(sd.doc) >= ents.size() || scratch->row_stamp[sd.doc] != stamp) continue;
      const auto k = static_cast<size_t>(scratch->row[sd.doc]);
      if (!found[k]) {
        found[k] = 1;
        bm25[k] = sd.score;
      }
    }
    // score_all summed the same terms in the same order with the same formula: its score is this one's.
    // Documents the hidden body replaces are scored on their replacement (the last one given for a document).
    for (const auto& [d, tv] : eov.replaced)
      if (d >= 0 && static_cast<size_t>(d) < ents.size() && scratch->row_stamp[d] == stamp)
        bm25[static_cast<size_t>(scratch->row[d])] = Bm25Index::score_prepared(pq, *tv);
    for (size_t k = 0; k < out.entities.size(); ++k) max_bm25 = std::max(max_bm25, bm25[k]);
    std::vector<int> binding_uses;
    for (const auto& b : fb.bindings(file)) {
      auto rid = fusage->root_id.find(b.bound);
      binding_uses.push_back(rid == fusage->root_id.end() ? 0 : name_uses[static_cast<size_t>(rid->second)]);
    }
    const auto& tparts = fb.name_part_ids_of(t);
    std::string_view tstem = ents[t].name;
    tstem.remove_prefix(std::min(tstem.find_first_not_of('_'), tstem.size()));
    for (size_t k = 0; k < out.entities.size(); ++k) {
      int c = out.entities[k];
      auto& x = out.features[k];
      name_features(x, c, query_names, part_marks);
      target_name_features(x, c, tparts, tstem);
      x[f_bm25_rel] = max_bm25 > 0 ? bm25[k] / max_bm25 : 0;
      x[f_bm25_log] = std::log1p(bm25[k]);
      usage_features(x, c, k, class_units, binding_uses);
    }
    // Repository-wide use, without the hidden body's own references.
    const auto& pop = fb.popularity();
    const std::vector<int>& own = fb.refs_of(t);  // sorted
    for (size_t k = 0; k < out.entities.size(); ++k) {
      int c = out.entities[k];
      int n = pop[c] - (std::binary_search(own.begin(), own.end(), c) ? 1 : 0);
      out.features[k][f_popularity] = std::log1p(std::max(0, n));
      out.features[k][f_exception_class] = is_type(ents[c].kind) && fb.name_facts(c).exception_name;
    }
    rank_feature(f_popularity, f_popularity_rank, -1);
    rank_feature(f_vote, f_vote_rank, f_vote_rel);
    rank_feature(f_local_vote, f_local_vote_rank, f_local_vote_rel);
    rank_feature(f_file_usage, f_usage_rank, -1);
  }

  // ---- module co-use ----------------------------------------------------------------
  // Evidence for a candidate from what the repository does with the other members of its defining file
  // ("module"): its share of the module's users, its rank among the module's members by use, how many
  // other members the target's file uses, and how often the functions that use those members also use
  // it. The target's own function (whose body is hidden) is removed from every count.
  void module_couse_features() {
    const auto& cu = fb.module_couse();
    // The counts are of the whole repository; the target's function (its outermost callable) counts only
    // with what it references outside the hidden body, as in a copy of the repository without the body.
    int tunit = unit_of(v, t);
    if (tunit < 0) tunit = t;
    const std::vector<int> visible = g.referenced_entities(tunit, &ctx.hidden);  // sorted
    // What the target's function references, with and without the hidden body, marked by entity: users_of[c]
    // holds tunit exactly when tunit is a user (an outermost callable, as module_couse() counts them) whose
    // references hold c (two binary searches per entity, one in lists of thousands, were a quarter of
    // this family's time on sympy).
    EntityScratch& sc = *scratch;
    if (is_unit(v, tunit))
      for (int c : fb.refs_of(tunit)) sc.full_ref_stamp[c] = stamp;
    for (int c : visible) sc.visible_ref_stamp[c] = stamp;
    auto tunit_uses = [&](int c) { return sc.visible_ref_stamp[c] == stamp; };
    auto uses_without_target = [&](int c) {
      return static_cast<int>(cu.users_of[c].size()) - (sc.full_ref_stamp[c] == stamp ? 1 : 0) +
             (tunit_uses(c) ? 1 : 0);
    };
    std::unordered_set<int> full_files, visible_files;  // files the target's function references
    for (int c : fb.refs_of(tunit)) full_files.insert(ents[c].file);
    for (int c : visible) visible_files.insert(ents[c].file);
    // Members of each file that the target's file uses outside the hidden body.
    std::unordered_map<int, std::vector<int>> used_members;
    for (int c : used_entities) used_members[ents[c].file].push_back(c);
    // Files the target's file imports at module level (the module, or the file defining the name).
    std::unordered_set<int> imported;
    for (const auto& b : fb.bindings(file)) {
      if (b.kind == Resolution::Kind::entity) imported.insert(ents[b.entity].file);
      if (b.kind == Resolution::Kind::module) imported.insert(b.file);
    }
    // Candidates file by file: the per-file facts (members' use, co-use counts per user) are made once per
    // file, the counts in the scratch's dense per-user array.
    std::vector<size_t> order(out.entities.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return ents[out.entities[a]].file < ents[out.entities[b]].file; });
    std::vector<int> own_pops;               // descending adjusted use of a touched file's members
    const std::vector<int>* pops = nullptr;  // the current file's: own_pops or the engine's member_uses
    const std::vector<int>* members_used = nullptr;
    uint32_t count_stamp = 0;
    int n_users = 0;  // distinct users of the current file's used members
    for (size_t oi = 0; oi < order.size(); ++oi) {
      const size_t k = order[oi];
      int c = out.entities[k], m = ents[c].file;
      if (oi == 0 || ents[out.entities[order[oi - 1]]].file != m) {
        if (m != file && !full_files.count(m) && !visible_files.count(m)) {
          // Nothing of this file is hidden or referenced by the target's function: its members' use is
          // the repository's, sorted once per engine.
          pops = &fb.member_uses(m);
        } else {
          own_pops.clear();
          const FileRec& mf = v.files()[m];
          for (int i = mf.first_entity; i < mf.first_entity + mf.n_entities; ++i)
            if (!ctx.is_hidden_entity(i)) own_pops.push_back(std::max(0, uses_without_target(i)));
          std::sort(own_pops.begin(), own_pops.end(), std::greater<>());
          pops = &own_pops;
        }
        auto um = used_members.find(m);
        members_used = um == used_members.end() ? nullptr : &um->second;
        n_users = 0;
        if (members_used) {
          // Per user of the used members: how many of them it references.
          count_stamp = sc.next_count_stamp();
          auto bump = [&](int u) {
            if (sc.count_stamp[u] != count_stamp) {
              sc.count_stamp[u] = count_stamp;
              sc.count[u] = 0;
              ++n_users;
            }
            ++sc.count[u];
          };
          for (int e : *members_used) {
            for (int u : cu.users_of[e])
              if (u != tunit) bump(u);
            if (tunit_uses(e)) bump(tunit);
          }
        }
      }
      auto& x = out.features[k];
      int pop = std::max(0, uses_without_target(c));
      int musers = cu.module_users[m] - (full_files.count(m) ? 1 : 0) + (visible_files.count(m) ? 1 : 0);
      x[f_module_share] = musers > 0 ? static_cast<double>(pop) / musers : 0;
      if (pop > 0) {
        auto above = std::lower_bound(pops->begin(), pops->end(), pop, std::greater<>());  // ties share the best rank
        x[f_module_member_rank] = 1.0 / (1.0 + static_cast<double>(above - pops->begin()));
      }
      x[f_file_imported] = imported.count(m) ? 1 : 0;
      if (!members_used) continue;
      const bool self_used = used(c);
      int others = static_cast<int>(members_used->size()) - (self_used ? 1 : 0);
      x[f_module_file_uses] = std::log1p(std::max(0, others));
      // When the candidate is itself used, a function that references no used member but it is no evidence.
      int base = n_users, both = 0;
      auto count_user = [&](int u) {
        if (sc.count_stamp[u] != count_stamp) return;
        if (self_used && sc.count[u] == 1) {
          --base;
          return;
        }
        ++both;
      };
      for (int u : cu.users_of[c])
        if (u != tunit) count_user(u);
      if (tunit_uses(c)) count_user(tunit);
      if (base <= 0) continue;
      x[f_module_couse] = static_cast<double>(both) / static_cast<double>(base);
      x[f_module_couse_log] = std::log1p(both);
    }
  }
  // ---- end module co-use -----------------------------------------------------------------------------
};

StructuralCandidates FeatureBuilder::build(const TargetContext& ctx, const std::string& query,
                                           const StructuralParams& p) {
  CandidateBuild b(*this, v_, g_, ctx, p);
  b.scope_tiers();
  b.file_usage();
  auto q = query_terms(query);
  Bm25Overrides eov = ctx.entity_overrides();
  const Bm25Index& eb = e_.entity_bm25();
  b.bm25_tiers(eb, q, eov);
  b.neighbour_votes(e_.visible_bm25(), q);
  b.local_votes(e_.visible_bm25(), q);
  b.candidate_features(eb, q, eov, query);
  b.module_couse_features();
  return std::move(b.out);
}

// The feature builder's caches (per-file usage, per-function references, repository-wide popularity) are
// facts of the engine's index, not of one query: kept with the engine so that a warm server builds them
// once. A retriever is made per request (api::Index::retrieve), and rebuilding the popularity of every
// function for each request was most of a structural request's time on sympy (docs/BENCHMARKS.md).
struct SharedFeatureBuilder {
  std::once_flag once;
  std::unique_ptr<FeatureBuilder> builder;

  FeatureBuilder& of(const Engine& e) {
    std::call_once(once, [&] { builder = std::make_unique<FeatureBuilder>(e); });
    return *builder;
  }
};

}  // namespace

// Each distinct row scored once: about a fifth of a pool's rows repeat another's (sympy: ~900 candidates,
// ~760 distinct; members of one module that nothing distinguishes), and the ranker's evaluation is the
// largest single cost of a request. A row's score depends on the row alone (a cascade's keep counts
// distinct rows). The distinct rows are moved out for scoring and back after it.
std::vector<double> rank_pool(const StructuralRanker& model, std::vector<std::vector<double>>& rows,
                              const RankCascade& cascade) {
  struct RowHash {
    // Multiply-xor over the values' bits, in four independent lanes: one chain through a row's 58 values
    // waited on each multiply (4% of a structural request's CPU on sympy); the lanes overlap.
    static uint64_t mix_bits(uint64_t h, uint64_t b) {
      h = (h ^ b) * 0xff51afd7ed558ccdULL;
      return h ^ (h >> 32);
    }
    static uint64_t mix(uint64_t h, double x) {
      uint64_t b;
      std::memcpy(&b, &x, sizeof b);
      return mix_bits(h, b);
    }
    size_t operator()(const std::vector<double>* r) const {
      uint64_t h0 = 0x9e3779b97f4a7c15ULL, h1 = 0xc2b2ae3d27d4eb4fULL, h2 = 0x165667b19e3779f9ULL,
               h3 = 0x27d4eb2f165667c5ULL;
      const double* x = r->data();
      const size_t n = r->size();
      size_t i = 0;
      for (; i + 4 <= n; i += 4) {
        h0 = mix(h0, x[i]);
        h1 = mix(h1, x[i + 1]);
        h2 = mix(h2, x[i + 2]);
        h3 = mix(h3, x[i + 3]);
      }
      for (; i < n; ++i) h0 = mix(h0, x[i]);
      return static_cast<size_t>(mix_bits(mix_bits(mix_bits(h0, h1), h2), h3));
    }
  };
  struct RowEq {
    bool operator()(const std::vector<double>* a, const std::vector<double>* b) const { return *a == *b; }
  };
  std::unordered_map<const std::vector<double>*, size_t, RowHash, RowEq> first;
  first.reserve(rows.size());
  std::vector<size_t> slot(rows.size()), firsts;
  for (size_t i = 0; i < rows.size(); ++i) {
    auto [it, fresh] = first.try_emplace(&rows[i], firsts.size());
    if (fresh) firsts.push_back(i);
    slot[i] = it->second;
  }
  if (firsts.size() == rows.size()) return model.rank_rows(rows, cascade);
  first.clear();     // its keys point into rows, about to be moved from
  struct Borrowed {  // the distinct rows, given back to `rows` however scoring ends
    std::vector<std::vector<double>>& rows;
    const std::vector<size_t>& firsts;
    std::vector<std::vector<double>> distinct;
    ~Borrowed() {
      for (size_t j = 0; j < firsts.size(); ++j) rows[firsts[j]] = std::move(distinct[j]);
    }
  } b{rows, firsts, {}};
  b.distinct.reserve(firsts.size());
  for (size_t i : firsts) b.distinct.push_back(std::move(rows[i]));
  const std::vector<double> d = model.rank_rows(b.distinct, cascade);
  std::vector<double> out(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) out[i] = d[slot[i]];
  return out;
}

namespace {

class StructuralRetriever : public Retriever {
 public:
  StructuralRetriever(const Engine& e, const RetrieverOptions& o)
      // The ranker is parsed once per process and model file (shared_structural_ranker).
      : e_(e), fb_(e.derived<SharedFeatureBuilder>().of(e)), model_(shared_structural_ranker(o.model_path)) {
    params_.neighbours = o.neighbours;
    params_.bm25 = o.bm25;
    params_.cascade.keep = o.cascade_keep;
  }
  std::string name() const override { return "structural"; }

  std::vector<Hit> retrieve(const RetrievalQuery& q) override {
    if (!q.target)
      throw Error(ExitCode::usage,
                  "the structural strategy needs --target (it ranks what a function's scope can reach)");
    auto ctxp = context_of(e_, q);
    const TargetContext& ctx = *ctxp;
    auto cand = fb_.build(ctx, query_text(e_, q, &ctx), params_);
    const auto& ents = e_.view().entities();
    std::vector<double> scores = rank_pool(*model_, cand.features, params_.cascade);  // the pool in one batch
    // The order reads only scores and entities (rank_entity_hits' order: score, then path, line, name):
    // hits are made for the kept candidates alone (a Hit for each of ~1,000 candidates, with its named
    // features, was ~13,000 map insertions and a 200 KB allocation a request, most of it cut at top k).
    std::vector<size_t> order(cand.entities.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    auto better = [&](size_t a, size_t b) {
      if (scores[a] != scores[b]) return scores[a] > scores[b];
      return entity_before(e_.view(), cand.entities[a], cand.entities[b]);
    };
    if (q.top_k > 0 && order.size() > static_cast<size_t>(q.top_k)) {
      std::partial_sort(order.begin(), order.begin() + q.top_k, order.end(), better);
      order.resize(static_cast<size_t>(q.top_k));
    } else {
      std::sort(order.begin(), order.end(), better);
    }
    std::vector<Hit> hits(order.size());
    for (size_t i = 0; i < order.size(); ++i) {
      Hit& h = hits[i];
      h.entity = cand.entities[order[i]];
      h.file = ents[h.entity].file;
      h.start_line = ents[h.entity].decorated_start_line;
      h.end_line = ents[h.entity].end_line;
      h.score = scores[order[i]];
      const auto& x = cand.features[order[i]];
      for (size_t f = 0; f < x.size(); ++f)
        if (x[f] != 0) h.features[kFeatureNames[f]] = x[f];
    }
    return hits;
  }

 private:
  const Engine& e_;
  FeatureBuilder& fb_;
  std::shared_ptr<const StructuralRanker> model_;
  StructuralParams params_;
};

}  // namespace

bool warm_structural(const Engine& e, const std::function<bool()>& stop) {
  shared_structural_ranker("");  // the shipped model, parsed once per process
  return e.derived<SharedFeatureBuilder>().of(e).warm(stop);
}

struct StructuralFeatures::Impl : FeatureBuilder {
  using FeatureBuilder::FeatureBuilder;
};
StructuralFeatures::StructuralFeatures(const Engine& e) : impl_(std::make_unique<Impl>(e)) {}
StructuralFeatures::~StructuralFeatures() = default;
StructuralCandidates StructuralFeatures::build(const TargetContext& ctx, const std::string& query,
                                               const StructuralParams& p) {
  return impl_->build(ctx, query, p);
}

std::unique_ptr<Retriever> make_structural(const Engine& e, const Models&, const RetrieverOptions& o) {
  return std::make_unique<StructuralRetriever>(e, o);
}

}  // namespace repoctx
