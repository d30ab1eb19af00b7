#include "llm/test_model.h"

#include <ggml.h>
#include <gguf.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <random>
#include <string_view>
#include <vector>

#include "util/error.h"

namespace repoctx {

std::string default_vocab_path(const std::string& name) {
  std::string deps;
  if (const char* d = std::getenv("REPOCTX_DEPS"); d && *d)
    deps = d;
  else
    deps = std::string(std::getenv("HOME") ? std::getenv("HOME") : "/tmp") + "/.cache/repoctx";
  std::error_code ec;
  for (auto& ent : std::filesystem::directory_iterator(deps, ec)) {
    std::string n = ent.path().filename().string();
    if (n.rfind("llama.cpp-", 0) != 0) continue;
    auto p = ent.path() / "share" / "vocab" / name;
    if (std::filesystem::exists(p, ec)) return p.string();
  }
  return "";
}

namespace {

// Which tokens decode to printable ASCII (byte-level BPE: GPT-2's byte-to-unicode table). Control and
// other special tokens count as printable (they keep their odds).
std::vector<char> printable_ascii_tokens(gguf_context* vocab, int64_t tok_key, int64_t n_vocab) {
  std::vector<char> ascii(static_cast<size_t>(n_vocab), 0);
  int unicode_to_byte[512];
  std::fill(std::begin(unicode_to_byte), std::end(unicode_to_byte), -1);
  int extra = 0;
  for (int b = 0; b < 256; ++b) {
    bool direct = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    unicode_to_byte[direct ? b : 256 + extra++] = b;
  }
  int64_t type_key = gguf_find_key(vocab, "tokenizer.ggml.token_type");
  const int32_t* types = type_key >= 0 ? static_cast<const int32_t*>(gguf_get_arr_data(vocab, type_key)) : nullptr;
  for (int64_t t = 0; t < n_vocab; ++t) {
    if (types && types[t] != 1) {
      ascii[static_cast<size_t>(t)] = 1;
      continue;
    }
    std::string_view tok(gguf_get_arr_str(vocab, tok_key, static_cast<size_t>(t)));
    bool ok = !tok.empty();
    for (size_t i = 0; i < tok.size() && ok;) {
      unsigned char c = static_cast<unsigned char>(tok[i]);
      int cp, len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : 4;
      if (i + static_cast<size_t>(len) > tok.size()) break;
      cp = len == 1   ? c
           : len == 2 ? ((c & 0x1f) << 6) | (tok[i + 1] & 0x3f)
                      : ((c & 0x0f) << 12) | ((tok[i + 1] & 0x3f) << 6) | (tok[i + 2] & 0x3f);
      int byte = cp < 512 ? unicode_to_byte[cp] : -1;
      ok = byte >= 0 && (byte == '\n' || byte == '\t' || (byte >= 32 && byte < 127));
      i += static_cast<size_t>(len);
    }
    ascii[static_cast<size_t>(t)] = ok;
  }
  return ascii;
}

// The qwen2 hyperparameters. The vocab files carry placeholder ones (32 blocks, 4096 wide): every one is
// overwritten.
void set_hyperparameters(gguf_context* out, const TestModelSpec& s) {
  const std::string arch = "qwen2";
  auto key = [&](const char* k) { return arch + "." + k; };
  gguf_set_val_str(out, "general.architecture", arch.c_str());
  std::string name = "repoctx-test-" + arch + "-h" + std::to_string(s.hidden) + "-l" + std::to_string(s.layers);
  gguf_set_val_str(out, "general.name", name.c_str());
  gguf_set_val_u32(out, key("context_length").c_str(), static_cast<uint32_t>(s.context));
  gguf_set_val_u32(out, key("embedding_length").c_str(), static_cast<uint32_t>(s.hidden));
  gguf_set_val_u32(out, key("block_count").c_str(), static_cast<uint32_t>(s.layers));
  gguf_set_val_u32(out, key("feed_forward_length").c_str(), static_cast<uint32_t>(s.ff));
  gguf_set_val_u32(out, key("attention.head_count").c_str(), static_cast<uint32_t>(s.heads));
  gguf_set_val_u32(out, key("attention.head_count_kv").c_str(), static_cast<uint32_t>(s.kv_heads));
  gguf_set_val_f32(out, key("rope.freq_base").c_str(), 1000000.0f);
  gguf_set_val_f32(out, key("attention.layer_norm_rms_epsilon").c_str(), 1e-6f);
  gguf_set_val_u32(out, "general.file_type", s.f16 ? 1 : 0);
}

struct Shape {
  std::string name;
  int64_t ne0, ne1;
  enum { normal, ones, zeros } init;
};

std::vector<Shape> tensor_shapes(const TestModelSpec& s, int64_t n_vocab) {
  const int64_t d = s.hidden, kv = s.hidden / s.heads * s.kv_heads, ff = s.ff;
  std::vector<Shape> shapes = {{"token_embd.weight", d, n_vocab, Shape::normal},
                               {"output_norm.weight", d, 1, Shape::ones}};
  if (!s.tied) shapes.push_back({"output.weight", d, n_vocab, Shape::normal});
  if (s.ascii_only) shapes.push_back({"output.bias", n_vocab, 1, Shape::zeros});
  for (int l = 0; l < s.layers; ++l) {
    std::string p = "blk." + std::to_string(l) + ".";
    shapes.push_back({p + "attn_norm.weight", d, 1, Shape::ones});
    shapes.push_back({p + "attn_q.weight", d, d, Shape::normal});
    shapes.push_back({p + "attn_k.weight", d, kv, Shape::normal});
    shapes.push_back({p + "attn_v.weight", d, kv, Shape::normal});
    shapes.push_back({p + "attn_q.bias", d, 1, Shape::zeros});
    shapes.push_back({p + "attn_k.bias", kv, 1, Shape::zeros});
    shapes.push_back({p + "attn_v.bias", kv, 1, Shape::zeros});
    shapes.push_back({p + "attn_output.weight", d, d, Shape::normal});
    shapes.push_back({p + "ffn_norm.weight", d, 1, Shape::ones});
    shapes.push_back({p + "ffn_gate.weight", d, ff, Shape::normal});
    shapes.push_back({p + "ffn_up.weight", d, ff, Shape::normal});
    shapes.push_back({p + "ffn_down.weight", ff, d, Shape::normal});
  }
  return shapes;
}

// Seeded weights (std 0.02 like common initialisers) added to `out`; the tensors live in the returned
// context until the file is written.
ggml_context* add_weights(gguf_context* out, const TestModelSpec& s, const std::vector<Shape>& shapes,
                          const std::vector<char>& ascii) {
  size_t bytes = 0;
  for (const auto& sh : shapes) {
    bool mat = sh.ne1 > 1 && s.f16;
    bytes += ggml_row_size(mat ? GGML_TYPE_F16 : GGML_TYPE_F32, sh.ne0) * static_cast<size_t>(sh.ne1) + 256;
  }
  ggml_init_params ip{bytes + shapes.size() * ggml_tensor_overhead() + (1 << 20), nullptr, false};
  ggml_context* ctx = ggml_init(ip);
  std::mt19937_64 rng(s.seed);
  std::normal_distribution<float> dist(0.0f, 0.02f);
  std::vector<float> row;
  for (const auto& sh : shapes) {
    bool mat = sh.ne1 > 1 && s.f16;
    ggml_tensor* t = sh.ne1 > 1 ? ggml_new_tensor_2d(ctx, mat ? GGML_TYPE_F16 : GGML_TYPE_F32, sh.ne0, sh.ne1)
                                : ggml_new_tensor_1d(ctx, GGML_TYPE_F32, sh.ne0);
    ggml_set_name(t, sh.name.c_str());
    row.resize(static_cast<size_t>(sh.ne0));
    for (int64_t r = 0; r < sh.ne1; ++r) {
      for (auto& x : row) x = sh.init == Shape::normal ? dist(rng) : sh.init == Shape::ones ? 1.0f : 0.0f;
      if (sh.name == "output.bias")
        for (int64_t k = 0; k < sh.ne0; ++k)
          row[static_cast<size_t>(k)] = ascii[static_cast<size_t>(k)] ? 0.0f : -30.0f;
      if (mat)
        ggml_fp32_to_fp16_row(row.data(), static_cast<ggml_fp16_t*>(t->data) + r * sh.ne0, sh.ne0);
      else
        std::memcpy(static_cast<float*>(t->data) + r * sh.ne0, row.data(), row.size() * sizeof(float));
    }
    gguf_add_tensor(out, t);
  }
  return ctx;
}

}  // namespace

void write_test_model(const TestModelSpec& s) {
  if (s.vocab_path.empty() || !std::filesystem::exists(s.vocab_path))
    throw Error(ExitCode::not_found, "vocab-only GGUF '" + s.vocab_path +
                                         "' not found (scripts/setup.sh installs llama.cpp's models/ vocab files)");
  if (s.hidden % s.heads != 0 || s.heads % s.kv_heads != 0)
    throw Error(ExitCode::usage, "hidden must be a multiple of heads, and heads a multiple of kv_heads");
  gguf_init_params vp{true, nullptr};
  gguf_context* vocab = gguf_init_from_file(s.vocab_path.c_str(), vp);
  if (!vocab) throw Error(ExitCode::bad_input, "cannot read '" + s.vocab_path + "' as GGUF");
  int64_t tok_key = gguf_find_key(vocab, "tokenizer.ggml.tokens");
  if (tok_key < 0) {
    gguf_free(vocab);
    throw Error(ExitCode::bad_input, "'" + s.vocab_path + "' holds no tokenizer");
  }
  const int64_t n_vocab = static_cast<int64_t>(gguf_get_arr_n(vocab, tok_key));
  std::vector<char> ascii = s.ascii_only ? printable_ascii_tokens(vocab, tok_key, n_vocab)
                                         : std::vector<char>(static_cast<size_t>(n_vocab), 0);
  gguf_context* out = gguf_init_empty();
  gguf_set_kv(out, vocab);  // tokenizer, chat template, architecture name
  gguf_free(vocab);
  set_hyperparameters(out, s);
  ggml_context* ctx = add_weights(out, s, tensor_shapes(s, n_vocab), ascii);
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(s.out_path).parent_path(), ec);
  std::string tmp = s.out_path + ".tmp";
  bool ok = gguf_write_to_file(out, tmp.c_str(), false);
  gguf_free(out);
  ggml_free(ctx);
  if (!ok) throw Error(ExitCode::failure, "cannot write '" + s.out_path + "'");
  std::filesystem::rename(tmp, s.out_path);  // never leave a half-written model behind
}

}  // namespace repoctx
