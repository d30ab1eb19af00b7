// The completion methods of AlignCoder's evaluation, each a strategy of the registry. All of them retrieve
// for a cursor (RetrievalQuery::cursor) from the same split-aggregate codebase under the same cut-copy rule
// (codebase.h); the query is RLCoder's: the last `query_lines` non-blank lines of the unfinished code.
//
//   aligncoder    III-B + III-C: enhanced query (unfinished code + k sampled candidates), BM25's best `pool`
//                 snippets of it re-ranked by the trained AlignRetriever encoder; base + dependency snippets
//   rlcoder       RLCoder: BM25's best `pool` re-ranked by a trained encoder, query = unfinished code only
//   reacc         ReACC: hybrid sparse + dense, w norm(BM25) + (1 - w) norm(dense) over BM25's best `pool`;
//                 dense = the configured embedding model; without one, ReACC is its BM25 half only and its
//                 trace says so (no untrained stand-in is presented as a dense retriever)
//   repocoder     RepoCoder: its own sparse retriever (every other file cut into windows of `query_lines` lines
//                 sliding by half of that, scored by the Jaccard index of token sets), then generate and
//                 retrieve again with the completion appended (2 rounds)
//   in-file       BM25 over the file's own snippets above the part the prompt shows
//   no-retrieval  nothing (the unfinished code alone)
#include <algorithm>
#include <map>
#include <mutex>

#include <fmt/format.h>

#include "llm/metered.h"
#include "retrieve/aligncoder/codebase.h"
#include "retrieve/aligncoder/encoder.h"
#include "retrieve/aligncoder/prompt.h"
#include "retrieve/aligncoder/query_enhancement.h"
#include "retrieve/retriever.h"
#include "util/error.h"
#include "util/hash.h"

