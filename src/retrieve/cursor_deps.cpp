// `cursor-deps`: the repository definitions reachable from the code before a completion cursor, ranked by
// how that code mentions them (a listwise logit score over the features below), then AlignCoder's BM25 hits.
// `imports-recency`: the plain heuristic it is measured against (definitions imported by name, most
// recently mentioned first), with the same BM25 fill.
#include "retrieve/cursor_deps.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "retrieve/retriever.h"
#include "util/error.h"

namespace repoctx {

namespace {

// A dotted name chain in the unfinished code ("np.linalg.norm", "self.x"; ".m" when it follows a call or a
// subscript), outside comments and string literals.
struct Mention {
  std::string chain;
  int line = 0;
  size_t offset = 0;
};

bool ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool ident_char(char c) {
  return ident_start(c) || (c >= '0' && c <= '9');
}

// The end of the Python string literal whose opening quote is at `at` (a triple-quoted one when the quote is
// tripled): the offset past its closing quotes, or, for a one-line literal left open, the offset of the newline
// that ends it (n at the end of `s`). `line` counts the newlines the literal holds, escaped ones included;
// with `count_open_end`, also the newline ending an unclosed one-line literal. mentions_of passes true and
// then counts that newline again when its own loop reads it: the mention lines the fitted weights were
// trained on are counted so, and logical_lines (false) counts it once.
inline size_t skip_py_string(const std::string& s, size_t at, int& line, bool count_open_end) {
  const size_t n = s.size();
  const char q = s[at];
  const bool triple = at + 2 < n && s[at + 1] == q && s[at + 2] == q;
  size_t j = at + (triple ? 3 : 1);
  while (j < n) {
    if (s[j] == '\\') {
      if (j + 1 < n && s[j + 1] == '\n') ++line;
      j += 2;
      continue;
    }
    if (s[j] == '\n') {
      if (!triple) {
        if (count_open_end) ++line;
        return j;
      }
      ++line;
    }
    if (s[j] == q && (!triple || (j + 2 < n && s[j + 1] == q && s[j + 2] == q))) return j + (triple ? 3 : 1);
    ++j;
  }
  return n;
}

std::vector<Mention> mentions_of(const std::string& s) {
  std::vector<Mention> out;
  int line = 1;
  size_t i = 0, n = s.size();
  while (i < n) {
    char c = s[i];
    if (c == '\n') {
      ++line, ++i;
    } else if (c == '#') {
      while (i < n && s[i] != '\n') ++i;
    } else if (c == '"' || c == '\'') {
      i = skip_py_string(s, i, line, true);
    } else if (ident_start(c)) {
      size_t b = i;
      while (i < n && ident_char(s[i])) ++i;
      // String prefixes (r"", b'', f"", rb"" ...).
      if (i < n && (s[i] == '"' || s[i] == '\'') && i - b <= 2) {
        i = skip_py_string(s, i, line, true);
        continue;
      }
      while (i + 1 < n && s[i] == '.' && ident_start(s[i + 1])) {
        ++i;
        while (i < n && ident_char(s[i])) ++i;
      }
      bool after_dot = b > 0 && s[b - 1] == '.';
      out.push_back({(after_dot ? "." : "") + s.substr(b, i - b), line, b});
    } else if (c >= '0' && c <= '9') {
      while (i < n && (ident_char(s[i]) || s[i] == '.')) ++i;
    } else {
      ++i;
    }
  }
  return out;
}

// Mentions indexed by their first component ("" for chains after a dot) and by each later component.
struct MentionIndex {
  std::vector<Mention> all;
  std::unordered_map<std::string, std::vector<int>> by_first, by_attr;
  explicit MentionIndex(const std::string& text) : all(mentions_of(text)) {
    for (size_t k = 0; k < all.size(); ++k) {
      const std::string& c = all[k].chain;
      size_t p = 0;
      bool first = c[0] != '.';
      if (!first) p = 1;
      while (p <= c.size()) {
        size_t q = c.find('.', p);
        if (q == std::string::npos) q = c.size();
        std::string part = c.substr(p, q - p);
        (first ? by_first : by_attr)[part].push_back(static_cast<int>(k));
        first = false;
        p = q + 1;
      }
    }
  }
};

struct MentionStats {
  int count = 0, in_function = 0, last_line = 0;
};

bool chain_starts_with(const std::string& chain, const std::string& ref) {
  return chain.size() >= ref.size() && chain.compare(0, ref.size(), ref) == 0 &&
         (chain.size() == ref.size() || chain[ref.size()] == '.');
}

// How the unfinished code mentions `ref` (see CursorCandidate::ref); `fn_start`: the enclosing function's
// first byte (mentions from there on are inside it).
MentionStats stats_of(const MentionIndex& mi, const std::string& ref, size_t fn_start) {
  MentionStats st;
  auto add = [&](const Mention& m) {
    ++st.count;
    if (m.offset >= fn_start) ++st.in_function;
    st.last_line = std::max(st.last_line, m.line);
  };
  if (ref.empty()) return st;
  if (ref[0] == '.') {
    auto it = mi.by_attr.find(ref.substr(1));
    if (it != mi.by_attr.end())
      for (int k : it->second) add(mi.all[static_cast<size_t>(k)]);
    return st;
  }
  size_t dot = ref.find('.');
  auto it = mi.by_first.find(ref.substr(0, dot));
  if (it == mi.by_first.end()) return st;
  for (int k : it->second) {
    const Mention& m = mi.all[static_cast<size_t>(k)];
    if (chain_starts_with(m.chain, ref)) add(m);
  }
  return st;
}

// Where logical lines of Python code begin in `s` (line, indentation): lines holding code that continue
// no bracket, string or backslash continuation of an earlier line.
std::vector<std::pair<int, int>> logical_lines(const std::string& s) {
  std::vector<std::pair<int, int>> out;
  int line = 1, depth = 0;
  size_t i = 0, n = s.size();
  bool continued = false;
  while (i < n) {
    // At the start of a physical line.
    size_t b = i;
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\f')) ++i;
    if (depth == 0 && !continued && i < n && s[i] != '\n' && s[i] != '\r' && s[i] != '#')
      out.emplace_back(line, static_cast<int>(i - b));
    continued = false;
    while (i < n && s[i] != '\n') {
      char c = s[i];
      if (c == '#') {
        while (i < n && s[i] != '\n') ++i;
      } else if (c == '"' || c == '\'') {
        i = skip_py_string(s, i, line, false);
      } else if (c == '\\' && i + 1 < n && s[i + 1] == '\n') {
        continued = true;
        ++i;
      } else {
        if (c == '(' || c == '[' || c == '{') ++depth;
        if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
        ++i;
      }
    }
    if (i < n) ++i, ++line;  // the newline
  }
  return out;
}

enum Via : unsigned { via_name = 1, via_module = 2, via_class = 4, via_self = 8, via_used = 16 };

struct Raw {
  unsigned via = 0;
  std::vector<std::string> refs;    // every way the code may refer to it
  std::vector<std::string> owners;  // how it refers to the class or module it is reached through
  int uses = 0, fn_uses = 0;        // references before the cursor that resolve to it
};

}  // namespace

const std::vector<std::string>& cursor_feature_names() {
  static const std::vector<std::string> n = {
      "mentioned",     "inv_gap",  "fn_mentions",      "prefix_mentions", "uses",         "fn_uses",
      "owner_inv_gap", "owner_fn", "via_name",         "via_module",      "via_class",    "via_self",
      "via_used",      "is_class", "is_method",        "neighbour",       "n_candidates", "recency_rank",
      "owner_rank",    "fn_rank",  "log_recency_rank", "log_inv_gap"};
  return n;
}

namespace {

// The innermost definition and function around the cursor (entity indices, -1 for none).
struct Enclosing {
  int encl = -1, fn = -1;
};

// Python: from the code before the cursor alone: definitions starting before the cursor's line whose body no
// later logical line (the cursor's own, when code precedes the cursor on it) has closed by dedenting to the
// definition's indentation. The index's end lines come from the whole file and are not used.
Enclosing python_enclosing(const std::vector<EntityRec>& ents, const FileRec& fr, const std::string& unfinished,
                           int line) {
  Enclosing out;
  std::vector<std::pair<int, int>> open;  // (entity, indentation)
  int next = fr.first_entity, end = fr.first_entity + fr.n_entities;
  for (const auto& [ln, indent] : logical_lines(unfinished)) {
    while (!open.empty() && open.back().second >= indent) open.pop_back();
    while (next < end && ents[next].start_line < ln) ++next;
    for (; next < end && ents[next].start_line == ln; ++next)
      if (ln < line) open.emplace_back(next, indent);
  }
  for (const auto& [i, indent] : open) {
    out.encl = i;
    if (is_callable(ents[i].kind)) out.fn = i;
  }
  return out;
}

// Other languages: the definitions whose indexed lines span the cursor's line, the latest starting one.
Enclosing spanning_enclosing(const std::vector<EntityRec>& ents, const FileRec& fr, int line) {
  Enclosing out;
  for (int i = fr.first_entity; i < fr.first_entity + fr.n_entities; ++i) {
    const EntityRec& en = ents[i];
    if (en.start_line < line && en.end_line >= line) {
      if (out.encl < 0 || en.start_line >= ents[out.encl].start_line) out.encl = i;
      if (is_callable(en.kind) && (out.fn < 0 || en.start_line >= ents[out.fn].start_line)) out.fn = i;
    }
  }
  return out;
}

// The definitions of other files a cursor may reach, gathered with every way the code may refer to them.
struct Offers {
  const RepoView& v;
  const SymbolGraph& g;
  const std::vector<EntityRec>& ents;
  int file;
  std::unordered_map<int, Raw> raw;

