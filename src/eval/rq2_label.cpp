#include "eval/rq2_label.h"

#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "llm/prompts.h"
#include "llm/structured.h"
#include "util/cancel.h"
#include "util/error.h"
#include "util/text.h"

namespace repoctx {

using nlohmann::json;

namespace {

json verdict_schema() {
  return {{"type", "object"},
          {"properties", {{"reason", {{"type", "string"}, {"maxLength", 300}}}, {"similar", {{"type", "boolean"}}}}},
          {"required", {"reason", "similar"}}};
}

std::string cut(const std::string& s, int n) {
  return n > 0 && s.size() > static_cast<size_t>(n) ? s.substr(0, static_cast<size_t>(n)) : s;
}

}  // namespace

Rq2LabelReport label_rq2_pairs(LlmBackend& llm, const std::vector<Rq2Pair>& pairs, const std::string& out_path,
                               const Rq2LabelOptions& o) {
  static const PromptTemplate tpl = load_prompt("rq2_label");
  Rq2LabelReport rep;
  rep.pairs = static_cast<int>(pairs.size());
  Rq2Labels done;
  std::error_code ec;
  if (std::filesystem::exists(out_path, ec)) done = read_rq2_labels(out_path);
  std::vector<const Rq2Pair*> todo;
  for (const auto& p : pairs) {
    if (done.count({p.target_step, p.context_step}))
      ++rep.reused;
    else
      todo.push_back(&p);
  }
  std::ofstream out(out_path, std::ios::app);
  if (!out) throw Error(ExitCode::bad_input, "cannot write the labels file '" + out_path + "'");
  MeteredBackend metered(llm);
  // Chunks as large as the backend serves at once (times 4), so that finished labels reach the file and
  // Ctrl-C waits for at most one chunk.
  const size_t chunk = static_cast<size_t>(std::max(1, llm.capabilities().parallel) * 4);
  for (size_t at = 0; at < todo.size(); at += chunk) {
    throw_if_interrupted("the labels written so far are kept; re-run to resume");
    std::vector<StructuredCall> calls;
    size_t end = std::min(todo.size(), at + chunk);
    for (size_t i = at; i < end; ++i) {
      const Rq2Pair& p = *todo[i];
      StructuredCall c;
      c.purpose = "rq2_label";
      c.schema = verdict_schema();
      c.max_tokens = o.max_tokens;
      c.messages = render_prompt(tpl, {{"target_description", cut(p.target_description, o.description_chars)},
                                       {"context_description", cut(p.context_description, o.description_chars)},
                                       {"context_snippet", cut(p.context_snippet, o.snippet_chars)}});
      calls.push_back(std::move(c));
    }
    auto answers = ask_json_many(metered, calls);
    for (size_t i = 0; i < answers.size(); ++i) {
      const Rq2Pair& p = *todo[at + i];
      auto similar = answers[i].boolean("similar");
      if (!similar) {
        ++rep.unusable;
        if (rep.errors.size() < 5)
          rep.errors.push_back(
              fmt::format("({}, {}): {}", p.target_step, p.context_step, answers[i].missing("\"similar\" verdict")));
        continue;
      }
      json line = {{"target_step", p.target_step},
                   {"context_step", p.context_step},
                   {"similar", *similar},
                   {"reason", sanitize_utf8(answers[i].string("reason"))},
                   {"model", llm.identity()}};
      out << line.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
      ++rep.labelled;
      rep.similar += *similar ? 1 : 0;
    }
    out.flush();
    if (!out) throw Error(ExitCode::bad_input, "cannot write the labels file '" + out_path + "' (disk full?)");
  }
  rep.usage = metered.usage();
  return rep;
}

Rq2Agreement rq2_agreement(const Rq2Labels& a, const Rq2Labels& b) {
  Rq2Agreement r;
  int agree = 0, a_yes = 0, b_yes = 0;
  for (const auto& [key, la] : a) {
    auto it = b.find(key);
    if (it == b.end()) continue;
    ++r.pairs;
    agree += la == it->second ? 1 : 0;
    a_yes += la ? 1 : 0;
    b_yes += it->second ? 1 : 0;
  }
  if (r.pairs == 0) return r;
  double n = r.pairs;
  r.observed = agree / n;
  double chance = (a_yes / n) * (b_yes / n) + (1 - a_yes / n) * (1 - b_yes / n);
  r.kappa = chance >= 1.0 ? 0.0 : (r.observed - chance) / (1.0 - chance);
  return r;
}

}  // namespace repoctx
