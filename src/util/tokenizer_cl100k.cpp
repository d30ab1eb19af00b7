#include "util/tokenizer_cl100k.h"

#include <unicode/uchar.h>

#include <limits>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>

#include "util/error.h"

namespace repoctx {
extern const char* const kCl100kBaseJson;  // cmake/embed_cl100k.cmake
}

namespace repoctx::cl100k {
namespace {

// The pattern the pre-tokenizer below implements; the embedded encoding must name exactly this one.
constexpr std::string_view kPattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

constexpr uint32_t kNoRank = std::numeric_limits<uint32_t>::max();

struct Ranks {
  std::string bytes;  // every token's bytes, back to back (the map's keys view into it)
  std::unordered_map<std::string_view, uint32_t> rank;
};

int base64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

// Appends the bytes of one base64 token (tiktoken's rank files are base64, padded). A dozen lines: no
// library this project links decodes base64.
void append_base64(std::string_view b64, std::string& out) {
  uint32_t acc = 0;
  int bits = 0;
  for (char c : b64) {
    if (c == '=') break;
    int v = base64_value(c);
    if (v < 0) throw Error(ExitCode::failure, "cl100k: the embedded rank table holds a non-base64 token");
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
}

// tiktoken's compressed rank text: lines of "<name> <first rank> <token> <token> ...", ranks consecutive.
Ranks parse_ranks(const std::string& text) {
  Ranks r;
  r.bytes.reserve(text.size());  // decoded bytes are shorter than their base64: no reallocation, views stay valid
  std::vector<std::pair<size_t, size_t>> spans;
  std::vector<uint32_t> ids;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) eol = text.size();
    std::string_view line(text.data() + pos, eol - pos);
    pos = eol + 1;
    if (line.empty()) continue;
    size_t a = line.find(' '), b = a == std::string_view::npos ? a : line.find(' ', a + 1);
    if (b == std::string_view::npos) throw Error(ExitCode::failure, "cl100k: malformed rank line");
    uint32_t next = static_cast<uint32_t>(std::stoul(std::string(line.substr(a + 1, b - a - 1))));
    for (size_t s = b + 1; s < line.size();) {
      size_t e = line.find(' ', s);
      if (e == std::string_view::npos) e = line.size();
      size_t start = r.bytes.size();
      append_base64(line.substr(s, e - s), r.bytes);
      spans.emplace_back(start, r.bytes.size() - start);
      ids.push_back(next++);
      s = e + 1;
    }
  }
  r.rank.reserve(spans.size());
  for (size_t i = 0; i < spans.size(); ++i)
    r.rank.emplace(std::string_view(r.bytes).substr(spans[i].first, spans[i].second), ids[i]);
  return r;
}

const Ranks& ranks() {
  static const Ranks r = [] {
    auto j = nlohmann::json::parse(kCl100kBaseJson);
    if (j.value("pat_str", "") != kPattern)
      throw Error(ExitCode::failure,
                  "cl100k: the embedded encoding's pattern is not the one this tokenizer implements; rebuild "
                  "with the tiktoken version scripts/deps.lock pins");
    return parse_ranks(j.at("bpe_ranks").get<std::string>());
  }();
  return r;
}

uint32_t rank_of(const Ranks& r, std::string_view bytes) {
  auto it = r.rank.find(bytes);
  return it == r.rank.end() ? kNoRank : it->second;
}

// ---------------------------------------------------------------- pre-tokenizer
// A hand-written matcher of kPattern (leftmost-first alternation with backtracking, as tiktoken's regex engine
// runs it), over code points with ICU's Unicode properties: \p{L} letters, \p{N} numbers, \s White_Space.

enum Class : uint8_t { kOther, kLetter, kNumber, kSpace, kNewline };

struct CodePoint {
  Class cls;
  uint8_t len;  // bytes
  char32_t cp;
};

Class classify(char32_t c) {
  if (c == '\r' || c == '\n') return kNewline;
  if (c < 0x80) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return kLetter;
    if (c >= '0' && c <= '9') return kNumber;
    if (c == ' ' || (c >= '\t' && c <= '\f')) return kSpace;
    return kOther;
  }
  uint32_t mask = U_GET_GC_MASK(static_cast<UChar32>(c));
  if (mask & U_GC_L_MASK) return kLetter;
  if (mask & U_GC_N_MASK) return kNumber;
  if (u_isUWhiteSpace(static_cast<UChar32>(c))) return kSpace;
  return kOther;
}

// The code point at `i`; an invalid or truncated sequence is one byte of class kOther.
CodePoint decode(std::string_view t, size_t i) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(t[k]); };
  unsigned char c = b(i);
  if (c < 0x80) return {classify(c), 1, c};
  int len = c >= 0xf0 && c < 0xf5 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
  if (len == 0 || i + len > t.size()) return {kOther, 1, 0xfffd};
  char32_t cp = c & (len == 2 ? 0x1f : len == 3 ? 0x0f : 0x07);
  for (int k = 1; k < len; ++k) {
    if ((b(i + k) & 0xc0) != 0x80) return {kOther, 1, 0xfffd};
    cp = (cp << 6) | (b(i + k) & 0x3f);
  }
  bool overlong = (len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff));
  if (overlong || (cp >= 0xd800 && cp <= 0xdfff)) return {kOther, 1, 0xfffd};
  return {classify(cp), static_cast<uint8_t>(len), cp};
}

bool is_space(Class c) {
  return c == kSpace || c == kNewline;
}

