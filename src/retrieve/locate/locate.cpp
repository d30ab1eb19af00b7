#include "retrieve/locate/locate.h"

#include "repo/model.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <mutex>
#include <numeric>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "util/error.h"
#include "util/file_io.h"
#include "util/text.h"

namespace repoctx {

extern const char* const kDefaultLocateModel;

using nlohmann::json;

// ------------------------------------------------------------------------------------------- features
namespace {

enum FileF : int {
  ff_bm25,            // file BM25 / the best file's
  ff_bm25_rank,       // 1 / rank by file BM25
  ff_entity_bm25,     // best entity BM25 in the file / the best entity's
  ff_entity_rank,     // 1 / global rank of the file's best entity
  ff_path,            // a path in the text is this file (1: two or more trailing components agree, 0.5: name only)
  ff_module,          // a dotted name in the text starts with this file's module (1: two+ parts, 0.5: one)
  ff_frame,           // a stack-trace frame is in this file (as ff_path)
  ff_frame_last,      // the innermost frame that matches any file is in this file
  ff_defines,         // names from the prose defined here, each weighted 1 / files defining it (log1p of sum)
  ff_defines_code,    // the same for names only in quoted code
  ff_qualname,        // "Class.meth" suffixes of dotted names that are qualified names here
  ff_literal,         // share of the literals' word trigrams found in the file's text
  ff_stem,            // the file's name without .py is a word of the text
  ff_test,            // a test file
  ff_init,            // __init__.py
  ff_size,            // log(1 + lines)
  ff_path_words,      // share of the path's words (directories, file name; split like identifiers) in the text
  ff_defines_max,     // the rarest single name of the text defined here (its weight)
  ff_aux,             // under docs/, examples/, scripts/, benchmarks/, tools/: code around the project
  ff_bm25_logrank,    // -log(1 + rank by file BM25): decays slower than 1 / rank (large repositories)
  ff_entity_logrank,  // -log(1 + global rank of the file's best entity)
  ff_count
};

enum EntityF : int {
  ef_bm25,            // entity BM25 / the best entity's
  ef_bm25_rank,       // 1 / rank by entity BM25
  ef_name,            // its name is in the prose (weighted 1 / entities of that name)
  ef_name_code,       // its name is in quoted code only (same weight)
  ef_qualname,        // a dotted name of the text ends with its qualified name (two parts or more)
  ef_frame,           // a frame in its file names it
  ef_literal,         // share of literal trigrams found inside it
  ef_file_logit,      // its file's logit under the file model
  ef_file_rank,       // 1 / its file's rank
  ef_class,           // a class
  ef_method,          // defined in a class
  ef_parent_named,    // its class is named in the text
  ef_child_named,     // a member of it is named in the text
  ef_size,            // log(1 + lines)
  ef_test,            // in a test file
  ef_name_words,      // share of its name's words (split like identifiers) in the text
  ef_file_bm25_rank,  // 1 / its rank by entity BM25 among the candidates of its file
  ef_module,          // the module level of a file (imports, constants), not a function or class
  ef_count
};

const std::vector<std::string> kFileNames = {
    "bm25",       "bm25_rank", "entity_bm25",  "entity_rank", "path",    "module",       "frame",
    "frame_last", "defines",   "defines_code", "qualname",    "literal", "stem",         "test",
    "init",       "size",      "path_words",   "defines_max", "aux",     "bm25_logrank", "entity_logrank"};
const std::vector<std::string> kEntityNames = {"bm25",       "bm25_rank",      "name",        "name_code", "qualname",
                                               "frame",      "literal",        "file_logit",  "file_rank", "class",
                                               "method",     "parent_named",   "child_named", "size",      "test",
                                               "name_words", "file_bm25_rank", "module"};

std::vector<std::string> path_parts(std::string p) {
  std::replace(p.begin(), p.end(), '\\', '/');
  std::vector<std::string> out;
  for (size_t a = 0, b; a <= p.size(); a = b + 1) {
    b = std::min(p.find('/', a), p.size());
    std::string part = p.substr(a, b - a);
    if (!part.empty() && part != ".") out.push_back(part);
  }
  return out;
}

// How well a quoted path names a repository file: 1 when two or more trailing components agree (or the
// whole of either), 0.5 when only the file name does, 0.2 for a bare "__init__.py", 0 otherwise.
double path_match(const std::vector<std::string>& quoted, const std::vector<std::string>& file) {
  size_t k = 0;
  while (k < quoted.size() && k < file.size() && quoted[quoted.size() - 1 - k] == file[file.size() - 1 - k]) ++k;
  if (k == 0) return 0;
  if (k >= 2 || k == file.size() || k == quoted.size()) return file.back() == "__init__.py" && k < 2 ? 0.2 : 1.0;
  return file.back() == "__init__.py" ? 0.2 : 0.5;
}

std::vector<std::string> dotted_parts(const std::string& d) {
  std::vector<std::string> out;
  for (size_t a = 0, b; a <= d.size(); a = b + 1) {
    b = std::min(d.find('.', a), d.size());
    out.push_back(d.substr(a, b - a));
  }
  return out;
}

bool is_aux_path(const std::vector<std::string>& parts) {
  static const std::set<std::string> dirs = {"doc",   "docs",       "example", "examples", "script", "scripts",
                                             "bench", "benchmarks", "tools",   "extra",    "ci",     "demo",
                                             "demos", "tutorial",   "contrib", ".github"};
  for (size_t i = 0; i + 1 < parts.size(); ++i)
    if (dirs.count(parts[i])) return true;
  return false;
}

double inv_rank(size_t rank) {
  return 1.0 / static_cast<double>(rank + 1);
}

}  // namespace

const std::vector<std::string>& locate_file_feature_names() {
  return kFileNames;
}
const std::vector<std::string>& locate_entity_feature_names() {
  return kEntityNames;
}

// ---------------------------------------------------------------------------------------- file corpus
namespace {

struct FileCorpus {
  std::once_flag once;
  std::vector<TermVec> terms;
  Bm25Index index;
};

}  // namespace

const Bm25Index& file_bm25(const Engine& e) {
  auto& c = e.derived<FileCorpus>();
  std::call_once(c.once, [&] {
    const auto& files = e.view().files();
    c.terms.resize(files.size());
    std::vector<const TermVec*> docs(files.size(), nullptr);
    for (size_t f = 0; f < files.size(); ++f) {
      c.terms[f] = term_vector(files[f].path + "\n" + e.view().content(static_cast<int>(f)));
      docs[f] = &c.terms[f];
    }
    c.index.build(docs);
  });
  return c.index;
}

// --------------------------------------------------------------------------------------- the features
struct LocateFeatures::Impl {
  const Engine& e;
  RequestEvidence ev;
  std::vector<double> file_bm25, entity_bm25;             // per file / entity, 0 when unmatched
  std::vector<size_t> file_rank, entity_rank;             // rank by BM25 (ties by index), all files / matched entities
  std::vector<int> best_entity_of_file;                   // -1 when none matched
  std::unordered_map<int, double> name_prose, name_code;  // entity -> weight of its name's mention
  std::unordered_set<int> qual_named, frame_named;
  std::set<std::string> words;                                              // lowercased words of the text
  std::vector<std::string> fragments;                                       // literal trigrams
  std::unordered_map<int, std::vector<std::vector<size_t>>> fragment_hits;  // file -> per fragment, offsets

