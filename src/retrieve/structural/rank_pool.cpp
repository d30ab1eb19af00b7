// Ranking one target's pool with a ranker, scoring each distinct feature row once.
#include <cstdint>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "retrieve/structural/structural.h"

namespace repoctx {

// Each distinct row scored once: about a fifth of a pool's rows repeat another's (sympy: ~900 candidates,
// ~760 distinct; members of one module that nothing distinguishes), and the ranker's evaluation is the
// largest single cost of a request. A row's score depends on the row alone (a cascade's keep counts
// distinct rows). The distinct rows are moved out for scoring and back after it.
std::vector<double> rank_pool(const StructuralRanker& model, std::vector<std::vector<double>>& rows,
                              const RankCascade& cascade) {
  struct RowHash {
    // Multiply-xor over the values' bits, in four independent lanes: one chain through a row's 58 values
    // waited on each multiply (4% of a structural request's CPU on sympy); the lanes overlap.
    static uint64_t mix_bits(uint64_t h, uint64_t bits) {
      h = (h ^ bits) * 0xff51afd7ed558ccdULL;
      return h ^ (h >> 32);
    }
    static uint64_t mix(uint64_t h, double x) {
      uint64_t bits;
      std::memcpy(&bits, &x, sizeof bits);
      return mix_bits(h, bits);
    }
    size_t operator()(const std::vector<double>* row) const {
      uint64_t h0 = 0x9e3779b97f4a7c15ULL, h1 = 0xc2b2ae3d27d4eb4fULL, h2 = 0x165667b19e3779f9ULL,
               h3 = 0x27d4eb2f165667c5ULL;
      const double* x = row->data();
      const size_t n = row->size();
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
  } borrowed{rows, firsts, {}};
  borrowed.distinct.reserve(firsts.size());
  for (size_t i : firsts) borrowed.distinct.push_back(std::move(rows[i]));
  const std::vector<double> distinct_scores = model.rank_rows(borrowed.distinct, cascade);
  std::vector<double> out(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) out[i] = distinct_scores[slot[i]];
  return out;
}

}  // namespace repoctx
