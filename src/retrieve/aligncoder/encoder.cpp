#include "retrieve/aligncoder/encoder.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <unordered_set>

#include "util/error.h"
#include "util/hash.h"
#include "util/text.h"

namespace repoctx {

using nlohmann::json;

// ------------------------------------------------------------------------------------------ tokens
namespace {

bool word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

const std::unordered_set<std::string_view>& keywords() {
  // Python's keywords and receivers, Java's keywords and literals: tokens whose weight the model learns
  // as a group (they say little about which snippet helps).
  static const std::unordered_set<std::string_view> k = {
      "False",     "None",       "True",       "and",      "as",        "assert",   "async",   "await",
      "break",     "class",      "continue",   "def",      "del",       "elif",     "else",    "except",
      "finally",   "for",        "from",       "global",   "if",        "import",   "in",      "is",
      "lambda",    "nonlocal",   "not",        "or",       "pass",      "raise",    "return",  "try",
      "while",     "with",       "yield",      "self",     "cls",       "abstract", "boolean", "byte",
      "case",      "catch",      "char",       "default",  "do",        "double",   "extends", "final",
      "float",     "implements", "instanceof", "int",      "interface", "long",     "new",     "package",
      "private",   "protected",  "public",     "short",    "static",    "super",    "switch",  "this",
      "throw",     "throws",     "void",       "volatile", "null",      "true",     "false",   "synchronized",
      "transient", "enum",       "record",     "var",      "const",     "goto",     "strictfp"};
  return k;
}

bool defines_next(std::string_view w) {
  return w == "def" || w == "class" || w == "interface" || w == "enum" || w == "record";
}

// A Java method or constructor declaration: `Type name(...) {` (or `throws`, or `;` when abstract), the name
// after a type, a generic's `>`, an array's `]` or a modifier; never after a keyword that starts an
// expression (`return f(x) {` is no declaration, and neither is Python's `if f(x):`). `a` is where the
// blanks before the name start, `open` the opening parenthesis.
bool java_declares(std::string_view text, size_t a, size_t open) {
  char before = a > 0 ? text[a - 1] : '\n';
  if (word_char(before)) {
    size_t k = a;
    while (k > 0 && word_char(text[k - 1])) --k;
    std::string_view prev = text.substr(k, a - k);
    static const std::unordered_set<std::string_view> decl = {
        "void",   "int",     "long",      "boolean", "double", "float",    "char",         "byte",   "short",
        "public", "private", "protected", "static",  "final",  "abstract", "synchronized", "native", "default"};
    if (keywords().count(prev) && !decl.count(prev)) return false;
  } else if (before != '>' && before != ']') {
    return false;
  }
  int depth = 0;
  size_t i = open;
  for (; i < text.size(); ++i) {
    if (text[i] == '(')
      ++depth;
    else if (text[i] == ')' && --depth == 0)
      break;
    else if (text[i] == ';' || text[i] == '{' || text[i] == '}')
      return false;
  }
  if (i >= text.size()) return false;
  ++i;
  while (i < text.size() && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r')) ++i;
  if (i >= text.size()) return false;
  return text[i] == '{' || text[i] == ';' || text.substr(i, 6) == "throws";
}

// The role of the identifier run text[i, j).
TokenRole role_of(std::string_view text, size_t i, size_t j) {
  std::string_view run = text.substr(i, j - i);
  if (keywords().count(run)) return TokenRole::keyword;
  size_t a = i;
  while (a > 0 && (text[a - 1] == ' ' || text[a - 1] == '\t')) --a;
  char before = a > 0 ? text[a - 1] : '\n';
  size_t b = j;
  while (b < text.size() && (text[b] == ' ' || text[b] == '\t')) ++b;
  char after = b < text.size() ? text[b] : '\n';
  if (word_char(before)) {  // the previous word: `def name`, `class Name`
    size_t k = a;
    while (k > 0 && word_char(text[k - 1])) --k;
    if (defines_next(text.substr(k, a - k))) return TokenRole::definition;
  }
  // `name = ...` at the start of a line: a module variable or a class attribute.
  if (before == '\n' && after == '=' && (b + 1 >= text.size() || text[b + 1] != '=')) return TokenRole::definition;
  if (after == '(' && java_declares(text, a, b)) return TokenRole::definition;
  if (after == '(') return TokenRole::call;
  if (before == '.') return TokenRole::attribute;
  return TokenRole::other;
}

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

}  // namespace

std::vector<TokenOccurrence> code_tokens(std::string_view text) {
  std::vector<TokenOccurrence> out;
  std::vector<uint64_t> ids;
  size_t i = 0, n = text.size();
  while (i < n) {
    if (!word_char(text[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < n && word_char(text[j])) ++j;
    ids.clear();
    // The same tokens as tokenize_hashes over the whole text: the tokenizer works run by run.
    tokenize_hashes(text.substr(i, j - i), ids);
    if (!ids.empty()) {
      TokenRole role = role_of(text, i, j);
      for (size_t k = 0; k < ids.size(); ++k) out.push_back({ids[k], ids.size() == 1 || k + 1 == ids.size(), role});
    }
    i = j;
  }
  return out;
}

void BagBuilder::add(std::string_view text, TokenPlace place) {
  for (const auto& t : code_tokens(text)) {
    auto& c = counts_[t.id];
    c[static_cast<size_t>(token_slot(place, t.whole, t.role))] += 1.0f;
  }
}

void BagBuilder::add_query(const QueryParts& q, int recent_lines) {
  std::string_view code = q.window;
  // The boundary before the last `recent_lines` non-blank lines of the window.
  size_t cut = code.size();
  int seen = 0;
  size_t end = code.size();
  while (end > 0 && seen < recent_lines) {
    size_t start = code.rfind('\n', end - 1);
    start = start == std::string_view::npos ? 0 : start + 1;
    if (!is_blank(code.substr(start, end - start))) {
      ++seen;
      cut = start;
    }
    if (start == 0) break;
    end = start - 1;
  }
  if (recent_lines <= 0) cut = code.size();
  add(q.far, TokenPlace::far);
  add(code.substr(0, cut), TokenPlace::code);
  add(code.substr(cut), TokenPlace::recent);
  add(q.imports, TokenPlace::imported);
  for (const auto& c : q.candidates) add(c, TokenPlace::candidate);
}

FeatureBag BagBuilder::build(const std::function<double(uint64_t)>& idf) const {
  std::vector<uint64_t> ids;
  ids.reserve(counts_.size());
  for (const auto& [id, c] : counts_) ids.push_back(id);
  std::sort(ids.begin(), ids.end());  // a fixed order: sums do not depend on hash-map iteration
  FeatureBag b;
  b.begin.push_back(0);
  for (uint64_t id : ids) {
    const auto& c = counts_.at(id);
    b.ids.push_back(id);
    b.idf.push_back(idf ? idf(id) : 1.0);
    for (int s = 0; s < kSlots; ++s)
      if (c[static_cast<size_t>(s)] > 0) b.entries.emplace_back(static_cast<uint8_t>(s), c[static_cast<size_t>(s)]);
    b.begin.push_back(static_cast<uint32_t>(b.entries.size()));
  }
  return b;
}

// ----------------------------------------------------------------------------------------- encoder
AlignEncoder::AlignEncoder(EncoderConfig cfg) : cfg_(std::move(cfg)) {
  if (cfg_.dim < 8) throw Error(ExitCode::usage, "the encoder dimension must be at least 8");
  if (cfg_.head < 0) throw Error(ExitCode::usage, "the head's size must be 0 (none) or more");
  cfg_.head_in = 0;  // init_head sets it, with the weights
  p_ = Eigen::VectorXd::Zero(static_cast<Eigen::Index>(delta_offset()));
  // theta = 0: rho = 1 for every slot, i.e. plain log-tf * idf at the start of training.
}

void AlignEncoder::set_vocabulary(const std::vector<uint64_t>& ids) {
  Eigen::VectorXd head = p_.tail(static_cast<Eigen::Index>(head_size()));
  vocab_ids_ = ids;
  vocab_index_.clear();
  for (size_t i = 0; i < ids.size(); ++i) vocab_index_.emplace(ids[i], static_cast<int>(i));
  Eigen::VectorXd np = Eigen::VectorXd::Zero(static_cast<Eigen::Index>(head_offset() + head_size()));
  np.head(static_cast<Eigen::Index>(delta_offset())) = p_.head(static_cast<Eigen::Index>(delta_offset()));
  np.tail(static_cast<Eigen::Index>(head_size())) = head;
  p_ = std::move(np);
  cfg_.vocab = static_cast<int>(ids.size());
}

void AlignEncoder::init_head(int in) {
  if (cfg_.head <= 0) return;
  if (in <= 0) throw Error(ExitCode::usage, "the embedding model returned an empty vector: no head to train over it");
  p_.conservativeResize(static_cast<Eigen::Index>(head_offset()));
  cfg_.head_in = in;
  Eigen::VectorXd w(static_cast<Eigen::Index>(head_size()));
  // N(0, 1/head) entries from splitmix64 (Box-Muller): a Johnson-Lindenstrauss projection, so that the
  // untrained head scores about as the embedding's own cosine does.
  uint64_t key = splitmix64(cfg_.seed ^ 0x68656164ULL);
  const double sd = 1.0 / std::sqrt(static_cast<double>(cfg_.head));
  for (Eigen::Index i = 0; i < w.size(); i += 2) {
    double u1 = (static_cast<double>(splitmix64(key + 2 * static_cast<uint64_t>(i)) >> 11) + 0.5) * 0x1.0p-53;
    double u2 = static_cast<double>(splitmix64(key + 2 * static_cast<uint64_t>(i) + 1) >> 11) * 0x1.0p-53;
    double r = std::sqrt(-2.0 * std::log(u1)), t = 2.0 * M_PI * u2;
    w[i] = sd * r * std::cos(t);
    if (i + 1 < w.size()) w[i + 1] = sd * r * std::sin(t);
  }
  p_.conservativeResize(static_cast<Eigen::Index>(head_offset() + head_size()));
  p_.tail(w.size()) = w;
}

Eigen::VectorXd AlignEncoder::frozen_vector(const FeatureBag& b) const {
  Eigen::Map<const Eigen::VectorXf> g(b.frozen.data(), static_cast<Eigen::Index>(b.frozen.size()));
  if (cfg_.head <= 0 || cfg_.head_in <= 0) return g.cast<double>();
  if (static_cast<int>(b.frozen.size()) != cfg_.head_in)
    throw Error(ExitCode::usage, "the embedding has " + std::to_string(b.frozen.size()) +
                                     " dimensions, the AlignRetriever's head was trained on " +
                                     std::to_string(cfg_.head_in) + ": configure the model it was trained with ('" +
                                     cfg_.embedder + "')");
  Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> W(p_.data() + head_offset(),
                                                                                             cfg_.head, cfg_.head_in);
  return W * g.cast<double>();
}

int AlignEncoder::vocab_row(uint64_t id) const {
  auto it = vocab_index_.find(id);
  return it == vocab_index_.end() ? -1 : it->second;
}

void AlignEncoder::add_row(uint64_t id, double scale, Eigen::Ref<Eigen::VectorXd> out) const {
  const int d = cfg_.dim;
  const double v = scale / std::sqrt(static_cast<double>(d));
  uint64_t key = id ^ splitmix64(cfg_.seed);
  for (int k = 0; k < d; k += 64) {
    uint64_t bits = splitmix64(key + static_cast<uint64_t>(k));
    int m = std::min(64, d - k);
    for (int b = 0; b < m; ++b) out[k + b] += (bits >> b) & 1 ? v : -v;
  }
  if (int r = vocab_row(id); r >= 0)
    out += scale * p_.segment(static_cast<Eigen::Index>(delta_offset() + static_cast<size_t>(r) * d), d);
}

double AlignEncoder::row_dot(uint64_t id, const Eigen::VectorXd& x) const {
  const int d = cfg_.dim;
  uint64_t key = id ^ splitmix64(cfg_.seed);
  double s = 0;
  for (int k = 0; k < d; k += 64) {
    uint64_t bits = splitmix64(key + static_cast<uint64_t>(k));
    int m = std::min(64, d - k);
    for (int b = 0; b < m; ++b) s += (bits >> b) & 1 ? x[k + b] : -x[k + b];
  }
  s /= std::sqrt(static_cast<double>(d));
  if (int r = vocab_row(id); r >= 0)
    s += p_.segment(static_cast<Eigen::Index>(delta_offset() + static_cast<size_t>(r) * d), d).dot(x);
  return s;
}

AlignEncoder::Forward AlignEncoder::forward(const FeatureBag& b) const {
  Forward f;
  f.e = Eigen::VectorXd::Zero(cfg_.dim);
  f.S.resize(b.size());
  f.w.resize(b.size());
  for (size_t i = 0; i < b.size(); ++i) {
    double S = 0;
    for (uint32_t k = b.begin[i]; k < b.begin[i + 1]; ++k) S += std::exp(p_[b.entries[k].first]) * b.entries[k].second;
    f.S[i] = S;
    f.w[i] = b.idf[i] * std::log1p(S);
    if (f.w[i] != 0) add_row(b.ids[i], f.w[i], f.e);
  }
  f.norm = f.e.norm();
  return f;
}

Eigen::VectorXd AlignEncoder::embed(const FeatureBag& b) const {
  Forward f = forward(b);
  return f.norm > 0 ? Eigen::VectorXd(f.e / f.norm) : f.e;
}

double encoder_sigmoid(double x) {
  return 1.0 / (1.0 + std::exp(-x));
}

double encoder_cosine(const Eigen::VectorXd& u, const Eigen::VectorXd& v) {
  double nu = u.norm(), nv = v.norm();
  return nu > 0 && nv > 0 && u.size() == v.size() ? u.dot(v) / (nu * nv) : 0.0;
}

std::vector<double> AlignEncoder::scores(const FeatureBag& q, const std::vector<const FeatureBag*>& docs) const {
  Eigen::VectorXd eq = embed(q);
  double a = cfg_.mix ? encoder_sigmoid(p_[kSlots]) : 0.0;
  Eigen::VectorXd gq = cfg_.mix ? frozen_vector(q) : Eigen::VectorXd();
  std::vector<double> out;
  out.reserve(docs.size());
  for (const FeatureBag* d : docs) {
    double c = eq.dot(embed(*d));
    out.push_back(cfg_.mix ? (1 - a) * c + a * encoder_cosine(gq, frozen_vector(*d)) : c);
  }
  return out;
}

// ------------------------------------------------------------------------------------- model file
json AlignEncoder::to_json(bool exact) const {
  std::vector<double> theta(p_.data(), p_.data() + kSlots);
  // Weights as float32 (the model file is small enough to ship); token ids as raw uint64.
  auto encode = [&](size_t from, size_t n) {
    if (exact) return base64_encode(p_.data() + from, n * sizeof(double));
    std::vector<float> f(n);
    for (size_t i = 0; i < n; ++i) f[i] = static_cast<float>(p_[static_cast<Eigen::Index>(from + i)]);
    return base64_encode(f.data(), f.size() * sizeof(float));
  };
  std::string weights = encode(delta_offset(), head_offset() - delta_offset());
  json j = {{"format", "repoctx-align-encoder"},
            {"format_version", kFormatVersion},
            {"config",
             {{"dim", cfg_.dim},
              {"vocab", cfg_.vocab},
              {"tau", cfg_.tau},
              {"seed", cfg_.seed},
              {"mix", cfg_.mix},
              {"embedder", cfg_.embedder},
              {"head", cfg_.head},
              {"head_in", cfg_.head_in}}},
            {"features",
             {{"tokens", "util/text.h tokenize_code (sub-tokens and whole identifiers)"},
              {"places", {"far", "code", "recent", "imported", "candidate", "document"}},
              {"kinds", {"whole", "part"}},
              {"roles", {"other", "definition", "call", "attribute", "keyword"}},
              {"weight", "idf * log1p(sum exp(theta[place][kind][role]))"},
              {"projection", "splitmix64 sign rows / sqrt(dim) + learned rows of the vocabulary"}}},
            {"theta", theta},
            {"theta_mix", p_[kSlots]},
            {"vocabulary", base64_encode(vocab_ids_.data(), vocab_ids_.size() * sizeof(uint64_t))},
            {"delta_dtype", exact ? "float64" : "float32"},
            {"delta", weights},
            {"provenance", provenance}};
  if (head_size() > 0) j["head"] = encode(head_offset(), head_size());  // row-major, delta_dtype
  return j;
}

AlignEncoder AlignEncoder::from_json(const json& j, const std::string& origin) {
  auto bad = [&](const std::string& why) {
    return Error(ExitCode::bad_input, "AlignRetriever model '" + origin + "': " + why +
                                          " (train one with `repoctx train-aligncoder REPO... --out FILE`)");
  };
  if (!j.is_object() || j.value("format", "") != "repoctx-align-encoder") throw bad("not a model file");
  if (j.value("format_version", 0) != kFormatVersion)
    throw bad("format version " + std::to_string(j.value("format_version", 0)) + ", this build reads " +
              std::to_string(kFormatVersion));
  try {
    EncoderConfig c;
    const json& cj = j.at("config");
    c.dim = cj.at("dim");
    c.tau = cj.at("tau");
    c.seed = cj.at("seed");
    c.mix = cj.at("mix");
    c.embedder = cj.at("embedder");
    c.head = cj.value("head", 0);
    int head_in = cj.value("head_in", 0);
    if (c.head < 0 || head_in < 0 || (c.head > 0 && head_in > 0 && !c.mix)) throw bad("a head without an embedding");
    AlignEncoder enc(c);
    std::string ids = base64_decode(j.at("vocabulary").get<std::string>());
    std::vector<uint64_t> vocab(ids.size() / sizeof(uint64_t));
    if (!vocab.empty()) std::memcpy(vocab.data(), ids.data(), vocab.size() * sizeof(uint64_t));
    enc.set_vocabulary(vocab);
    auto theta = j.at("theta").get<std::vector<double>>();
    if (theta.size() != static_cast<size_t>(kSlots)) throw bad("theta has " + std::to_string(theta.size()) + " values");
    for (int s = 0; s < kSlots; ++s) enc.p_[s] = theta[static_cast<size_t>(s)];
    enc.p_[kSlots] = j.at("theta_mix");
    std::string raw = base64_decode(j.at("delta").get<std::string>());
    size_t want = vocab.size() * static_cast<size_t>(c.dim);
    bool f64 = j.value("delta_dtype", "float32") == "float64";
    if (raw.size() != want * (f64 ? sizeof(double) : sizeof(float)))
      throw bad("the weights do not match the vocabulary and dimension");
    if (f64) {
      if (!raw.empty()) std::memcpy(enc.p_.data() + enc.delta_offset(), raw.data(), raw.size());
    } else {
      std::vector<float> delta(want);
      if (!raw.empty()) std::memcpy(delta.data(), raw.data(), raw.size());
      for (size_t i = 0; i < want; ++i) enc.p_[static_cast<Eigen::Index>(enc.delta_offset() + i)] = delta[i];
    }
    if (c.head > 0 && head_in > 0) {
      enc.init_head(head_in);
      std::string hw = base64_decode(j.at("head").get<std::string>());
      size_t hn = enc.head_size();
      if (hw.size() != hn * (f64 ? sizeof(double) : sizeof(float)))
        throw bad("the head's weights do not match its shape");
      if (f64) {
        std::memcpy(enc.p_.data() + enc.head_offset(), hw.data(), hw.size());
      } else {
        std::vector<float> w(hn);
        std::memcpy(w.data(), hw.data(), hw.size());
        for (size_t i = 0; i < hn; ++i) enc.p_[static_cast<Eigen::Index>(enc.head_offset() + i)] = w[i];
      }
    }
    enc.provenance = j.value("provenance", json::object());
    return enc;
  } catch (const json::exception& e) {
    throw bad(std::string("malformed: ") + e.what());
  } catch (const std::invalid_argument& e) {
    throw bad(e.what());
  }
}

AlignEncoder AlignEncoder::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ExitCode::not_found, "cannot read AlignRetriever model '" + path + "'");
  json j = json::parse(in, nullptr, false);
  if (j.is_discarded()) throw Error(ExitCode::bad_input, "AlignRetriever model '" + path + "' is not JSON");
  return from_json(j, path);
}

// Generated at build time from models/aligncoder.json and models/rlcoder.json (cmake/embed.cmake); empty when
// the build has none.
extern const char* const kDefaultAlignModel;
extern const char* const kDefaultRlcoderModel;

AlignEncoder load_align_encoder(const std::string& path, const std::string& method) {
  if (path == "untrained") return AlignEncoder();  // the ablation without training (III-C's "w/o RL")
  if (!path.empty()) return AlignEncoder::load(path);
  bool rl = method == "rlcoder";
  std::string_view text(rl ? kDefaultRlcoderModel : kDefaultAlignModel);
  std::string file = rl ? "models/rlcoder.json" : "models/aligncoder.json";
  if (text.empty())
    throw Error(ExitCode::not_found,
                "no built-in " + method + " retriever model in this build (" + file +
                    " was missing at build time): train one with `repoctx train-aligncoder REPO... " +
                    (rl ? "--query plain " : "") + "--out model.json` and pass " +
                    (rl ? "--param rlcoder_model_path=model.json" : "--model-file model.json"));
  json j = json::parse(text, nullptr, false);
  return AlignEncoder::from_json(j, "built-in " + file);
}

void AlignEncoder::save(const std::string& path, const json& prov) const {
  json j = to_json();
  if (!prov.is_null()) j["provenance"] = prov;
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error(ExitCode::bad_input, "cannot write '" + tmp + "'");
    out << j.dump() << "\n";
    if (!out) throw Error(ExitCode::bad_input, "cannot write '" + tmp + "' (disk full?)");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw Error(ExitCode::bad_input, "cannot replace '" + path + "': " + ec.message());
}

// ------------------------------------------------------------------------------------------ base64
// Hand-written: none of the libraries repoctx links exposes base64 (it is 30 lines, tested by round trip).
static const char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string base64_encode(const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  std::string out;
  out.reserve((n + 2) / 3 * 4);
  for (size_t i = 0; i < n; i += 3) {
    uint32_t v = static_cast<uint32_t>(p[i]) << 16;
    if (i + 1 < n) v |= static_cast<uint32_t>(p[i + 1]) << 8;
    if (i + 2 < n) v |= p[i + 2];
    out.push_back(kB64[(v >> 18) & 63]);
    out.push_back(kB64[(v >> 12) & 63]);
    out.push_back(i + 1 < n ? kB64[(v >> 6) & 63] : '=');
    out.push_back(i + 2 < n ? kB64[v & 63] : '=');
  }
  return out;
}

std::string base64_decode(std::string_view s) {
  std::string out;
  out.reserve(s.size() / 4 * 3);
  uint32_t v = 0;
  int bits = 0;
  for (char c : s) {
    if (c == '=') break;
    const char* at = std::strchr(kB64, c);
    if (!at || c == '\0') throw std::invalid_argument(std::string("bad base64 character '") + c + "'");
    v = (v << 6) | static_cast<uint32_t>(at - kB64);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((v >> bits) & 0xFF));
    }
  }
  return out;
}

}  // namespace repoctx