  Impl(const Engine& eng, std::string_view request) : e(eng), ev(extract_evidence(request)) {
    const auto& v = e.view();
    auto q = query_terms(request);
    Bm25Params bp;
    file_bm25.assign(v.files().size(), 0.0);
    for (const auto& sd : repoctx::file_bm25(e).score_all(q, bp)) file_bm25[static_cast<size_t>(sd.doc)] = sd.score;
    entity_bm25.assign(v.entities().size(), 0.0);
    for (const auto& sd : e.entity_bm25().score_all(q, bp)) entity_bm25[static_cast<size_t>(sd.doc)] = sd.score;
    file_rank = ranks(file_bm25);
    entity_rank = ranks(entity_bm25);
    best_entity_of_file.assign(v.files().size(), -1);
    for (size_t en = 0; en < entity_bm25.size(); ++en) {
      if (entity_bm25[en] <= 0) continue;
      int& b = best_entity_of_file[static_cast<size_t>(v.entities()[en].file)];
      if (b < 0 || entity_bm25[en] > entity_bm25[static_cast<size_t>(b)]) b = static_cast<int>(en);
    }
    match_names();
    for (const auto& w : tokenize_code(request)) words.insert(w);  // lowercased words and identifier parts
    match_literals();
  }

  static std::vector<size_t> ranks(const std::vector<double>& s) {
    std::vector<size_t> order(s.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return s[a] > s[b]; });
    std::vector<size_t> rank(s.size());
    for (size_t i = 0; i < order.size(); ++i) rank[order[i]] = i;
    return rank;
  }

