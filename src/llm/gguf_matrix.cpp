#include "llm/gguf_matrix.h"

#include <fcntl.h>
#include <ggml.h>
#include <gguf.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <random>
#include <vector>

#include "util/error.h"

namespace repoctx {

namespace {
struct Located {
  GgufMatrixInfo info;
  ggml_type type = GGML_TYPE_F32;
  size_t offset = 0;
};

Located locate(const std::string& path) {
  ggml_context* meta = nullptr;
  gguf_init_params gp{true, &meta};
  gguf_context* g = gguf_init_from_file(path.c_str(), gp);
  if (!g) throw Error(ExitCode::bad_input, "cannot read GGUF metadata of '" + path + "'");
  Located l;
  int64_t id = gguf_find_tensor(g, "output.weight");
  l.info.tied = id < 0;
  l.info.tensor = id < 0 ? "token_embd.weight" : "output.weight";
  if (id < 0) id = gguf_find_tensor(g, "token_embd.weight");
  if (id < 0) {
    gguf_free(g);
    if (meta) ggml_free(meta);
    throw Error(ExitCode::bad_input, "'" + path + "' has neither output.weight nor token_embd.weight");
  }
  const int64_t* ne = gguf_get_tensor_ne(g, id);
  l.info.cols = ne[0];
  l.info.rows = ne[1];
  l.type = gguf_get_tensor_type(g, id);
  l.info.type = ggml_type_name(l.type);
  l.offset = gguf_get_data_offset(g) + gguf_get_tensor_offset(g, id);
  gguf_free(g);
  if (meta) ggml_free(meta);
  return l;
}
}  // namespace

GgufMatrixInfo gguf_unembedding_info(const std::string& path) {
  return locate(path).info;
}

void gguf_read_rows(const std::string& path, const GgufMatrixInfo& m, int64_t block_rows,
                    const std::function<void(int64_t, int64_t, const float*)>& sink) {
  Located l = locate(path);
  (void)m;
  const auto* traits = ggml_get_type_traits(l.type);
  if (!traits->to_float && l.type != GGML_TYPE_F32)
    throw Error(ExitCode::bad_input, "the matrix has type " + l.info.type + ", which ggml cannot convert to float");
  size_t row_bytes = ggml_row_size(l.type, l.info.cols);
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw Error(ExitCode::not_found, "cannot read '" + path + "'");
  struct stat st {};
  ::fstat(fd, &st);
  void* map = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) throw Error(ExitCode::bad_input, "cannot map '" + path + "'");
  const char* base = static_cast<const char*>(map) + l.offset;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  size_t released = 0;  // bytes from the map's start already given back
  std::vector<float> buf(static_cast<size_t>(block_rows * l.info.cols));
  for (int64_t r0 = 0; r0 < l.info.rows; r0 += block_rows) {
    int64_t n = std::min(block_rows, l.info.rows - r0);
    for (int64_t i = 0; i < n; ++i) {
      const char* src = base + static_cast<size_t>(r0 + i) * row_bytes;
      float* dst = buf.data() + i * l.info.cols;
      if (l.type == GGML_TYPE_F32)
        std::memcpy(dst, src, row_bytes);
      else
        traits->to_float(src, dst, l.info.cols);
    }
    sink(r0, n, buf.data());
    // Pages already read are not needed again: the resident set stays at one block. madvise needs
    // page-aligned ranges (the tensor starts anywhere in the file), so only whole pages behind us go.
    size_t done = l.offset + static_cast<size_t>(r0 + n) * row_bytes;
    size_t upto = done / page * page;
    if (upto > released) {
      ::madvise(static_cast<char*>(map) + released, upto - released, MADV_DONTNEED);
      released = upto;
    }
  }
  ::munmap(map, static_cast<size_t>(st.st_size));
}

void gguf_write_random_matrix(const std::string& path, const std::string& tensor, int64_t rows, int64_t cols, bool f16,
                              uint64_t seed) {
  ggml_type type = f16 ? GGML_TYPE_F16 : GGML_TYPE_F32;
  size_t bytes = ggml_row_size(type, cols) * static_cast<size_t>(rows);
  ggml_init_params ip{bytes + ggml_tensor_overhead() + (1 << 20), nullptr, false};
  ggml_context* ctx = ggml_init(ip);
  ggml_tensor* t = ggml_new_tensor_2d(ctx, type, cols, rows);
  ggml_set_name(t, tensor.c_str());
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.0f, 0.02f);
  std::vector<float> row(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    for (auto& x : row) x = nd(rng);
    if (f16)
      ggml_fp32_to_fp16_row(row.data(), static_cast<ggml_fp16_t*>(t->data) + r * cols, cols);
    else
      std::memcpy(static_cast<float*>(t->data) + r * cols, row.data(), row.size() * sizeof(float));
  }
  gguf_context* g = gguf_init_empty();
  gguf_set_val_str(g, "general.architecture", "matrix");
  gguf_add_tensor(g, t);
  bool ok = gguf_write_to_file(g, path.c_str(), false);
  gguf_free(g);
  ggml_free(ctx);
  if (!ok) throw Error(ExitCode::failure, "cannot write '" + path + "'");
}

}  // namespace repoctx