namespace repoctx {

using nlohmann::json;

namespace {

const CursorContext& need_cursor(const RetrievalQuery& q, const std::string& who) {
  if (!q.cursor)
    throw Error(ExitCode::usage,
                who + " completes code at a cursor: give the file and the position (--file F --line N [--column C])");
  return *q.cursor;
}

std::vector<Hit> to_hits(const Engine& e, const CursorContext& ctx, const std::vector<CodebaseItem>& items) {
  std::vector<Hit> hits;
  hits.reserve(items.size());
  for (const auto& it : items) hits.push_back(item_hit(e, ctx, it));
  return hits;
}

CompletionParams with_default_dependencies(CompletionParams p, bool dflt) {
  if (p.dependency_snippets < 0) p.dependency_snippets = dflt ? 1 : 0;
  return p;
}

json items_json(const Engine& e, const CursorContext& ctx, const std::vector<CodebaseItem>& items) {
  json a = json::array();
  for (const auto& it : items) {
    Hit h = item_hit(e, ctx, it);
    a.push_back(
        fmt::format("{} {}:{}-{} {:.4f}", h.label, e.view().files()[h.file].path, h.start_line, h.end_line, it.score));
  }
  return a;
}

// L2-normalised embeddings of texts by a frozen embedder (one request; the cache serves repeats).
std::vector<std::vector<float>> embed_all(LlmBackend& emb, const std::vector<std::string>& texts, EmbedTask task) {
  EmbedRequest r;
  r.texts = texts;
  r.task = task;
  r.purpose = "completion_dense";
  auto res = emb.embed(r).vectors;
  for (auto& v : res) {
    double n2 = 0;
    for (float x : v) n2 += static_cast<double>(x) * x;
    if (n2 > 0)
      for (float& x : v) x = static_cast<float>(x / std::sqrt(n2));
  }
  return res;
}

// The fine-grained retrieval of III-C: the encoder's cosine between the query (the unfinished code around
// the window, the imported names, the candidates) and each pooled snippet replaces BM25's score.
void encoder_rerank(const Engine& e, const CursorContext& ctx, const AlignEncoder& enc, std::vector<CodebaseItem>& pool,
                    const std::vector<std::string>& candidates, const CompletionParams& p, LlmBackend* embedder) {
  CrossFileIdf idf(e, ctx);
  QueryParts parts = query_parts(e, ctx, p.query_lines, candidates);
  BagBuilder qb;
  qb.add_query(parts, p.recent_lines);
  FeatureBag q = qb.build([&](uint64_t t) { return idf(t); });
  std::vector<std::string> texts;
  std::vector<FeatureBag> docs = item_bags(e, ctx, pool, idf, &texts);
  if (enc.config().mix && !pool.empty()) {
    if (!embedder)
      throw Error(ExitCode::usage, "this AlignRetriever model was trained with the embedding model '" +
                                       enc.config().embedder + "': configure it (--embed-model / --embed-endpoint)");
    std::string qtext = parts.window;
    for (const auto& c : candidates) qtext += "\n" + c;
    q.frozen = embed_all(*embedder, {qtext}, EmbedTask::query).at(0);
    auto dv = embed_all(*embedder, texts, EmbedTask::document);
    for (size_t i = 0; i < docs.size(); ++i) docs[i].frozen = std::move(dv[i]);
  }
  std::vector<const FeatureBag*> ptrs;
  for (const auto& d : docs) ptrs.push_back(&d);
  auto s = enc.scores(q, ptrs);
  for (size_t i = 0; i < pool.size(); ++i) pool[i].score = s[i];
}

// aligncoder and rlcoder: a pool from BM25, re-ranked by a trained encoder.
class EncoderRetriever : public Retriever {
 public:
  EncoderRetriever(std::string name, const Engine& e, const Models& m, const RetrieverOptions& o, bool enhanced)
      : name_(std::move(name)),
        e_(e),
        m_(m),
        p_(with_default_dependencies(o.completion, enhanced)),
        enhanced_(enhanced),
        enc_(enhanced ? load_align_encoder(o.completion.model_path, "aligncoder")
                      : load_align_encoder(o.completion.rlcoder_model_path, "rlcoder")) {
    if (enc_.config().mix && !m.embedder)
      throw Error(ExitCode::usage, "the AlignRetriever model was trained with the embedding model '" +
                                       enc_.config().embedder + "': configure it (--embed-model / --embed-endpoint)");
    if (enhanced_ && p_.candidates != "sample" && p_.candidates != "oracle" && p_.candidates != "none")
      throw Error(ExitCode::usage, "candidates must be sample, oracle or none, got '" + p_.candidates + "'");
  }
  std::string name() const override { return name_; }
  std::vector<Hit> retrieve(const RetrievalQuery& q) override { return run(q).hits; }

  RetrievalResult run(const RetrievalQuery& q) override {
    const CursorContext& ctx = need_cursor(q, name_);
    RetrievalResult r;
    std::string window = query_window(ctx.unfinished, p_.query_lines);
    std::vector<std::string> candidates;
    json trace = {{"method", name_}, {"window_lines", p_.query_lines}};
    if (enhanced_) {
      if (!q.drafts.empty()) {
        candidates = q.drafts;
        trace["candidates_from"] = "given";
      } else if (p_.candidates == "oracle") {
        throw Error(ExitCode::usage,
                    "candidates=oracle needs the ground truth as the query's drafts (retrieve --completion)");
      } else if (p_.candidates == "sample") {
        LlmBackend& llm = m_.need_llm("aligncoder's query enhancement (or candidates=none / oracle)");
        MeteredBackend metered(llm);
        Enhancement en = enhance_query(e_, ctx, metered, p_);
        candidates = en.candidates;
        r.usage = metered.usage();
        trace["candidates_from"] = en.cached ? "cache" : "sampler";
        trace["coarse"] = items_json(e_, ctx, en.coarse);
      }
      trace["candidates"] = candidates;
    }
    std::string text = window;
    for (const auto& c : candidates) text += "\n" + c;
    auto pool = fine_pool(e_, ctx, text, p_.dependency_snippets != 0, p_.pool);
    encoder_rerank(e_, ctx, enc_, pool, candidates, p_, m_.embedder);
    rank_items(e_, ctx, pool, q.top_k);
    r.hits = to_hits(e_, ctx, pool);
    r.trace = std::move(trace);
    return r;
  }