  // Names of the text -> the functions and classes that bear them, weighted by how rare the name is.
  void match_names() {
    const auto& v = e.view();
    auto mark = [&](const std::vector<std::string>& names, std::unordered_map<int, double>& into) {
      for (const auto& n : names) {
        std::vector<int> ents;
        for (int en : v.entities_named(n))
          if (is_callable(v.entities()[en].kind) || is_type(v.entities()[en].kind)) ents.push_back(en);
        for (int en : ents) into[en] = std::max(into[en], 1.0 / static_cast<double>(ents.size()));
      }
    };
    mark(ev.identifiers, name_prose);
    std::vector<std::string> code_only;
    std::set<std::string> prose(ev.identifiers.begin(), ev.identifiers.end());
    for (const auto& n : ev.code_identifiers)
      if (!prose.count(n)) code_only.push_back(n);
    for (const auto& n : ev.exceptions)
      if (!prose.count(n)) code_only.push_back(n);
    mark(code_only, name_code);
    for (const auto& d : ev.dotted) {
      auto parts = dotted_parts(d);
      if (parts.size() < 2) continue;
      for (int en : v.entities_named(parts.back())) {
        const std::string& qn = v.entities()[en].qualname;
        // "Class.meth" or longer: the last two parts of the dotted name end the qualified name.
        std::string tail = parts[parts.size() - 2] + "." + parts.back();
        if (qn == tail || ends_with(qn, "." + tail)) qual_named.insert(en);
      }
    }
    for (const auto& fr : ev.frames) {
      if (fr.function.empty()) continue;
      auto quoted = path_parts(fr.path);
      for (int en : v.entities_named(fr.function))
        if (path_match(quoted, path_parts(v.files()[v.entities()[en].file].path)) >= 0.5) frame_named.insert(en);
    }
  }

  void match_literals() {
    for (const auto& lit : ev.literals)
      for (auto& f : literal_fragments(lit))
        if (std::find(fragments.begin(), fragments.end(), f) == fragments.end() && fragments.size() < 32)
          fragments.push_back(std::move(f));
    if (fragments.empty()) return;
    const auto& v = e.view();
    for (size_t f = 0; f < v.files().size(); ++f) {
      const std::string& text = v.content(static_cast<int>(f));
      std::vector<std::vector<size_t>> at(fragments.size());
      bool any = false;
      for (size_t i = 0; i < fragments.size(); ++i)
        for (size_t pos = text.find(fragments[i]); pos != std::string::npos && at[i].size() < 16;
             pos = text.find(fragments[i], pos + 1)) {
          at[i].push_back(pos);
          any = true;
        }
      if (any) fragment_hits[static_cast<int>(f)] = std::move(at);
    }
  }