  Offers(const RepoView& view, const SymbolGraph& graph, int cursor_file)
      : v(view), g(graph), ents(view.entities()), file(cursor_file) {}

  void offer(int ent, Via via, const std::string& ref, const std::string& owner) {
    if (ent < 0 || ents[ent].file == file) return;
    EntityKind k = ents[ent].kind;
    if (!is_callable(k) && !is_type(k)) return;
    Raw& r = raw[ent];
    r.via |= via;
    if (std::find(r.refs.begin(), r.refs.end(), ref) == r.refs.end()) r.refs.push_back(ref);
    if (!owner.empty() && std::find(r.owners.begin(), r.owners.end(), owner) == r.owners.end())
      r.owners.push_back(owner);
  }
  void offer_members(int cls, Via via, const std::string& owner) {
    for (int m : g.class_members(cls))
      if (is_callable(ents[m].kind)) offer(m, via, (via == via_self ? "self." : ".") + ents[m].name, owner);
  }
};

// Imports before the cursor, at module level or in a scope around the cursor.
void offer_imports(Offers& o, const FileRec& fr, int line, int encl) {
  const auto& ents = o.ents;
  for (const Import& im : o.v.imports(o.file)) {
    if (im.star || im.line >= line) continue;
    if (im.scope >= 0 && (encl < 0 || !o.v.is_within(encl, fr.first_entity + im.scope))) continue;
    Resolution r = o.g.import_target(o.file, im);
    std::string bound = im.bound_name();
    if (r.kind == Resolution::Kind::entity) {
      o.offer(r.entity, via_name, bound, "");
      if (is_type(ents[r.entity].kind)) o.offer_members(r.entity, via_class, bound);
    } else if (r.kind == Resolution::Kind::module && r.file >= 0 && r.file != o.file) {
      std::string prefix = im.alias.empty() && im.name.empty() ? im.module : bound;
      const FileRec& mf = o.v.files()[r.file];
      for (int i = mf.first_entity; i < mf.first_entity + mf.n_entities; ++i)
        if (ents[i].parent_index < 0) o.offer(i, via_module, prefix + "." + ents[i].name, prefix);
    }
  }
}

// Java and C#: the types of the file's package (C#: namespace and its enclosing namespaces) and of its
// on-demand imports (`import p.*`, `using p;`) are in scope by name; the members of those the code before the
// cursor mentions are reachable as Type.member.
void offer_package_types(Offers& o, const FileRec& fr, int line, const MentionIndex& mi, size_t fn_start) {
  const auto& ents = o.ents;
  std::vector<std::string> pkgs = {fr.module};
  if (fr.language == Language::csharp)
    for (size_t dot = fr.module.rfind('.'); dot != std::string::npos; dot = fr.module.rfind('.', dot - 1)) {
      pkgs.push_back(fr.module.substr(0, dot));
      if (dot == 0) break;
    }
  for (const Import& im : o.v.imports(o.file))
    if (im.star && im.name.empty() && im.line < line && im.scope < 0) pkgs.push_back(im.module);
  for (const auto& pkg : pkgs)
    for (int f : o.v.files_in_module(pkg)) {
      if (f == o.file) continue;
      const FileRec& pf = o.v.files()[f];
      for (int i = pf.first_entity; i < pf.first_entity + pf.n_entities; ++i)
        if (ents[i].parent_index < 0 && is_type(ents[i].kind)) {
          o.offer(i, via_module, ents[i].name, "");
          if (stats_of(mi, ents[i].name, fn_start).count > 0) o.offer_members(i, via_class, ents[i].name);
        }
    }
}

// The methods of the enclosing class's bases (other files).
void offer_base_methods(Offers& o, const FileCut& cut, int encl) {
  const auto& ents = o.ents;
  int cls = -1;
  for (int p = encl; p >= 0; p = ents[p].parent_index)
    if (is_type(ents[p].kind)) {
      cls = p;
      break;
    }
  if (cls < 0) return;
  for (int b : o.g.mro(cls, &cut))
    if (b != cls && ents[b].file != o.file) {
      const FileRec& bf = o.v.files()[ents[b].file];
      for (int i = bf.first_entity; i < bf.first_entity + bf.n_entities; ++i)
        if (ents[i].parent_index == b && is_callable(ents[i].kind))
          o.offer(i, via_self, "self." + ents[i].name, "self");
    }
}

using UseCounts = std::unordered_map<int, std::pair<int, int>>;  // entity -> (uses, uses in the function)

// References before the cursor that resolve to definitions of other files.
UseCounts count_uses(const Offers& o, const FileRec& fr, int line, int fn, const FileCut& cut) {
  UseCounts used;
  for (const Reference& rf : o.v.references(o.file)) {
    if (rf.line >= line || rf.is_store) continue;
    int scope = rf.scope >= 0 ? fr.first_entity + rf.scope : -1;
    Resolution r = o.g.resolve(o.file, scope, rf.chain, nullptr, &cut);
    if (r.kind != Resolution::Kind::entity || o.ents[r.entity].file == o.file) continue;
    auto& u = used[r.entity];
    ++u.first;
    if (fn >= 0 && scope >= 0 && o.v.is_within(scope, fn)) ++u.second;
  }
  return used;
}

// The used definitions; a class's members, and a method's siblings, become reachable too.
void offer_used(Offers& o, const UseCounts& used) {
  for (const auto& [ent, u] : used) {
    const EntityRec& en = o.ents[ent];
    o.offer(ent, via_used, en.name, "");
    if (is_type(en.kind)) o.offer_members(ent, via_used, en.name);
    if (en.kind == EntityKind::method && en.parent_index >= 0) o.offer_members(en.parent_index, via_used, "");
  }
}

// A candidate with the features of how the unfinished code mentions it and its owners, and how it is reached;
// its file joins `mentioned_files` when the enclosing function mentions it.
CursorCandidate candidate_of(const std::vector<EntityRec>& ents, int ent, const Raw& r, const MentionIndex& mi,
                             size_t fn_start, const UseCounts& used, int line,
                             std::unordered_set<int>& mentioned_files) {
  CursorCandidate c;
  c.entity = ent;
  MentionStats best;
  for (const auto& ref : r.refs) {
    MentionStats st = stats_of(mi, ref, fn_start);
    if (st.count > best.count || (st.count == best.count && st.last_line > best.last_line)) {
      best = st;
      c.ref = ref;
    }
  }
  if (c.ref.empty()) c.ref = r.refs.front();
  MentionStats owner;
  for (const auto& o : r.owners) {
    MentionStats st = stats_of(mi, o, fn_start);
    if (st.last_line > owner.last_line) owner = st;
  }
  auto it = used.find(ent);
  int uses = it == used.end() ? 0 : it->second.first, fn_uses = it == used.end() ? 0 : it->second.second;
  auto& f = c.features;
  f["mentioned"] = best.count > 0 ? 1 : 0;
  f["inv_gap"] = best.count > 0 ? 1.0 / (1.0 + (line - best.last_line)) : 0;
  f["fn_mentions"] = std::log1p(best.in_function);
  f["prefix_mentions"] = std::log1p(best.count);
  f["uses"] = std::log1p(uses);
  f["fn_uses"] = std::log1p(fn_uses);
  f["owner_inv_gap"] = owner.count > 0 ? 1.0 / (1.0 + (line - owner.last_line)) : 0;
  f["owner_fn"] = std::log1p(owner.in_function);
  f["via_name"] = (r.via & via_name) ? 1 : 0;
  f["via_module"] = (r.via & via_module) ? 1 : 0;
  f["via_class"] = (r.via & via_class) ? 1 : 0;
  f["via_self"] = (r.via & via_self) ? 1 : 0;
  f["via_used"] = (r.via & via_used) ? 1 : 0;
  f["is_class"] = is_type(ents[ent].kind) ? 1 : 0;
  f["is_method"] = ents[ent].kind == EntityKind::method ? 1 : 0;
  if (best.in_function > 0) mentioned_files.insert(ents[ent].file);
  return c;
}

// Where a candidate stands among the others: a linear score of absolute gaps cannot say "the most recently
// mentioned one", which the next line calls far more often than the second (the heuristic's strength).
// Dense ranks over distinct values, 0 = the highest.
void add_rank_features(std::vector<CursorCandidate>& out) {
  auto dense_rank = [&](auto key) {
    std::vector<double> vals;
    for (const auto& c : out) vals.push_back(key(c));
    std::sort(vals.begin(), vals.end(), std::greater<>());
    vals.erase(std::unique(vals.begin(), vals.end()), vals.end());
    std::vector<int> r;
    for (const auto& c : out)
      r.push_back(
          static_cast<int>(std::lower_bound(vals.begin(), vals.end(), key(c), std::greater<>()) - vals.begin()));
    return r;
  };
  auto feat = [](const CursorCandidate& c, const char* n) {
    auto it = c.features.find(n);
    return it == c.features.end() ? 0.0 : it->second;
  };
  auto r_recency = dense_rank([&](const CursorCandidate& c) { return feat(c, "mentioned") + feat(c, "inv_gap"); });
  auto r_owner = dense_rank([&](const CursorCandidate& c) { return feat(c, "owner_inv_gap"); });
  auto r_fn = dense_rank([&](const CursorCandidate& c) { return feat(c, "fn_mentions"); });
  for (size_t i = 0; i < out.size(); ++i) {
    auto& f = out[i].features;
    double m = f["mentioned"];
    f["recency_rank"] = m / (1.0 + r_recency[i]);
    f["owner_rank"] = (f["owner_inv_gap"] > 0 ? 1.0 : 0.0) / (1.0 + r_owner[i]);
    f["fn_rank"] = (f["fn_mentions"] > 0 ? 1.0 : 0.0) / (1.0 + r_fn[i]);
    f["log_recency_rank"] = m * std::log1p(static_cast<double>(r_recency[i]));
    f["log_inv_gap"] = f["inv_gap"] > 0 ? std::log(f["inv_gap"]) : 0.0;
  }
}

}  // namespace

std::vector<CursorCandidate> cursor_candidates(const Engine& e, const CursorContext& cc) {
  const RepoView& v = e.view();
  const auto& ents = v.entities();
  const int file = cc.cursor.file, line = cc.cursor.line;
  const FileRec& fr = v.files()[file];
  // The file as a copy cut at the cursor holds it: its definitions starting on the cursor's line or later,
  // and its imports and references there, are absent.
  const FileCut cut{file, line};
  const Enclosing around = fr.language == Language::python ? python_enclosing(ents, fr, cc.unfinished, line)
                                                           : spanning_enclosing(ents, fr, line);
  const int encl = around.encl, fn = around.fn;
  size_t fn_start = fn >= 0 ? ents[fn].start_byte : cc.unfinished.size();
  if (fn_start > cc.unfinished.size()) fn_start = cc.unfinished.size();

  Offers offers(v, e.graph(), file);
  offer_imports(offers, fr, line, encl);
  MentionIndex mi(cc.unfinished);
  if (module_is_declared_namespace(fr.language)) offer_package_types(offers, fr, line, mi, fn_start);
  offer_base_methods(offers, cut, encl);
  const UseCounts used = count_uses(offers, fr, line, fn, cut);
  offer_used(offers, used);

  std::vector<CursorCandidate> out;
  std::unordered_set<int> mentioned_files;
  for (auto& [ent, r] : offers.raw)
    out.push_back(candidate_of(ents, ent, r, mi, fn_start, used, line, mentioned_files));
  for (auto& c : out) {
    c.features["neighbour"] = c.features["fn_mentions"] == 0 && mentioned_files.count(ents[c.entity].file) ? 1 : 0;
    c.features["n_candidates"] = std::log1p(static_cast<double>(out.size()));
  }
  add_rank_features(out);
  return out;
}

namespace {

// Weights over cursor_feature_names() of a conditional (listwise) logit: per cursor, softmax over its
// candidates of w.x (a constant shared by a cursor's candidates, like n_candidates, cancels out).
// Fitted on the training libraries astropy, hypothesis, joblib, sympy, numpy, mpmath, coverage, pygments,
// yaml, attr and dateutil only (1,399 API tasks of `make-completion-tasks --kind api --max 200 --per-file 6
// --seed 1`): `complete-retrieval-eval tune-api.jsonl --methods cursor-deps --top-k 400 --dump-hits D`, then
// `scripts/fit_cursor_deps.py D` (L2 1; fitted without each of four groups of libraries, the held-out groups
// score Hit@10 0.854 / MRR@10 0.549). Being mentioned, and mentioned recently, count most; a method reached
// through a class counts least unless it is the enclosing class's own (`self.`).
constexpr double kWeights[] = {3.455, 1.858,  -0.577, -0.828, 1.190, 1.687,  1.612, 0.027,  0.645,  0.038,  -0.091,
                               2.119, -1.312, -0.295, -2.534, 0.311, -0.000, 0.113, -0.561, -0.431, -0.328, 0.279};

double score_of(const CursorCandidate& c) {
  const auto& names = cursor_feature_names();
  static_assert(sizeof(kWeights) / sizeof(kWeights[0]) == 22);
  double s = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    auto it = c.features.find(names[i]);
    if (it != c.features.end()) s += kWeights[i] * it->second;
  }
  return s;
}

class CursorDeps : public Retriever {
 public:
  CursorDeps(const Engine& e, const RetrieverOptions& o, bool heuristic) : e_(e), o_(o), heuristic_(heuristic) {}
  std::string name() const override { return heuristic_ ? "imports-recency" : "cursor-deps"; }

