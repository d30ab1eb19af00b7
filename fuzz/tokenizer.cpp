// The code tokenizer, the cl100k token counter and the text helpers every stage uses, on arbitrary bytes:
// string and hash tokens agree, cl100k's count is its ids' number and a cut holds at most its budget,
// sanitized text is valid UTF-8, the bounded edit distance equals the full one within its bound.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "repo/documents.h"
#include "util/hash.h"
#include "util/text.h"
#include "util/tokenizer_cl100k.h"

namespace {

size_t levenshtein(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace repoctx;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto words = tokenize_code(text);
  std::vector<uint64_t> hashes;
  tokenize_hashes(text, hashes);
  if (words.size() != hashes.size()) __builtin_trap();
  for (size_t i = 0; i < words.size(); ++i)
    if (hash64(words[i]) != hashes[i] || words[i].size() < 2) __builtin_trap();
  // cl100k on any bytes (invalid UTF-8 included): ids in the vocabulary, counts and cuts consistent.
  auto ids = cl100k::encode(text);
  if (static_cast<size_t>(cl100k::count(text)) != ids.size()) __builtin_trap();
  for (uint32_t id : ids)
    if (id >= cl100k::vocabulary_size()) __builtin_trap();
  for (int budget : {0, static_cast<int>(ids.size() / 2), static_cast<int>(ids.size())}) {
    std::string_view cut = cl100k::truncate(text, budget);
    if (cut.data() != text.data() || cut.size() > text.size()) __builtin_trap();
    if (cl100k::count(cut) > budget) __builtin_trap();
  }
  if (cl100k::truncate(text, static_cast<int>(ids.size())).size() != text.size()) __builtin_trap();
  TermVec tv = term_vector(text);
  if (tv.length != words.size()) __builtin_trap();
  if (!is_valid_utf8(sanitize_utf8(text))) __builtin_trap();
  normalize_text(text);
  clean_docstring(text);
  auto starts = line_starts(text);
  for (const auto& sp : split_aggregate(text, 7)) line_range(text, starts, sp.start_line, sp.end_line);
  // Two halves: ROUGE-L and the bounded edit distance (short inputs only: the reference is quadratic).
  std::string_view a = text.substr(0, size / 2), b = text.substr(size / 2);
  double f = rouge_l_f1(a, b);
  if (f < 0 || f > 1) __builtin_trap();
  if (size <= 256) {
    size_t full = levenshtein(a, b);
    for (size_t max : {0u, 1u, 3u, 16u, 200u})
      if (edit_distance(a, b, max) != std::min(full, max + 1)) __builtin_trap();
  }
  return 0;
}
