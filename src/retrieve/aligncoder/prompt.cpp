#include "retrieve/aligncoder/prompt.h"

#include <fmt/format.h>

#include "llm/prompts.h"
#include "util/text.h"

namespace repoctx {

namespace {
std::string marker(const Engine& e, int file) {
  return line_comment(e.view().files()[file].language);
}
std::string commented(const std::string& code, const std::string& c) {
  std::string out;
  for (auto line : split_lines(code)) {
    if (!out.empty()) out += '\n';
    out += c;
    if (!line.empty()) out += ' ';
    out.append(line);
  }
  return out;
}
}  // namespace

std::string hit_text(const Engine& e, const Hit& h) {
  if (!h.text.empty()) return h.text;
  if (h.snippet >= 0) return e.snippet_text(h.snippet);
  if (h.entity >= 0) return e.entity_text(h.entity);
  const std::string& content = e.view().content(h.file);
  return std::string(line_range(content, line_starts(content), h.start_line, h.end_line));
}

int first_shown_line(const std::string& unfinished, int code_chars) {
  if (code_chars <= 0 || unfinished.size() <= static_cast<size_t>(code_chars)) return 1;
  size_t from = unfinished.size() - static_cast<size_t>(code_chars);
  size_t nl = unfinished.find('\n', from - 1);
  size_t start;
  if (nl != std::string::npos && nl + 1 < unfinished.size()) {
    start = nl + 1;  // whole lines within the budget
  } else {
    // The last line alone is longer than the budget: that line, whole.
    size_t end = unfinished.size();
    if (unfinished[end - 1] == '\n') --end;
    size_t prev = end == 0 ? std::string::npos : unfinished.rfind('\n', end - 1);
    start = prev == std::string::npos ? 0 : prev + 1;
  }
  int line = 1;
  for (size_t i = 0; i < start; ++i) line += unfinished[i] == '\n';
  return line;
}

CompletionPrompt completion_prompt(const Engine& e, const CursorContext& ctx, const std::vector<Hit>& hits,
                                   const CompletionParams& p, const std::vector<std::string>& candidates) {
  static const PromptTemplate code_t = load_prompt("complete_code"), snippet_t = load_prompt("complete_snippet"),
                              path_t = load_prompt("complete_path"), cand_t = load_prompt("complete_candidates");
  const std::string c = marker(e, ctx.cursor.file);
  const std::string& path = e.view().files()[ctx.cursor.file].path;
  CompletionPrompt out;
  std::vector<std::string> blocks;
  size_t used = 0;
  for (const Hit& h : hits) {
    std::string block = render_text(snippet_t.user,
                                    {{"c", c},
                                     {"path", e.view().files()[h.file].path},
                                     {"lines", fmt::format("{}-{}", h.start_line, h.end_line)},
                                     {"code", commented(hit_text(e, h), c)}},
                                    snippet_t.name) +
                        "\n";
    if (used + block.size() > static_cast<size_t>(std::max(0, p.context_chars))) continue;
    used += block.size();
    blocks.push_back(std::move(block));
  }
  std::string context;
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) context += *it;  // the best nearest the code
  if (!candidates.empty()) {
    std::string code;
    for (const auto& cand : candidates) code += (code.empty() ? "" : "\n" + c + "\n") + commented(cand, c);
    context += render_text(cand_t.user, {{"c", c}, {"code", code}}, cand_t.name) + "\n";
  }
  out.blocks = static_cast<int>(blocks.size());
  out.shown_from_line = first_shown_line(ctx.unfinished, p.code_chars);
  auto starts = line_starts(ctx.unfinished);
  std::string code = ctx.unfinished.substr(starts[static_cast<size_t>(out.shown_from_line - 1)]);
  out.text = render_text(code_t.user,
                         {{"context", context},
                          {"path", render_text(path_t.user, {{"c", c}, {"path", path}}, path_t.name)},
                          {"code", code}},
                         code_t.name);
  return out;
}

}  // namespace repoctx