// (?i:'s|'t|'re|'ve|'m|'ll|'d): the end of a contraction at `i`, or 0. ASCII case only: tiktoken does not
// take 'ſ (U+017F) for 's.
size_t contraction(std::string_view t, size_t i) {
  if (t[i] != '\'' || i + 1 >= t.size()) return 0;
  auto lower = [&](size_t k) -> char {
    if (k >= t.size()) return 0;
    char c = t[k];
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
  };
  char a = lower(i + 1);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
  char b = lower(i + 2);
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return i + 3;
  return 0;
}

// The end of the pre-tokenizer piece that starts at `i`.
size_t next_piece(std::string_view t, size_t i) {
  const size_t n = t.size();
  if (size_t e = contraction(t, i)) return e;
  CodePoint first = decode(t, i);
  // [^\r\n\p{L}\p{N}]?\p{L}+
  size_t j = i;
  if (first.cls == kOther || first.cls == kSpace) j += first.len;
  if (j < n && (j == i ? first.cls == kLetter : decode(t, j).cls == kLetter)) {
    while (j < n) {
      CodePoint c = decode(t, j);
      if (c.cls != kLetter) break;
      j += c.len;
    }
    return j;
  }
  // \p{N}{1,3}
  if (first.cls == kNumber) {
    j = i;
    for (int k = 0; k < 3 && j < n; ++k) {
      CodePoint c = decode(t, j);
      if (c.cls != kNumber) break;
      j += c.len;
    }
    return j;
  }
  //  ?[^\s\p{L}\p{N}]+[\r\n]*
  j = i + (t[i] == ' ' ? 1 : 0);
  if (j < n && decode(t, j).cls == kOther) {
    while (j < n) {
      CodePoint c = decode(t, j);
      if (c.cls != kOther) break;
      j += c.len;
    }
    while (j < n && (t[j] == '\r' || t[j] == '\n')) ++j;
    return j;
  }
  // What is left starts with white space: \s*[\r\n]+ | \s+(?!\S) | \s+
  size_t end = i, last_newline_end = 0, last_start = i;
  while (end < n) {
    CodePoint c = decode(t, end);
    if (!is_space(c.cls)) break;
    last_start = end;
    end += c.len;
    if (c.cls == kNewline) last_newline_end = end;
  }
  if (last_newline_end != 0) {
    // \s* backs off to the last newline; [\r\n]+ then takes that newline's run.
    return last_newline_end;
  }
  if (end == n || last_start == i) return end;  // \s+(?!\S) at the end of the text, or \s+ of one character
  return last_start;                            // \s+(?!\S): the run less its last character
}

// ---------------------------------------------------------------- byte-pair merging
// The BPE of one piece: ranks of adjacent part pairs, merging the lowest-ranked pair (the leftmost on a tie)
// until no pair is a token. Returns the parts' start offsets plus the piece's end.
std::vector<size_t> merge_parts(const Ranks& r, std::string_view piece) {
  std::vector<size_t> start(piece.size() + 1);
  for (size_t k = 0; k <= piece.size(); ++k) start[k] = k;
  // pair_rank[k]: the rank of parts k and k+1 joined
  auto joined = [&](size_t k) {
    return k + 2 < start.size() ? rank_of(r, piece.substr(start[k], start[k + 2] - start[k])) : kNoRank;
  };
  std::vector<uint32_t> pair_rank(start.size());
  for (size_t k = 0; k < start.size(); ++k) pair_rank[k] = joined(k);
  for (;;) {
    size_t best = 0;
    uint32_t best_rank = kNoRank;
    for (size_t k = 0; k + 2 < start.size(); ++k)
      if (pair_rank[k] < best_rank) best_rank = pair_rank[k], best = k;
    if (best_rank == kNoRank) break;
    start.erase(start.begin() + static_cast<std::ptrdiff_t>(best) + 1);
    pair_rank.erase(pair_rank.begin() + static_cast<std::ptrdiff_t>(best) + 1);
    pair_rank[best] = joined(best);
    if (best > 0) pair_rank[best - 1] = joined(best - 1);
  }
  return start;
}

template <class Emit>
void encode_piece(const Ranks& r, std::string_view piece, Emit&& emit) {
  if (uint32_t whole = rank_of(r, piece); whole != kNoRank) return emit(whole);
  std::vector<size_t> start = merge_parts(r, piece);
  for (size_t k = 0; k + 1 < start.size(); ++k) {
    uint32_t id = rank_of(r, piece.substr(start[k], start[k + 1] - start[k]));
    if (id == kNoRank) throw Error(ExitCode::failure, "cl100k: a byte has no rank (the rank table is incomplete)");
    emit(id);
  }
}

template <class Emit>
void encode_text(const Ranks& r, std::string_view text, Emit&& emit) {
  for (size_t i = 0; i < text.size();) {
    size_t e = next_piece(text, i);
    encode_piece(r, text.substr(i, e - i), emit);
    i = e;
  }
}

}  // namespace

std::vector<uint32_t> encode(std::string_view text) {
  std::vector<uint32_t> ids;
  encode_text(ranks(), text, [&](uint32_t id) { ids.push_back(id); });
  return ids;
}

int count(std::string_view text) {
  int n = 0;
  encode_text(ranks(), text, [&](uint32_t) { ++n; });
  return n;
}

std::string_view truncate(std::string_view text, int max_tokens) {
  const Ranks& r = ranks();
  int n = 0;
  size_t i = 0;
  while (i < text.size()) {
    size_t e = next_piece(text, i);
    int piece_tokens = 0;
    encode_piece(r, text.substr(i, e - i), [&](uint32_t) { ++piece_tokens; });
    if (n + piece_tokens > max_tokens) break;
    n += piece_tokens;
    i = e;
  }
  return text.substr(0, i);
}

size_t vocabulary_size() {
  return ranks().rank.size();
}

}  // namespace repoctx::cl100k