  std::vector<Hit> retrieve(const RetrievalQuery& q) override {
    if (!q.cursor) throw Error(ExitCode::usage, name() + " retrieves for a completion cursor: give --file F --line N");
    const CursorContext& cc = *q.cursor;
    auto cands = cursor_candidates(e_, cc);
    std::vector<Hit> hits;
    for (auto& c : cands) {
      if (heuristic_) {
        // Definitions imported by name; the most recently mentioned first, the unmentioned after them.
        if (c.features["via_name"] == 0) continue;
        c.score = c.features["mentioned"] + c.features["inv_gap"];
      } else {
        c.score = score_of(c);
      }
      Hit h = entity_hit(e_, c.entity, c.score);
      h.label = "definition";
      h.description = c.ref;
      h.features = std::move(c.features);
      hits.push_back(std::move(h));
    }
    rank_entity_hits(e_, hits, q.top_k);
    // The rest of top_k: AlignCoder's coarse retrieval (base + dependency snippets).
    int want = q.top_k > 0 ? q.top_k - static_cast<int>(hits.size()) : 0;
    if (want > 0 || q.top_k <= 0) {
      std::string text = q.text.empty() ? query_window(cc.unfinished, o_.completion.query_lines) : q.text;
      for (const auto& it : coarse_retrieve(e_, cc, text, o_.completion.dependency_snippets != 0, want)) {
        Hit h = item_hit(e_, cc, it);
        h.features["bm25"] = h.score;
        hits.push_back(std::move(h));
      }
    }
    return hits;
  }

 private:
  const Engine& e_;
  RetrieverOptions o_;
  bool heuristic_;
};

}  // namespace

std::unique_ptr<Retriever> make_cursor_deps(const Engine& e, const Models&, const RetrieverOptions& o) {
  return std::make_unique<CursorDeps>(e, o, false);
}

std::unique_ptr<Retriever> make_imports_recency(const Engine& e, const Models&, const RetrieverOptions& o) {
  return std::make_unique<CursorDeps>(e, o, true);
}

}  // namespace repoctx