 private:
  std::string name_;
  const Engine& e_;
  Models m_;
  CompletionParams p_;
  bool enhanced_;
  AlignEncoder enc_;
};

class ReaccRetriever : public Retriever {
 public:
  ReaccRetriever(const Engine& e, const Models& m, const RetrieverOptions& o)
      : e_(e), m_(m), p_(with_default_dependencies(o.completion, false)) {}
  std::string name() const override { return "reacc"; }
  std::vector<Hit> retrieve(const RetrievalQuery& q) override { return run(q).hits; }
  RetrievalResult run(const RetrievalQuery& q) override {
    const CursorContext& ctx = need_cursor(q, "reacc");
    std::string window = query_window(ctx.unfinished, p_.query_lines);
    auto pool = coarse_retrieve(e_, ctx, window, p_.dependency_snippets != 0, p_.pool);
    RetrievalResult r;
    if (!m_.embedder) {
      rank_items(e_, ctx, pool, q.top_k);
      r.hits = to_hits(e_, ctx, pool);
      r.trace = {{"method", "reacc"},
                 {"dense",
                  "none: no embedding model is configured (--embed-model / --embed-endpoint), so these are "
                  "ReACC's BM25 half only"}};
      return r;
    }
    std::vector<double> sparse, dense;
    for (const auto& it : pool) sparse.push_back(it.score);
    {
      std::vector<std::string> texts;
      for (const auto& it : pool) texts.push_back(item_text(e_, ctx, it));
      auto qv = embed_all(*m_.embedder, {window}, EmbedTask::query).at(0);
      auto dv = texts.empty() ? std::vector<std::vector<float>>{} : embed_all(*m_.embedder, texts, EmbedTask::document);
      for (const auto& v : dv) {
        double s = 0;
        for (size_t i = 0; i < v.size() && i < qv.size(); ++i) s += static_cast<double>(v[i]) * qv[i];
        dense.push_back(s);
      }
    }
    auto mixed = hybrid_scores(sparse, dense, p_.hybrid_weight);
    for (size_t i = 0; i < pool.size(); ++i) pool[i].score = mixed[i];
    rank_items(e_, ctx, pool, q.top_k);
    r.hits = to_hits(e_, ctx, pool);
    r.trace = {{"method", "reacc"}, {"dense", m_.embedder->identity()}, {"hybrid_weight", p_.hybrid_weight}};
    return r;
  }

