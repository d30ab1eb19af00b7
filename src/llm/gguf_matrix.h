// Row-block reading of one matrix of a GGUF file (the unembedding matrix W): memory-mapped, converted
// to float32 block by block with ggml's type traits (any ggml type), pages dropped once read, so W is
// never resident in full.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace repoctx {

struct GgufMatrixInfo {
  int64_t rows = 0, cols = 0;  // rows x cols, row-major (ggml ne1 x ne0)
  std::string type, tensor;
  bool tied = false;
};

// The unembedding of a model file: output.weight, else token_embd.weight (tied).
GgufMatrixInfo gguf_unembedding_info(const std::string& path);
void gguf_read_rows(const std::string& path, const GgufMatrixInfo& m, int64_t block_rows,
                    const std::function<void(int64_t, int64_t, const float*)>& sink);

// Writes a GGUF holding one random matrix (for benchmarks of models too big to generate whole).
void gguf_write_random_matrix(const std::string& path, const std::string& tensor, int64_t rows, int64_t cols, bool f16,
                              uint64_t seed);

}  // namespace repoctx