  // Share of the words of `name` (split like identifiers: "_transports/mock.py" -> transports, mock) that
  // the text uses; "py", "src" and "init" say nothing.
  double word_share(const std::string& name) const {
    std::set<std::string> parts;
    for (auto& w : tokenize_code(name))
      if (w != "py" && w != "src" && w != "init" && w != "main" && w != "lib") parts.insert(w);
    if (parts.empty()) return 0;
    size_t hit = 0;
    for (const auto& w : parts) {
      std::string singular = w.size() > 3 && w.back() == 's' ? w.substr(0, w.size() - 1) : w;
      hit += words.count(w) || words.count(singular) || words.count(w + "s") ? 1 : 0;
    }
    return static_cast<double>(hit) / static_cast<double>(parts.size());
  }

  std::vector<double> file_row(int f, double max_file, double max_entity, const std::vector<double>& frame_match,
                               int last_frame_file) const {
    const auto& v = e.view();
    const auto& fr = v.files()[static_cast<size_t>(f)];
    std::vector<double> x(ff_count, 0.0);
    size_t uf = static_cast<size_t>(f);
    x[ff_bm25] = max_file > 0 ? file_bm25[uf] / max_file : 0;
    x[ff_bm25_rank] = file_bm25[uf] > 0 ? inv_rank(file_rank[uf]) : 0;
    x[ff_bm25_logrank] = -std::log1p(static_cast<double>(file_bm25[uf] > 0 ? file_rank[uf] : file_bm25.size()));
    int be = best_entity_of_file[uf];
    if (be >= 0) {
      x[ff_entity_bm25] = max_entity > 0 ? entity_bm25[static_cast<size_t>(be)] / max_entity : 0;
      x[ff_entity_rank] = inv_rank(entity_rank[static_cast<size_t>(be)]);
      x[ff_entity_logrank] = -std::log1p(static_cast<double>(entity_rank[static_cast<size_t>(be)]));
    } else {
      x[ff_entity_logrank] = -std::log1p(static_cast<double>(entity_bm25.size()));
    }
    auto parts = path_parts(fr.path);
    for (const auto& p : ev.paths) x[ff_path] = std::max(x[ff_path], path_match(path_parts(p), parts));
    for (const auto& d : ev.dotted) {
      auto dp = dotted_parts(d);
      std::string prefix;
      for (size_t i = 0; i < dp.size(); ++i) {
        prefix += (i ? "." : "") + dp[i];
        if (prefix == fr.module) x[ff_module] = std::max(x[ff_module], i >= 1 ? 1.0 : 0.5);
      }
    }
    x[ff_frame] = frame_match[uf];
    x[ff_frame_last] = f == last_frame_file ? 1 : 0;
    double prose = 0, code = 0, qual = 0;
    for (int en = fr.first_entity; en < fr.first_entity + fr.n_entities; ++en) {
      if (auto it = name_prose.find(en); it != name_prose.end()) {
        prose += it->second;
        x[ff_defines_max] = std::max(x[ff_defines_max], it->second);
      }
      if (auto it = name_code.find(en); it != name_code.end()) code += it->second;
      qual += qual_named.count(en) ? 1 : 0;
    }
    x[ff_defines] = std::log1p(prose);
    x[ff_defines_code] = std::log1p(code);
    x[ff_qualname] = std::log1p(qual);
    if (auto it = fragment_hits.find(f); it != fragment_hits.end()) {
      size_t found = 0;
      for (const auto& at : it->second) found += at.empty() ? 0 : 1;
      x[ff_literal] = static_cast<double>(found) / static_cast<double>(fragments.size());
    }
    std::string base = parts.empty() ? "" : parts.back();
    std::string stem = ends_with(base, ".py") ? base.substr(0, base.size() - 3) : base;
    for (char& c : stem) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (stem != "__init__" && stem != "__main__") {
      while (!stem.empty() && stem[0] == '_') stem.erase(0, 1);
      std::string singular = !stem.empty() && stem.back() == 's' ? stem.substr(0, stem.size() - 1) : stem;
      x[ff_stem] = stem.size() >= 3 && (words.count(stem) || words.count(singular) || words.count(stem + "s")) ? 1 : 0;
    }
    x[ff_path_words] = word_share(fr.path);
    x[ff_test] = is_test_path(fr.path) ? 1 : 0;
    x[ff_aux] = is_aux_path(parts) ? 1 : 0;
    x[ff_init] = base == "__init__.py" ? 1 : 0;
    x[ff_size] = std::log1p(fr.line_count);
    return x;
  }
};

