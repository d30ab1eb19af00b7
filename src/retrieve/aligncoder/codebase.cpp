#include "retrieve/aligncoder/codebase.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "util/error.h"
#include "util/text.h"

namespace repoctx {

Bm25Overrides CursorContext::overrides(const RepoView& v, bool with_dependencies) const {
  Bm25Overrides ov;
  const FileRec& f = v.files()[cursor.file];
  for (int s = f.first_snippet; s < f.first_snippet + f.n_snippets; ++s) ov.removed.push_back(s);
  for (size_t i = 0; i < own_terms.size(); ++i) ov.replaced.emplace_back(own_base + static_cast<int>(i), &own_terms[i]);
  if (with_dependencies)
    for (size_t i = 0; i < dependency_terms.size(); ++i)
      ov.replaced.emplace_back(dep_base + static_cast<int>(i), &dependency_terms[i]);
  return ov;
}

std::string CursorContext::own_text(size_t i) const {
  auto starts = line_starts(unfinished);
  return std::string(line_range(unfinished, starts, own_spans[i].start_line, own_spans[i].end_line));
}

std::shared_ptr<const CursorContext> make_cursor_context(const Engine& e, const Cursor& c) {
  const RepoView& v = e.view();
  if (c.file < 0 || static_cast<size_t>(c.file) >= v.files().size())
    throw Error(ExitCode::bad_input, "completion cursor: no such file in the index");
  const std::string& path = v.files()[c.file].path;
  const std::string& content = v.content(c.file);
  auto starts = line_starts(content);
  int n_lines = static_cast<int>(starts.size());
  // A file ending with a newline has an empty last "line" after it: a cursor may stand there (append).
  if (c.line < 1 || c.line > n_lines)
    throw Error(ExitCode::bad_input, "cursor line " + std::to_string(c.line) + " is outside " + path + " (" +
                                         std::to_string(v.files()[c.file].line_count) + " lines)");
  size_t line_begin = starts[static_cast<size_t>(c.line - 1)];
  size_t line_end =
      static_cast<size_t>(c.line) < starts.size() ? starts[static_cast<size_t>(c.line)] - 1 : content.size();
  if (c.column < 0 || line_begin + static_cast<size_t>(c.column) > line_end)
    throw Error(ExitCode::bad_input, "cursor column " + std::to_string(c.column) + " is past the end of line " +
                                         std::to_string(c.line) + " of " + path + " (" +
                                         std::to_string(line_end - line_begin) + " bytes)");
  auto ctx = std::make_shared<CursorContext>();
  ctx->cursor = c;
  ctx->offset = line_begin + static_cast<size_t>(c.column);
  ctx->unfinished = content.substr(0, ctx->offset);
  ctx->own_spans = split_aggregate(ctx->unfinished, v.snippet_lines());
  auto ustarts = line_starts(ctx->unfinished);
  for (const auto& sp : ctx->own_spans)
    ctx->own_terms.push_back(term_vector(line_range(ctx->unfinished, ustarts, sp.start_line, sp.end_line)));
  ctx->dependencies = dependency_snippets(e, c.file, nullptr, c.line);
  for (const auto& d : ctx->dependencies) ctx->dependency_terms.push_back(term_vector(d.text));
  ctx->own_base = static_cast<int>(v.snippets().size());
  ctx->dep_base = ctx->own_base + static_cast<int>(ctx->own_spans.size());
  return ctx;
}

size_t window_start(const std::string& unfinished, int lines) {
  if (lines <= 0) return 0;
  size_t end = unfinished.size(), start = end;
  int seen = 0;
  while (end > 0 && seen < lines) {
    size_t s = unfinished.rfind('\n', end - 1);
    s = s == std::string::npos ? 0 : s + 1;
    if (!is_blank(std::string_view(unfinished).substr(s, end - s))) {
      ++seen;
      start = s;
    }
    if (s == 0) break;
    end = s - 1;
  }
  return start == unfinished.size() ? 0 : start;
}

std::string imported_names(const Engine& e, const CursorContext& ctx) {
  std::string out;
  for (const Import& im : e.view().imports(ctx.cursor.file)) {
    if (im.line >= ctx.cursor.line) continue;
    for (const std::string* s : {&im.module, &im.name, &im.alias})
      if (!s->empty()) out += *s + " ";
  }
  return out;
}

std::string query_window(const std::string& unfinished, int lines) {
  if (lines <= 0) return unfinished;
  auto all = split_lines(unfinished);
  std::vector<std::string_view> kept;
  for (auto it = all.rbegin(); it != all.rend() && static_cast<int>(kept.size()) < lines; ++it)
    if (!is_blank(*it)) kept.push_back(*it);
  std::string out;
  for (auto it = kept.rbegin(); it != kept.rend(); ++it) {
    if (!out.empty()) out += '\n';
    out.append(*it);
  }
  return out;
}

namespace {

struct ItemOrder {
  const Engine& e;
  const CursorContext& ctx;
  int file_of(const CodebaseItem& it) const {
    switch (it.kind) {
      case CodebaseItem::Kind::base:
        return e.view().snippets()[it.id].file;
      case CodebaseItem::Kind::dependency:
        return e.view().entities()[ctx.dependencies[it.id].entities.front()].file;
      default:
        return ctx.cursor.file;
    }
  }
  int line_of(const CodebaseItem& it) const {
    switch (it.kind) {
      case CodebaseItem::Kind::base:
        return e.view().snippets()[it.id].start_line;
      case CodebaseItem::Kind::dependency:
        return e.view().entities()[ctx.dependencies[it.id].entities.front()].start_line;
      default:
        return ctx.own_spans[it.id].start_line;
    }
  }
  // Score, then path, line, kind: ties never depend on internal ids.
  bool operator()(const CodebaseItem& a, const CodebaseItem& b) const {
    if (a.score != b.score) return a.score > b.score;
    int fa = file_of(a), fb = file_of(b);
    if (fa != fb) return e.view().files()[fa].path < e.view().files()[fb].path;
    int la = line_of(a), lb = line_of(b);
    if (la != lb) return la < lb;
    if (a.kind != b.kind) return a.kind < b.kind;
    return a.id < b.id;
  }
};

}  // namespace

void rank_items(const Engine& e, const CursorContext& ctx, std::vector<CodebaseItem>& items, int top_k) {
  ItemOrder better{e, ctx};
  if (top_k > 0 && items.size() > static_cast<size_t>(top_k)) {
    std::partial_sort(items.begin(), items.begin() + top_k, items.end(), better);
    items.resize(static_cast<size_t>(top_k));
  } else {
    std::sort(items.begin(), items.end(), better);
  }
}

CrossFileIdf::CrossFileIdf(const Engine& e, const CursorContext& ctx) : bm25_(e.snippet_bm25()) {
  const FileRec& f = e.view().files()[ctx.cursor.file];
  n_ = static_cast<double>(bm25_.num_docs()) - f.n_snippets;
  for (int s = f.first_snippet; s < f.first_snippet + f.n_snippets; ++s)
    for (const auto& [t, tf] : e.view().snippet_terms(s).terms) ++file_df_[t];
}

double CrossFileIdf::operator()(uint64_t term) const {
  double df = bm25_.doc_freq(term);
  if (auto it = file_df_.find(term); it != file_df_.end()) df -= it->second;
  return std::log(1.0 + (n_ - df + 0.5) / (df + 0.5));
}

std::vector<CodebaseItem> coarse_retrieve(const Engine& e, const CursorContext& ctx, const std::string& query,
                                          bool with_dependencies, int top_k, const Bm25Params& p) {
  const auto& sn = e.view().snippets();
  Bm25Overrides ov = ctx.overrides(e.view(), with_dependencies);
  // Cross-file base snippets and dependency snippets only: the file itself is the query side.
  std::vector<char> allowed(static_cast<size_t>(ctx.dep_base) + ctx.dependencies.size(), 1);
  const FileRec& tf = e.view().files()[ctx.cursor.file];
  for (int s = tf.first_snippet; s < tf.first_snippet + tf.n_snippets; ++s) allowed[s] = 0;
  for (int s = ctx.own_base; s < ctx.dep_base; ++s) allowed[s] = 0;
  auto scored = e.snippet_bm25().score_all(query_terms(query), p, &ov, &allowed);
  std::vector<CodebaseItem> items;
  items.reserve(scored.size());
  for (const auto& sd : scored) {
    CodebaseItem it;
    it.score = sd.score;
    if (sd.doc >= ctx.dep_base) {
      it.kind = CodebaseItem::Kind::dependency;
      it.id = sd.doc - ctx.dep_base;
    } else if (sd.doc < static_cast<int>(sn.size())) {
      it.id = sd.doc;
    } else {
      continue;
    }
    items.push_back(it);
  }
  rank_items(e, ctx, items, top_k);
  return items;
}

std::vector<CodebaseItem> in_file_retrieve(const Engine& e, const CursorContext& ctx, const std::string& query,
                                           int skip_lines, int top_k, const Bm25Params& p) {
  Bm25Overrides ov = ctx.overrides(e.view(), false);
  int last_line = ctx.cursor.line;
  int first_shown = std::max(1, last_line - skip_lines + 1);
  auto q = query_terms(query);
  std::vector<CodebaseItem> items;
  for (size_t i = 0; i < ctx.own_spans.size(); ++i) {
    if (skip_lines > 0 && ctx.own_spans[i].end_line >= first_shown) continue;
    double s = e.snippet_bm25().score_doc(q, ctx.own_terms[i], p, &ov);
    if (s <= 0) continue;
    items.push_back({CodebaseItem::Kind::own, static_cast<int>(i), s});
  }
  rank_items(e, ctx, items, top_k);
  return items;
}

QueryParts query_parts(const Engine& e, const CursorContext& ctx, int query_lines,
                       std::vector<std::string> candidates) {
  QueryParts q;
  size_t at = window_start(ctx.unfinished, query_lines);
  q.far = ctx.unfinished.substr(0, at);
  q.window = query_window(ctx.unfinished, query_lines);
  q.imports = imported_names(e, ctx);
  q.candidates = std::move(candidates);
  return q;
}

std::vector<CodebaseItem> fine_pool(const Engine& e, const CursorContext& ctx, const std::string& text,
                                    bool with_dependencies, int pool) {
  auto items = coarse_retrieve(e, ctx, text, with_dependencies, pool);
  if (!with_dependencies) return items;
  std::vector<char> have(ctx.dependencies.size(), 0);
  for (const auto& it : items)
    if (it.kind == CodebaseItem::Kind::dependency) have[static_cast<size_t>(it.id)] = 1;
  for (size_t i = 0; i < have.size(); ++i)
    if (!have[i]) items.push_back({CodebaseItem::Kind::dependency, static_cast<int>(i), 0.0});
  return items;
}

std::vector<FeatureBag> item_bags(const Engine& e, const CursorContext& ctx, const std::vector<CodebaseItem>& items,
                                  const CrossFileIdf& idf, std::vector<std::string>* texts) {
  std::function<double(uint64_t)> idf_fn = [&](uint64_t t) { return idf(t); };
  std::vector<FeatureBag> out;
  out.reserve(items.size());
  for (const auto& it : items) {
    std::string text = item_text(e, ctx, it);
    BagBuilder b;
    b.add(text, TokenPlace::document);
    out.push_back(b.build(idf_fn));
    if (texts) texts->push_back(std::move(text));
  }
  return out;
}

std::string item_text(const Engine& e, const CursorContext& ctx, const CodebaseItem& it) {
  switch (it.kind) {
    case CodebaseItem::Kind::base:
      return e.snippet_text(it.id);
    case CodebaseItem::Kind::dependency:
      return ctx.dependencies[it.id].text;
    default:
      return ctx.own_text(static_cast<size_t>(it.id));
  }
}

Hit item_hit(const Engine& e, const CursorContext& ctx, const CodebaseItem& it) {
  Hit h;
  h.type = Hit::Type::snippet;
  h.score = it.score;
  const auto& v = e.view();
  switch (it.kind) {
    case CodebaseItem::Kind::base: {
      const SnippetRec& s = v.snippets()[it.id];
      h.snippet = it.id;
      h.label = "base";
      h.file = s.file;
      h.start_line = s.start_line;
      h.end_line = s.end_line;
      break;
    }
    case CodebaseItem::Kind::dependency: {
      const auto& d = ctx.dependencies[it.id];
      const EntityRec& en = v.entities()[d.entities.front()];
      h.label = "dependency";
      h.text = d.text;
      h.file = en.file;
      h.entity = d.entities.front();
      h.start_line = en.start_line;
      h.end_line = en.end_line;
      break;
    }
    default: {
      h.label = "in-file";
      h.file = ctx.cursor.file;
      h.start_line = ctx.own_spans[it.id].start_line;
      h.end_line = ctx.own_spans[it.id].end_line;
      h.text = ctx.own_text(static_cast<size_t>(it.id));
      break;
    }
  }
  return h;
}

}  // namespace repoctx
