// Exact match and edit similarity of code completions, in RepoCoder's convention (RepoEval's
// compute_score.py, which AlignCoder's IV-C follows):
//   target lines     the ground truth's non-blank lines, each stripped of surrounding whitespace
//   predicted lines  the generation's first |target lines| non-blank lines, stripped (for a line task: the
//                    first non-blank generated line)
//   EM = 1 when the two lists are equal, else 0
//   ES = 1 - Levenshtein(T, P) / max(|T|, |P|) with T, P the lists joined by '\n', lengths and edits in
//        Unicode code points (Python's editdistance on str); 1 when both are empty
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace repoctx {

std::vector<std::string> stripped_lines(std::string_view text);  // non-blank lines, stripped
// The part of a generation that is scored against `ground_truth` (its first |target lines| lines, joined).
std::string scored_prediction(std::string_view generated, std::string_view ground_truth);
bool exact_match(std::string_view generated, std::string_view ground_truth);
double edit_similarity(std::string_view generated, std::string_view ground_truth);
// Levenshtein distance over code points (invalid UTF-8 bytes count as one point each).
size_t levenshtein(std::string_view a, std::string_view b);

}  // namespace repoctx