LocateFeatures::LocateFeatures(const Engine& e, std::string_view request) : impl_(std::make_unique<Impl>(e, request)) {}
LocateFeatures::~LocateFeatures() = default;
const RequestEvidence& LocateFeatures::evidence() const {
  return impl_->ev;
}

LocateFileCandidates LocateFeatures::files() const {
  const Impl& m = *impl_;
  const auto& v = m.e.view();
  size_t n = v.files().size();
  double max_file = n ? *std::max_element(m.file_bm25.begin(), m.file_bm25.end()) : 0;
  double max_entity = m.entity_bm25.empty() ? 0 : *std::max_element(m.entity_bm25.begin(), m.entity_bm25.end());
  std::vector<double> frame_match(n, 0.0);
  int last_frame_file = -1;
  std::vector<std::vector<std::string>> file_parts(n);
  for (size_t f = 0; f < n; ++f) file_parts[f] = path_parts(v.files()[f].path);
  for (const auto& fr : m.ev.frames) {
    auto quoted = path_parts(fr.path);
    int best = -1;
    double best_score = 0;
    for (size_t f = 0; f < n; ++f) {
      double s = path_match(quoted, file_parts[f]);
      frame_match[f] = std::max(frame_match[f], s);
      if (s > best_score) best_score = s, best = static_cast<int>(f);
    }
    if (best >= 0 && best_score >= 0.5) last_frame_file = best;
  }
  LocateFileCandidates out;
  for (size_t f = 0; f < n; ++f) {
    if (v.files()[f].language == Language::unknown) continue;
    out.files.push_back(static_cast<int>(f));
    out.x.push_back(m.file_row(static_cast<int>(f), max_file, max_entity, frame_match, last_frame_file));
  }
  return out;
}

std::string locate_entity_key(const RepoView& v, int candidate) {
  if (candidate < 0) return v.files()[static_cast<size_t>(-1 - candidate)].path + "::<module>";
  const auto& en = v.entities()[static_cast<size_t>(candidate)];
  return v.files()[static_cast<size_t>(en.file)].path + "::" + en.qualname;
}

namespace {

// The module level of each of the best files (what a change to imports or constants edits; the gold
// entities of such lines are "path::<module>"), as candidates -1 - file.
void add_module_candidates(const RepoView& v, const LocateFileCandidates& fc, const std::vector<size_t>& order,
                           size_t top_files, const std::vector<double>& file_logits, LocateEntityCandidates& out) {
  for (size_t r = 0; r < order.size() && r < top_files; ++r) {
    int f = fc.files[order[r]];
    const auto& fr = v.files()[static_cast<size_t>(f)];
    int first_def = fr.line_count;
    for (int en = fr.first_entity; en < fr.first_entity + fr.n_entities; ++en)
      if (v.entities()[static_cast<size_t>(en)].parent_index < 0)
        first_def = std::min(first_def, v.entities()[static_cast<size_t>(en)].decorated_start_line - 1);
    std::vector<double> x(ef_count, 0.0);
    x[ef_module] = 1;
    x[ef_file_logit] = file_logits[order[r]];
    x[ef_file_rank] = inv_rank(r);
    x[ef_size] = std::log1p(std::max(0, first_def));
    x[ef_test] = is_test_path(fr.path) ? 1 : 0;
    out.entities.push_back(-1 - f);
    out.x.push_back(std::move(x));
  }
}

}  // namespace

