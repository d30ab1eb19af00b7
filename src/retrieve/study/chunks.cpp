#include "retrieve/study/chunks.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>

#include "util/cancel.h"
#include "util/text.h"

namespace repoctx {
namespace {

// Python's len(): Unicode code points of UTF-8 text (continuation bytes do not count).
size_t py_len(std::string_view s) {
  size_t n = 0;
  for (char c : s)
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
  return n;
}

bool py_space(unsigned char c) {
  return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
}

std::string_view py_strip(std::string_view s) {
  while (!s.empty() && py_space(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && py_space(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// re.split("(sep)") with the separator kept at the start of the following piece; empty pieces dropped.
// An empty separator splits into code points.
std::vector<std::string_view> split_keep(std::string_view text, std::string_view sep) {
  std::vector<std::string_view> out;
  if (sep.empty()) {
    for (size_t i = 0; i < text.size();) {
      size_t j = i + 1;
      while (j < text.size() && (static_cast<unsigned char>(text[j]) & 0xC0) == 0x80) ++j;
      out.push_back(text.substr(i, j - i));
      i = j;
    }
    return out;
  }
  size_t start = 0, at = text.find(sep);
  while (at != std::string_view::npos) {
    if (at > start) out.push_back(text.substr(start, at - start));
    start = at;
    at = text.find(sep, at + sep.size());
  }
  if (start < text.size()) out.push_back(text.substr(start));
  return out;
}

struct Splitter {
  size_t size, overlap;

  // TextSplitter._merge_splits with an empty separator (keep_separator=True).
  void merge(const std::vector<std::string_view>& splits, std::vector<std::string>& docs) const {
    std::vector<std::string_view> cur;
    size_t total = 0;
    auto join = [&] {
      std::string t;
      for (auto s : cur) t += s;
      std::string_view st = py_strip(t);
      if (!st.empty()) docs.emplace_back(st);
    };
    for (auto d : splits) {
      size_t len = py_len(d);
      if (total + len > size) {
        if (!cur.empty()) {
          join();
          while (total > overlap || (total + len > size && total > 0)) {
            total -= py_len(cur.front());
            cur.erase(cur.begin());
          }
        }
      }
      cur.push_back(d);
      total += len;
    }
    join();
  }

  // RecursiveCharacterTextSplitter._split_text.
  void split(std::string_view text, size_t first_sep, std::vector<std::string>& out) const {
    static const std::string_view seps[] = {"\n\n", "\n", " ", ""};
    size_t chosen = 3, next = 4;
    for (size_t i = first_sep; i < 4; ++i) {
      if (seps[i].empty() || text.find(seps[i]) != std::string_view::npos) {
        chosen = i;
        next = seps[i].empty() ? 4 : i + 1;
        break;
      }
    }
    std::vector<std::string_view> good;
    for (auto s : split_keep(text, seps[chosen])) {
      if (py_len(s) < size) {
        good.push_back(s);
        continue;
      }
      if (!good.empty()) {
        merge(good, out);
        good.clear();
      }
      if (next >= 4)
        out.emplace_back(s);
      else
        split(s, next, out);
    }
    if (!good.empty()) merge(good, out);
  }
};

std::vector<std::string_view> whitespace_tokens(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && py_space(static_cast<unsigned char>(s[i]))) ++i;
    size_t j = i;
    while (j < s.size() && !py_space(static_cast<unsigned char>(s[j]))) ++j;
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

}  // namespace

std::vector<std::pair<size_t, size_t>> split_recursive(std::string_view text, int chunk_chars, int chunk_overlap) {
  Splitter sp{static_cast<size_t>(std::max(1, chunk_chars)), static_cast<size_t>(std::max(0, chunk_overlap))};
  std::vector<std::string> chunks;
  sp.split(text, 0, chunks);
  // create_documents(add_start_index=True): each chunk is looked up from the previous one's start plus its
  // length minus the overlap (offsets in bytes here, in code points in Python: the same for ASCII).
  std::vector<std::pair<size_t, size_t>> out;
  long index = 0, prev_len = 0;
  for (const auto& c : chunks) {
    long offset = std::max(0L, index + prev_len - chunk_overlap);
    size_t at = text.find(c, static_cast<size_t>(offset));
    if (at == std::string_view::npos) at = text.find(c);
    if (at == std::string_view::npos) continue;
    index = static_cast<long>(at);
    prev_len = static_cast<long>(c.size());
    out.emplace_back(at, c.size());
  }
  return out;
}

StudyChunkIndex::StudyChunkIndex(const StudyCorpus& corpus, const ChunkParams& p) : corpus_(corpus), p_(p) {
  std::unordered_map<std::string, uint32_t> df;
  uint64_t total_len = 0;
  for (int d : corpus.searched()) {
    throw_if_interrupted("nothing is kept of the chunk index");
    const std::string& content = corpus.content(d);
    auto starts = line_starts(content);
    for (auto [at, len] : split_recursive(content, p.chunk_chars, p.chunk_overlap)) {
      StudyChunk c;
      c.doc = d;
      c.start_byte = static_cast<uint32_t>(at);
      c.length = static_cast<uint32_t>(len);
      c.start_line = static_cast<int>(std::upper_bound(starts.begin(), starts.end(), at) - starts.begin());
      c.end_line = c.start_line + static_cast<int>(std::count(content.begin() + static_cast<long>(at),
                                                              content.begin() + static_cast<long>(at + len), '\n'));
      uint32_t id = static_cast<uint32_t>(chunks_.size());
      chunks_.push_back(c);
      std::string doc = document(static_cast<int>(id));
      auto toks = whitespace_tokens(doc);
      doc_len_.push_back(static_cast<uint32_t>(toks.size()));
      total_len += toks.size();
      std::map<std::string_view, uint32_t> tf;
      for (auto t : toks) ++tf[t];
      for (auto& [t, n] : tf) {
        auto& term = terms_[std::string(t)];
        term.postings.emplace_back(id, n);
        ++df[std::string(t)];
      }
    }
  }
  double n = static_cast<double>(chunks_.size());
  avgdl_ = chunks_.empty() ? 0 : static_cast<double>(total_len) / n;
  // rank_bm25: idf = ln(N - df + 0.5) - ln(df + 0.5); negative ones become epsilon * the mean idf.
  double idf_sum = 0;
  std::vector<Term*> negative;
  for (auto& [t, term] : terms_) {
    double d = static_cast<double>(term.postings.size());
    term.idf = std::log(n - d + 0.5) - std::log(d + 0.5);
    idf_sum += term.idf;
    if (term.idf < 0) negative.push_back(&term);
  }
  double eps = terms_.empty() ? 0 : p.epsilon * idf_sum / static_cast<double>(terms_.size());
  for (Term* t : negative) t->idf = eps;
}

std::string StudyChunkIndex::document(int chunk) const {
  const StudyChunk& c = chunks_[static_cast<size_t>(chunk)];
  const std::string& content = corpus_.content(c.doc);
  return "# Path: " + corpus_.path(c.doc) + "\n" + content.substr(c.start_byte, c.length);
}

double StudyChunkIndex::idf(std::string_view token) const {
  auto it = terms_.find(std::string(token));
  return it == terms_.end() ? 0 : it->second.idf;
}

std::vector<ScoredChunk> StudyChunkIndex::top(std::string_view query, size_t n) const {
  std::vector<double> score(chunks_.size(), 0.0);
  for (auto q : whitespace_tokens(query)) {  // repeated query words count again, as in rank_bm25
    auto it = terms_.find(std::string(q));
    if (it == terms_.end()) continue;
    const Term& t = it->second;
    for (auto [doc, tf] : t.postings) {
      double dl = doc_len_[doc];
      score[doc] += t.idf * (tf * (p_.k1 + 1)) / (tf + p_.k1 * (1 - p_.b + p_.b * dl / avgdl_));
    }
  }
  std::vector<ScoredChunk> all(chunks_.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = {static_cast<int>(i), score[i]};
  auto better = [](const ScoredChunk& a, const ScoredChunk& b) {
    return a.score != b.score ? a.score > b.score : a.chunk > b.chunk;
  };
  size_t k = std::min(n, all.size());
  std::partial_sort(all.begin(), all.begin() + static_cast<long>(k), all.end(), better);
  all.resize(k);
  return all;
}

namespace {
struct ChunkCache {
  std::mutex mu;
  std::map<std::tuple<std::string, int, int, double, double, double>, std::unique_ptr<StudyChunkIndex>> by_params;
};
}  // namespace

const StudyChunkIndex& study_chunks(const Engine& e, const std::string& corpus_files, const ChunkParams& p) {
  auto& cache = e.derived<ChunkCache>();
  std::lock_guard lk(cache.mu);
  const StudyCorpus& corpus = study_corpus(e, corpus_files);
  auto& slot = cache.by_params[{corpus_files, p.chunk_chars, p.chunk_overlap, p.k1, p.b, p.epsilon}];
  if (!slot) slot = std::make_unique<StudyChunkIndex>(corpus, p);
  return *slot;
}

}  // namespace repoctx
