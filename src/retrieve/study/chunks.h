// The context-retrieval study's BM25 corpus (its code: a LangChain RecursiveCharacterTextSplitter with
// chunk_size 512 characters, chunk_overlap 128, separators "\n\n", "\n", " ", "" kept at the start of the
// next piece, whitespace stripped, add_start_index; each chunk prefixed by "# Path: <path>\n"; ranked by
// rank_bm25's BM25Okapi over whitespace tokens, k1 1.5, b 0.75, epsilon 0.25), built anew here over the
// files of a study corpus (corpus.h). Hand-written because neither algorithm exists in a C++ library and the
// study's numbers depend on their exact behaviour.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "retrieve/study/corpus.h"

namespace repoctx {

struct ChunkParams {
  int chunk_chars = 512;                      // LangChain's chunk_size (characters = Unicode code points)
  int chunk_overlap = 128;                    // LangChain's chunk_overlap
  double k1 = 1.5, b = 0.75, epsilon = 0.25;  // rank_bm25 BM25Okapi
};

// LangChain's RecursiveCharacterTextSplitter.split_text, then create_documents' start_index search: the
// chunks of `text` as (byte offset, byte length) of the stripped chunk in `text`.
std::vector<std::pair<size_t, size_t>> split_recursive(std::string_view text, int chunk_chars, int chunk_overlap);

struct StudyChunk {
  int doc = -1;  // the corpus document
  uint32_t start_byte = 0, length = 0;
  int start_line = 0, end_line = 0;  // 1-based, inclusive: the lines the chunk covers
};

struct ScoredChunk {
  int chunk;
  double score;
};

class StudyChunkIndex {
 public:
  StudyChunkIndex(const StudyCorpus& corpus, const ChunkParams& p);
  const StudyCorpus& corpus() const { return corpus_; }
  const std::vector<StudyChunk>& chunks() const { return chunks_; }
  // "# Path: <path>\n" + the chunk: what BM25 and the agent read.
  std::string document(int chunk) const;
  // BM25Okapi.get_top_n: the best n chunks by score (ties: later chunks first, as reversing a stable
  // ascending sort does), zero scores included when fewer chunks match.
  std::vector<ScoredChunk> top(std::string_view query, size_t n) const;
  double idf(std::string_view token) const;  // exposed for tests

 private:
  const StudyCorpus& corpus_;
  ChunkParams p_;
  std::vector<StudyChunk> chunks_;
  std::vector<uint32_t> doc_len_;
  double avgdl_ = 0;
  struct Term {
    double idf = 0;
    std::vector<std::pair<uint32_t, uint32_t>> postings;  // (chunk, tf)
  };
  std::unordered_map<std::string, Term> terms_;
};

// One chunk index per engine, corpus (corpus.h) and parameter set, built at first use (Engine::derived).
const StudyChunkIndex& study_chunks(const Engine& e, const std::string& corpus, const ChunkParams& p);

}  // namespace repoctx