LocateEntityCandidates LocateFeatures::entities(const LocateFileCandidates& fc, const std::vector<double>& file_logits,
                                                size_t top_files) const {
  const Impl& m = *impl_;
  const auto& v = m.e.view();
  std::vector<size_t> order(fc.files.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return file_logits[a] > file_logits[b]; });
  std::unordered_map<int, std::pair<double, size_t>> file_info;  // file -> (logit, rank)
  for (size_t r = 0; r < order.size(); ++r) file_info[fc.files[order[r]]] = {file_logits[order[r]], r};
  std::set<int> cand;
  for (size_t r = 0; r < order.size() && r < top_files; ++r) {
    const auto& fr = v.files()[static_cast<size_t>(fc.files[order[r]])];
    for (int en = fr.first_entity; en < fr.first_entity + fr.n_entities; ++en) cand.insert(en);
  }
  for (const auto* named : {&m.name_prose, &m.name_code})
    for (const auto& [en, w] : *named) cand.insert(en);
  for (int en : m.qual_named) cand.insert(en);
  for (int en : m.frame_named) cand.insert(en);
  double max_entity = m.entity_bm25.empty() ? 0 : *std::max_element(m.entity_bm25.begin(), m.entity_bm25.end());
  std::unordered_set<int> named_any;
  for (const auto* named : {&m.name_prose, &m.name_code})
    for (const auto& [en, w] : *named) named_any.insert(en);
  for (int en : m.qual_named) named_any.insert(en);
  std::unordered_set<int> parents_of_named;
  for (int en : named_any)
    for (int p = v.entities()[static_cast<size_t>(en)].parent_index; p >= 0;
         p = v.entities()[static_cast<size_t>(p)].parent_index)
      parents_of_named.insert(p);
  LocateEntityCandidates out;
  for (int en : cand) {
    const auto& rec = v.entities()[static_cast<size_t>(en)];
    if (!is_callable(rec.kind) && !is_type(rec.kind)) continue;
    auto fi = file_info.find(rec.file);
    if (fi == file_info.end()) continue;  // not a ranked file (a data file)
    size_t ue = static_cast<size_t>(en);
    std::vector<double> x(ef_count, 0.0);
    x[ef_bm25] = max_entity > 0 ? m.entity_bm25[ue] / max_entity : 0;
    x[ef_bm25_rank] = m.entity_bm25[ue] > 0 ? inv_rank(m.entity_rank[ue]) : 0;
    if (auto it = m.name_prose.find(en); it != m.name_prose.end()) x[ef_name] = it->second;
    if (auto it = m.name_code.find(en); it != m.name_code.end()) x[ef_name_code] = it->second;
    x[ef_qualname] = m.qual_named.count(en) ? 1 : 0;
    x[ef_frame] = m.frame_named.count(en) ? 1 : 0;
    if (auto it = m.fragment_hits.find(rec.file); it != m.fragment_hits.end()) {
      size_t found = 0;
      for (const auto& at : it->second)
        found += std::any_of(at.begin(), at.end(), [&](size_t p) { return p >= rec.start_byte && p < rec.end_byte; });
      x[ef_literal] = static_cast<double>(found) / static_cast<double>(m.fragments.size());
    }
    x[ef_file_logit] = fi->second.first;
    x[ef_file_rank] = inv_rank(fi->second.second);
    x[ef_class] = is_type(rec.kind) ? 1 : 0;
    bool method = rec.parent_index >= 0 && is_type(v.entities()[static_cast<size_t>(rec.parent_index)].kind);
    x[ef_method] = method ? 1 : 0;
    x[ef_parent_named] = rec.parent_index >= 0 && named_any.count(rec.parent_index) ? 1 : 0;
    x[ef_child_named] = parents_of_named.count(en) ? 1 : 0;
    x[ef_size] = std::log1p(std::max(0, rec.end_line - rec.decorated_start_line + 1));
    x[ef_test] = is_test_path(v.files()[static_cast<size_t>(rec.file)].path) ? 1 : 0;
    x[ef_name_words] = m.word_share(rec.name);
    out.entities.push_back(en);
    out.x.push_back(std::move(x));
  }
  // Rank by entity BM25 among the candidates of the same file (1 = its file's best).
  std::unordered_map<int, std::vector<size_t>> by_file;
  for (size_t i = 0; i < out.entities.size(); ++i)
    by_file[v.entities()[static_cast<size_t>(out.entities[i])].file].push_back(i);
  for (auto& [f, idx] : by_file) {
    std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return out.x[a][ef_bm25] > out.x[b][ef_bm25]; });
    for (size_t r = 0; r < idx.size(); ++r)
      out.x[idx[r]][ef_file_bm25_rank] = out.x[idx[r]][ef_bm25] > 0 ? inv_rank(r) : 0;
  }
  add_module_candidates(v, fc, order, top_files, file_logits, out);
  return out;
}

