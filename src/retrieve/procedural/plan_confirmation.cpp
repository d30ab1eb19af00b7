// ProjAgent 4.2, Plan Confirmation: the LLM reads each open target step with the descriptions of its
// retrieved contexts and says whether they suffice to implement it; a confirmed step keeps its contexts,
// an unconfirmed one gets a refined search query, prepended to its description in the next round.
#include <map>

#include "llm/prompts.h"
#include "llm/structured.h"
#include "retrieve/procedural/stages.h"
#include "util/cancel.h"
#include "util/text.h"

namespace repoctx {

using nlohmann::json;

void confirm_plan(OnlineRun& run, std::vector<TargetStepState*>& open, json& rj) {
  throw_if_interrupted("LLM answers so far are cached; re-run to resume");
  static const PromptTemplate t = load_prompt("plan_confirmation");
  std::string steps;
  for (const auto* st : open) {
    steps += "[" + std::to_string(st->id) + "] " + st->text() + "\n";
    if (st->contexts.empty()) steps += "    (no context retrieved)\n";
    for (const auto& c : st->contexts) steps += "    - " + c.description + " (" + run.name(c.function) + ")\n";
  }
  json schema = {{"type", "object"},
                 {"properties",
                  {{"steps",
                    {{"type", "array"},
                     {"maxItems", open.size()},
                     {"items",
                      {{"type", "object"},
                       {"properties",
                        {{"id", {{"type", "integer"}, {"minimum", 0}, {"maximum", 1000}}},
                         {"sufficient", {{"type", "boolean"}}},
                         {"query", {{"type", "string"}, {"maxLength", 200}}}}},
                       {"required", {"id", "sufficient", "query"}}}}}}}},
                 {"required", {"steps"}}};
  auto answer =
      ask_json(run.llm, {"plan_confirmation", render_prompt(t, {{"problem", run.problem_text()}, {"steps", steps}}),
                         schema, run.p.judge_tokens + 96 * static_cast<int>(open.size())});
  json cj = json::array();
  std::map<int, TargetStepState*> by_id;
  for (auto* st : open) by_id[st->id] = st;
  std::set<int> answered;
  if (const json* answered_steps = answer.array("steps")) {
    for (const auto& v : *answered_steps) {
      if (!v.is_object() || !v.contains("id") || !v["id"].is_number_integer()) continue;
      int id = v["id"].get<int>();
      auto it = by_id.find(id);
      if (it == by_id.end() || answered.count(id)) continue;
      answered.insert(id);
      TargetStepState* st = it->second;
      bool ok = v.contains("sufficient") && v["sufficient"].is_boolean() && v["sufficient"].get<bool>();
      std::string q = std::string(trim(json_string(v, "query")));
      cj.push_back({{"step", id}, {"sufficient", ok}, {"query", q}});
      if (ok)
        st->confirmed = true;
      else if (q.empty() || q == st->query)
        st->stuck = true;
      else
        st->query = q;
    }
  } else {
    rj["plan_confirmation_error"] = answer.missing("steps array");
  }
  for (auto* st : open)
    if (!answered.count(st->id) && !st->confirmed) st->stuck = true;  // no verdict: nothing new to search for
  rj["plan_confirmation"] = cj;
}

}  // namespace repoctx
