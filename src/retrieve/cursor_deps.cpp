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

std::vector<Mention> mentions_of(const std::string& s) {
  std::vector<Mention> out;
  int line = 1;
  size_t i = 0, n = s.size();
  auto skip_string = [&](size_t at) {  // at: the opening quote; returns the offset past the literal
    char q = s[at];
    bool triple = at + 2 < n && s[at + 1] == q && s[at + 2] == q;
    size_t j = at + (triple ? 3 : 1);
    while (j < n) {
      if (s[j] == '\\') {
        if (j + 1 < n && s[j + 1] == '\n') ++line;
        j += 2;
        continue;
      }
      if (s[j] == '\n') {
        ++line;
        if (!triple) return j;
      }
      if (s[j] == q && (!triple || (j + 2 < n && s[j + 1] == q && s[j + 2] == q))) return j + (triple ? 3 : 1);
      ++j;
    }
    return n;
  };
  while (i < n) {
    char c = s[i];
    if (c == '\n') {
      ++line, ++i;
    } else if (c == '#') {
      while (i < n && s[i] != '\n') ++i;
    } else if (c == '"' || c == '\'') {
      i = skip_string(i);
    } else if (ident_start(c)) {
      size_t b = i;
      while (i < n && ident_char(s[i])) ++i;
      // String prefixes (r"", b'', f"", rb"" ...).
      if (i < n && (s[i] == '"' || s[i] == '\'') && i - b <= 2) {
        i = skip_string(i);
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
        bool triple = i + 2 < n && s[i + 1] == c && s[i + 2] == c;
        size_t j = i + (triple ? 3 : 1);
        while (j < n) {
          if (s[j] == '\\') {
            if (j + 1 < n && s[j + 1] == '\n') ++line;
            j += 2;
            continue;
          }
          if (s[j] == '\n') {
            if (!triple) break;
            ++line;
          }
          if (s[j] == c && (!triple || (j + 2 < n && s[j + 1] == c && s[j + 2] == c))) {
            j += triple ? 3 : 1;
            break;
          }
          ++j;
        }
        i = std::min(j, n);
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

std::vector<CursorCandidate> cursor_candidates(const Engine& e, const CursorContext& cc) {
  const RepoView& v = e.view();
  const SymbolGraph& g = e.graph();
  const auto& ents = v.entities();
  const int file = cc.cursor.file, line = cc.cursor.line;
  const FileRec& fr = v.files()[file];
  // The file as a copy cut at the cursor holds it: its definitions starting on the cursor's line or later,
  // and its imports and references there, are absent.
  const FileCut cut{file, line};
  // The innermost definition and function around the cursor, from the code before it alone: definitions
  // starting before the cursor's line whose body no later logical line (the cursor's own, when code
  // precedes the cursor on it) has closed by dedenting to the definition's indentation. The index's end
  // lines come from the whole file and are not used.
  int encl = -1, fn = -1;
  if (fr.language == Language::python) {
    std::vector<std::pair<int, int>> open;  // (entity, indentation)
    int next = fr.first_entity, end = fr.first_entity + fr.n_entities;
    for (const auto& [ln, indent] : logical_lines(cc.unfinished)) {
      while (!open.empty() && open.back().second >= indent) open.pop_back();
      while (next < end && ents[next].start_line < ln) ++next;
      for (; next < end && ents[next].start_line == ln; ++next)
        if (ln < line) open.emplace_back(next, indent);
    }
    for (const auto& [i, indent] : open) {
      encl = i;
      if (is_callable(ents[i].kind)) fn = i;
    }
  } else {
    for (int i = fr.first_entity; i < fr.first_entity + fr.n_entities; ++i) {
      const EntityRec& en = ents[i];
      if (en.start_line < line && en.end_line >= line) {
        if (encl < 0 || en.start_line >= ents[encl].start_line) encl = i;
        if (is_callable(en.kind) && (fn < 0 || en.start_line >= ents[fn].start_line)) fn = i;
      }
    }
  }
  size_t fn_start = fn >= 0 ? ents[fn].start_byte : cc.unfinished.size();
  if (fn_start > cc.unfinished.size()) fn_start = cc.unfinished.size();

  std::unordered_map<int, Raw> raw;
  auto offer = [&](int ent, Via via, const std::string& ref, const std::string& owner) {
    if (ent < 0 || ents[ent].file == file) return;
    EntityKind k = ents[ent].kind;
    if (!is_callable(k) && !is_type(k)) return;
    Raw& r = raw[ent];
    r.via |= via;
    if (std::find(r.refs.begin(), r.refs.end(), ref) == r.refs.end()) r.refs.push_back(ref);
    if (!owner.empty() && std::find(r.owners.begin(), r.owners.end(), owner) == r.owners.end())
      r.owners.push_back(owner);
  };
  auto offer_members = [&](int cls, Via via, const std::string& owner) {
    for (int m : g.class_members(cls))
      if (is_callable(ents[m].kind)) offer(m, via, (via == via_self ? "self." : ".") + ents[m].name, owner);
  };

  // Imports before the cursor, at module level or in a scope around the cursor.
  for (const Import& im : v.imports(file)) {
    if (im.star || im.line >= line) continue;
    if (im.scope >= 0 && (encl < 0 || !v.is_within(encl, fr.first_entity + im.scope))) continue;
    Resolution r = g.import_target(file, im);
    std::string bound = im.bound_name();
    if (r.kind == Resolution::Kind::entity) {
      offer(r.entity, via_name, bound, "");
      if (is_type(ents[r.entity].kind)) offer_members(r.entity, via_class, bound);
    } else if (r.kind == Resolution::Kind::module && r.file >= 0 && r.file != file) {
      std::string prefix = im.alias.empty() && im.name.empty() ? im.module : bound;
      const FileRec& mf = v.files()[r.file];
      for (int i = mf.first_entity; i < mf.first_entity + mf.n_entities; ++i)
        if (ents[i].parent_index < 0) offer(i, via_module, prefix + "." + ents[i].name, prefix);
    }
  }
  // Java: the types of the file's package and of its on-demand imports (`import p.*`) are in scope by name;
  // the members of those the code before the cursor mentions are reachable as Type.member.
  MentionIndex mi(cc.unfinished);
  if (fr.language == Language::java) {
    std::vector<std::string> pkgs = {fr.module};
    for (const Import& im : v.imports(file))
      if (im.star && im.line < line && im.scope < 0) pkgs.push_back(im.module);
    for (const auto& pkg : pkgs)
      for (int f : v.files_in_module(pkg)) {
        if (f == file) continue;
        const FileRec& pf = v.files()[f];
        for (int i = pf.first_entity; i < pf.first_entity + pf.n_entities; ++i)
          if (ents[i].parent_index < 0 && is_type(ents[i].kind)) {
            offer(i, via_module, ents[i].name, "");
            if (stats_of(mi, ents[i].name, fn_start).count > 0) offer_members(i, via_class, ents[i].name);
          }
      }
  }
  // The methods of the enclosing class's bases (other files).
  int cls = -1;
  for (int p = encl; p >= 0; p = ents[p].parent_index)
    if (is_type(ents[p].kind)) {
      cls = p;
      break;
    }
  if (cls >= 0)
    for (int b : g.mro(cls, &cut))
      if (b != cls && ents[b].file != file) {
        const FileRec& bf = v.files()[ents[b].file];
        for (int i = bf.first_entity; i < bf.first_entity + bf.n_entities; ++i)
          if (ents[i].parent_index == b && is_callable(ents[i].kind))
            offer(i, via_self, "self." + ents[i].name, "self");
      }
  // References before the cursor that resolve to definitions of other files; a class's members, and a
  // method's siblings, become reachable too.
  std::unordered_map<int, std::pair<int, int>> used;  // entity -> (uses, uses in the function)
  for (const Reference& rf : v.references(file)) {
    if (rf.line >= line || rf.is_store) continue;
    int scope = rf.scope >= 0 ? fr.first_entity + rf.scope : -1;
    Resolution r = g.resolve(file, scope, rf.chain, nullptr, &cut);
    if (r.kind != Resolution::Kind::entity || ents[r.entity].file == file) continue;
    auto& u = used[r.entity];
    ++u.first;
    if (fn >= 0 && scope >= 0 && v.is_within(scope, fn)) ++u.second;
  }
  for (const auto& [ent, u] : used) {
    const EntityRec& en = ents[ent];
    offer(ent, via_used, en.name, "");
    if (is_type(en.kind)) offer_members(ent, via_used, en.name);
    if (en.kind == EntityKind::method && en.parent_index >= 0) offer_members(en.parent_index, via_used, "");
  }

  std::vector<CursorCandidate> out;
  std::unordered_set<int> mentioned_files;
  for (auto& [ent, r] : raw) {
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
    out.push_back(std::move(c));
  }
  for (auto& c : out) {
    c.features["neighbour"] = c.features["fn_mentions"] == 0 && mentioned_files.count(ents[c.entity].file) ? 1 : 0;
    c.features["n_candidates"] = std::log1p(static_cast<double>(out.size()));
  }
  // Where a candidate stands among the others: a linear score of absolute gaps cannot say "the most recently
  // mentioned one", which the next line calls far more often than the second (the heuristic's strength).
  // Dense ranks over distinct values, 0 = the highest.
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