// ----------------------------------------------------------------------------------------------- model
double LogisticModel::logit(const std::vector<double>& x) const {
  double z = bias;
  for (size_t i = 0; i < weights.size() && i < x.size(); ++i)
    z += weights[i] * (x[i] - mean[i]) / (scale[i] > 0 ? scale[i] : 1.0);
  return z;
}

json LogisticModel::to_json() const {
  json w = json::object();
  for (size_t i = 0; i < features.size(); ++i)
    w[features[i]] = {{"weight", weights[i]}, {"mean", mean[i]}, {"scale", scale[i]}};
  return {{"bias", bias}, {"features", w}, {"order", features}};
}

LogisticModel LogisticModel::from_json(const json& j, const std::vector<std::string>& expected,
                                       const std::string& origin) {
  if (!j.is_object() || !j.contains("order") || !j.contains("features") || !j.contains("bias"))
    throw Error(ExitCode::bad_input, "locate model '" + origin + "' lacks bias/features/order");
  LogisticModel m;
  m.features = j["order"].get<std::vector<std::string>>();
  if (m.features != expected)
    throw Error(ExitCode::bad_input, "locate model '" + origin + "' has features [" + join(m.features, ", ") +
                                         "], this build computes [" + join(expected, ", ") +
                                         "]: retrain it with `repoctx train-locate`");
  m.bias = j["bias"].get<double>();
  for (const auto& f : m.features) {
    const auto& w = j["features"].at(f);
    m.weights.push_back(w.at("weight").get<double>());
    m.mean.push_back(w.at("mean").get<double>());
    m.scale.push_back(w.at("scale").get<double>());
  }
  return m;
}

std::string LocateModel::to_json() const {
  json j = {
      {"kind", "repoctx-locate"}, {"file", file.to_json()}, {"entity", entity.to_json()}, {"provenance", provenance}};
  return j.dump(1) + "\n";
}

LocateModel LocateModel::from_json(const std::string& text, const std::string& origin) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || j.value("kind", "") != "repoctx-locate")
    throw Error(ExitCode::bad_input, "'" + origin + "' is not a locate model (JSON with kind \"repoctx-locate\")");
  try {
    LocateModel m;
    m.file = LogisticModel::from_json(j["file"], kFileNames, origin);
    m.entity = LogisticModel::from_json(j["entity"], kEntityNames, origin);
    m.provenance = j.value("provenance", json::object());
    return m;
  } catch (const json::exception& e) {
    throw Error(ExitCode::bad_input, "locate model '" + origin + "' is malformed: " + e.what());
  }
}

LocateModel LocateModel::load(const std::string& path) {
  if (path.empty()) {
    if (!*kDefaultLocateModel)
      throw Error(ExitCode::not_found,
                  "this build has no built-in locate model (models/locate.json was missing at build time): train "
                  "one with `repoctx train-locate` and pass it with --locate-model FILE");
    return from_json(kDefaultLocateModel, "built-in");
  }
  return from_json(read_file(path, "locate model"), path);
}

}  // namespace repoctx
