// Text utilities shared by every stage: the code-aware tokenizer, line arithmetic, normalisation.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace repoctx {

// Code-aware tokenizer (the contract bench/reference/ref_index.py implements too):
// every [A-Za-z0-9_]+ run is split on '_' and at camelCase boundaries ("HTTPServer" -> http, server),
// subwords are lowercased, subwords shorter than 2 characters or made only of digits are dropped, and
// when a run yields more than one subword the whole run (lowercased) is emitted as well, so that an exact
// identifier match outranks a match on its parts.
// Hand-written: no tokenizer library in Debian splits identifiers this way, and BM25 quality depends on it.
void tokenize_code(std::string_view text, std::vector<std::string>& out);
std::vector<std::string> tokenize_code(std::string_view text);
// The same tokens as XXH3-64 hashes (term ids), without building strings.
void tokenize_hashes(std::string_view text, std::vector<uint64_t>& out);

// Runs of whitespace as one space, none at either end (declaration headers and signatures as one line).
std::string collapse_spaces(std::string_view s);
// Lowercase, newlines -> spaces, punctuation removed, whitespace collapsed (ProjAgent 4.1 step validation).
std::string normalize_text(std::string_view text);

// ROUGE-L F-measure (Lin 2004; beta = 1, the rouge-score package's rougeL fmeasure) over the whitespace
// tokens of two texts: with L the longest common subsequence of tokens, P = L/|b|, R = L/|a|,
// F = 2PR/(P + R); 0 when either text has no token. Symmetric. rouge-score also lowercases and drops
// punctuation: pass normalize_text() output to get its numbers (ProjAgent 4.1 accepts a step above 0.7).
// O(|a|*|b|) time, O(min) memory: meant for descriptions and docstrings, not whole files.
double rouge_l_f1(std::string_view a, std::string_view b);

// Python's inspect.cleandoc: strip the common indentation of lines after the first, trim blank edges.
std::string clean_docstring(std::string_view raw);

bool is_valid_utf8(std::string_view s);
// Replace invalid UTF-8 sequences by U+FFFD so that JSON output never fails on odd bytes.
std::string sanitize_utf8(std::string_view s);

// Byte offsets of the start of every line (line i, 1-based, starts at offsets[i-1]).
std::vector<uint32_t> line_starts(std::string_view text);
// The text of lines [first, last] (1-based, inclusive), without the trailing newline of the last.
std::string_view line_range(std::string_view text, const std::vector<uint32_t>& starts, int first, int last);

// Levenshtein distance between a and b when it is at most `max`, else max + 1: only the band of cells
// within `max` of the diagonal is computed and the walk stops once a whole row exceeds `max`, so the cost
// is O(min(|a|, |b|) * max) and O(1) when the lengths differ by more than max (a 16,000-character name
// against 100,000 entity names costs milliseconds). Hand-written: no Debian library offers a bounded one.
size_t edit_distance(std::string_view a, std::string_view b, size_t max);

bool is_blank(std::string_view line);
std::string_view trim(std::string_view s);
std::vector<std::string_view> split_lines(std::string_view text);
// The text of consecutive C-style comments in source order (`///`, `//`, `/* */`), their markers and a block
// comment's leading `*` removed, one line per line (a C, C++ or C# documentation comment).
std::string comment_block_text(const std::vector<std::string_view>& comments);
// The space-separated words of a static string as a set (the names a language predeclares); the views point
// into `words`, which must outlive the set.
std::unordered_set<std::string_view> word_set(std::string_view words);
bool starts_with(std::string_view s, std::string_view prefix);
bool ends_with(std::string_view s, std::string_view suffix);
std::string join(const std::vector<std::string>& parts, std::string_view sep);

}  // namespace repoctx
