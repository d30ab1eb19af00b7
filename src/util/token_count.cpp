#include "util/token_count.h"

#include <cstdint>

#include "util/error.h"
#include "util/tokenizer_cl100k.h"

namespace repoctx {
namespace {

// Non-ASCII bytes belong to letters (most non-ASCII text in code is words, comments and strings).
bool letter(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80;
}
bool digit(unsigned char c) {
  return c >= '0' && c <= '9';
}
bool space(unsigned char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
bool newline(unsigned char c) {
  return c == '\n' || c == '\r';
}

// One pre-tokenizer piece starting at i: its end and its token count.
size_t next_piece(std::string_view t, size_t i, int* tokens) {
  auto at = [&](size_t k) { return static_cast<unsigned char>(t[k]); };
  size_t n = t.size();
  *tokens = 1;
  // 's 't 're 've 'm 'll 'd
  if (at(i) == '\'' && i + 1 < n) {
    for (std::string_view c : {"s", "t", "re", "ve", "m", "ll", "d"})
      if (t.substr(i + 1, c.size()) == c && (i + 1 + c.size() >= n || !letter(at(i + 1 + c.size()))))
        return i + 1 + c.size();
  }
  // [^\r\n\p{L}\p{N}]?\p{L}+
  size_t j = i;
  if (!letter(at(j)) && !digit(at(j)) && !newline(at(j)) && j + 1 < n && letter(at(j + 1))) ++j;
  if (letter(at(j))) {
    size_t k = j;
    while (k < n && letter(at(k))) ++k;
    size_t len = k - j;
    if (len > 8) *tokens += static_cast<int>((len - 8 + 5) / 6);
    return k;
  }
  // \p{N}{1,3}
  if (digit(at(i))) {
    size_t k = i;
    while (k < n && k < i + 3 && digit(at(k))) ++k;
    return k;
  }
  //  ?[^\s\p{L}\p{N}]+[\r\n]*
  j = i;
  if (at(j) == ' ' && j + 1 < n && !space(at(j + 1)) && !letter(at(j + 1)) && !digit(at(j + 1))) ++j;
  if (!space(at(j)) && !letter(at(j)) && !digit(at(j))) {
    size_t k = j;
    while (k < n && !space(at(k)) && !letter(at(k)) && !digit(at(k))) ++k;
    while (k < n && newline(at(k))) ++k;
    return k;
  }
  // \s*[\r\n]+ | \s+(?!\S) | \s+
  size_t k = i;
  while (k < n && space(at(k))) ++k;
  size_t last_nl = k;
  while (last_nl > i && !newline(at(last_nl - 1))) --last_nl;
  if (last_nl > i) return last_nl;       // up to the last newline of the run
  if (k < n && k - i > 1) return k - 1;  // leave one space to lead the next piece
  return k;
}

}  // namespace

int estimate_tokens(std::string_view text) {
  int total = 0;
  for (size_t i = 0; i < text.size();) {
    int t = 0;
    i = next_piece(text, i, &t);
    total += t;
  }
  return total;
}

std::string_view truncate_tokens(std::string_view text, int max_tokens) {
  int total = 0;
  size_t i = 0;
  while (i < text.size()) {
    int t = 0;
    size_t next = next_piece(text, i, &t);
    if (total + t > max_tokens) break;
    total += t;
    i = next;
  }
  return text.substr(0, i);
}

TokenCounter token_counter_named(const std::string& name) {
  if (name == "cl100k") return TokenCounter::cl100k;
  if (name == "estimate") return TokenCounter::estimate;
  throw Error(ExitCode::usage, "unknown tokenizer '" + name + "': use cl100k (exact GPT-3.5 tokens) or estimate");
}

const char* token_counter_name(TokenCounter c) {
  return c == TokenCounter::cl100k ? "cl100k" : "estimate";
}

int count_tokens(std::string_view text, TokenCounter how) {
  return how == TokenCounter::cl100k ? cl100k::count(text) : estimate_tokens(text);
}

std::string_view truncate_tokens(std::string_view text, int max_tokens, TokenCounter how) {
  return how == TokenCounter::cl100k ? cl100k::truncate(text, max_tokens) : truncate_tokens(text, max_tokens);
}

}  // namespace repoctx