 private:
  const Engine& e_;
  Models m_;
  CompletionParams p_;
};

// RepoCoder's sparse retriever (its section 3): the repository's files cut into windows of the query's
// length sliding by half of it, each a set of tokens (maximal alphanumeric runs, RepoCoder's split), scored
// by the Jaccard index with the query's set. Built once per engine and window length; the cursor's own file
// is the query side and never a result (the rule of every completion method here, codebase.h).
struct RepoCoderWindows {
  struct Window {
    int file = -1, start = 0, end = 0;  // 1-based lines
    std::vector<uint64_t> tokens;       // sorted, distinct
  };
  std::mutex mu;
  std::map<int, std::shared_ptr<const std::vector<Window>>> by_lines;
};

std::vector<uint64_t> token_set(std::string_view text) {
  std::vector<uint64_t> out;
  size_t i = 0, n = text.size();
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); };
  while (i < n) {
    while (i < n && !alnum(text[i])) ++i;
    size_t b = i;
    while (i < n && alnum(text[i])) ++i;
    if (i > b) out.push_back(hash64(text.substr(b, i - b)));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

double jaccard(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b) {
  size_t i = 0, j = 0, both = 0;
  while (i < a.size() && j < b.size()) {
    if (a[i] == b[j])
      ++both, ++i, ++j;
    else if (a[i] < b[j])
      ++i;
    else
      ++j;
  }
  size_t any = a.size() + b.size() - both;
  return any ? static_cast<double>(both) / static_cast<double>(any) : 0.0;
}

std::shared_ptr<const std::vector<RepoCoderWindows::Window>> repocoder_windows(const Engine& e, int lines) {
  auto& cache = e.derived<RepoCoderWindows>();
  std::lock_guard<std::mutex> lock(cache.mu);
  auto& slot = cache.by_lines[lines];
  if (slot) return slot;
  auto out = std::make_shared<std::vector<RepoCoderWindows::Window>>();
  const RepoView& v = e.view();
  int slide = std::max(1, lines / 2);
  for (int f = 0; f < static_cast<int>(v.files().size()); ++f) {
    const std::string& content = v.content(f);
    std::vector<size_t> starts{0};
    for (size_t i = 0; i < content.size(); ++i)
      if (content[i] == '\n' && i + 1 < content.size()) starts.push_back(i + 1);
    int n = content.empty() ? 0 : static_cast<int>(starts.size());
    for (int b = 0; b < n; b += slide) {
      int end = std::min(n, b + lines);
      size_t from = starts[b], to = end < n ? starts[end] : content.size();
      RepoCoderWindows::Window w{f, b + 1, end, token_set(std::string_view(content).substr(from, to - from))};
      if (!w.tokens.empty()) out->push_back(std::move(w));
      if (end == n) break;
    }
  }
  slot = out;
  return slot;
}

std::vector<Hit> repocoder_retrieve(const Engine& e, const CursorContext& ctx, const std::string& query, int lines,
                                    int top_k) {
  auto windows = repocoder_windows(e, lines);
  auto q = token_set(query);
  std::vector<std::pair<double, size_t>> scored;
  for (size_t i = 0; i < windows->size(); ++i) {
    const auto& w = (*windows)[i];
    if (w.file == ctx.cursor.file) continue;
    double s = jaccard(q, w.tokens);
    if (s > 0) scored.push_back({s, i});
  }
  // Best first; ties by file and line (the windows' order).
  auto cmp = [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; };
  size_t k = top_k > 0 ? std::min(scored.size(), static_cast<size_t>(top_k)) : scored.size();
  std::partial_sort(scored.begin(), scored.begin() + static_cast<std::ptrdiff_t>(k), scored.end(), cmp);
  scored.resize(k);
  std::vector<Hit> hits;
  const RepoView& v = e.view();
  for (const auto& [s, i] : scored) {
    const auto& w = (*windows)[i];
    Hit h;
    h.type = Hit::Type::snippet;
    h.label = "window";
    h.file = w.file;
    h.start_line = w.start;
    h.end_line = w.end;
    h.score = s;
    const std::string& content = v.content(w.file);
    size_t from = 0;
    for (int l = 1; l < w.start && from != std::string::npos; ++l) from = content.find('\n', from) + 1;
    size_t to = from;
    for (int l = w.start; l <= w.end && to < content.size(); ++l) {
      size_t nl = content.find('\n', to);
      to = nl == std::string::npos ? content.size() : nl + 1;
    }
    h.text = content.substr(from, to - from);
    hits.push_back(std::move(h));
  }
  return hits;
}

json hits_json(const Engine& e, const std::vector<Hit>& hits) {
  json a = json::array();
  for (const auto& h : hits)
    a.push_back(
        fmt::format("{} {}:{}-{} {:.4f}", h.label, e.view().files()[h.file].path, h.start_line, h.end_line, h.score));
  return a;
}

class RepoCoderRetriever : public Retriever {
 public:
  RepoCoderRetriever(const Engine& e, const Models& m, const RetrieverOptions& o)
      : e_(e), m_(m), p_(with_default_dependencies(o.completion, false)) {}
  std::string name() const override { return "repocoder"; }
  std::vector<Hit> retrieve(const RetrievalQuery& q) override { return run(q).hits; }

  RetrievalResult run(const RetrievalQuery& q) override {
    const CursorContext& ctx = need_cursor(q, "repocoder");
    LlmBackend& llm = m_.need_llm("repocoder's intermediate completions");
    MeteredBackend metered(llm);
    RetrievalResult r;
    json rounds = json::array();
    std::string query = query_window(ctx.unfinished, p_.query_lines);
    int n = std::max(1, p_.iterations);
    for (int round = 1; round <= n; ++round) {
      r.hits = repocoder_retrieve(e_, ctx, query, p_.query_lines, q.top_k);
      json jr = {{"round", round}, {"hits", hits_json(e_, r.hits)}};
      if (round < n) {
        // The completion of this round, appended to the unfinished code, is the next round's query window.
        GenerateRequest g;
        g.prompt = completion_prompt(e_, ctx, r.hits, p_).text;
        g.max_tokens = p_.generation_tokens;
        g.seed = p_.seed;
        g.purpose = "repocoder_generate";
        std::string completion = metered.generate(g).choices.at(0).text;
        jr["completion"] = completion;
        query = query_window(ctx.unfinished + completion, p_.query_lines);
      }
      rounds.push_back(std::move(jr));
    }
    r.usage = metered.usage();
    r.trace = {{"method", "repocoder"}, {"rounds", rounds}};
    return r;
  }

 private:
  const Engine& e_;
  Models m_;
  CompletionParams p_;
};

class InFileRetriever : public Retriever {
 public:
  InFileRetriever(const Engine& e, const RetrieverOptions& o) : e_(e), p_(o.completion) {}
  std::string name() const override { return "in-file"; }
  std::vector<Hit> retrieve(const RetrievalQuery& q) override {
    const CursorContext& ctx = need_cursor(q, "in-file");
    // The prompt shows the unfinished code from this line on: snippets there would repeat it.
    int shown = first_shown_line(ctx.unfinished, p_.code_chars);
    auto items =
        in_file_retrieve(e_, ctx, query_window(ctx.unfinished, p_.query_lines), ctx.cursor.line - shown + 1, q.top_k);
    return to_hits(e_, ctx, items);
  }

 private:
  const Engine& e_;
  CompletionParams p_;
};

class NoRetrieval : public Retriever {
 public:
  std::string name() const override { return "no-retrieval"; }
  std::vector<Hit> retrieve(const RetrievalQuery& q) override {
    need_cursor(q, "no-retrieval");
    return {};
  }
};

}  // namespace

std::unique_ptr<Retriever> make_aligncoder(const Engine& e, const Models& m, const RetrieverOptions& o) {
  return std::make_unique<EncoderRetriever>("aligncoder", e, m, o, true);
}
std::unique_ptr<Retriever> make_rlcoder(const Engine& e, const Models& m, const RetrieverOptions& o) {
  return std::make_unique<EncoderRetriever>("rlcoder", e, m, o, false);
}
std::unique_ptr<Retriever> make_reacc(const Engine& e, const Models& m, const RetrieverOptions& o) {
  return std::make_unique<ReaccRetriever>(e, m, o);
}
std::unique_ptr<Retriever> make_repocoder(const Engine& e, const Models& m, const RetrieverOptions& o) {
  return std::make_unique<RepoCoderRetriever>(e, m, o);
}
std::unique_ptr<Retriever> make_in_file(const Engine& e, const Models&, const RetrieverOptions& o) {
  return std::make_unique<InFileRetriever>(e, o);
}
std::unique_ptr<Retriever> make_no_retrieval(const Engine&, const Models&, const RetrieverOptions&) {
  return std::make_unique<NoRetrieval>();
}

}  // namespace repoctx
