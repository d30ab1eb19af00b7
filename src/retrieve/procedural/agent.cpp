#include "retrieve/procedural/agent.h"

#include <algorithm>
#include <map>

#include "llm/prompts.h"
#include "retrieve/procedural/decompose.h"
#include "util/error.h"
#include "util/text.h"

namespace repoctx {

using nlohmann::json;

SeedAgent::SeedAgent(LlmBackend& llm, RepoTools& tools, const ProceduralParams& p) : llm_(llm), tools_(tools), p_(p) {}

json SeedAgent::turn_schema() {
  return {{"type", "object"},
          {"properties",
           {{"thought", {{"type", "string"}, {"maxLength", 300}}},
            {"tool", {{"enum", {"ls", "grep", "read_func", "read_lines", "search_func", "propose_func", "finish"}}}},
            {"path", {{"type", "string"}, {"maxLength", 200}}},
            {"pattern", {{"type", "string"}, {"maxLength", 120}}},
            {"name", {{"type", "string"}, {"maxLength", 200}}},
            {"fixed", {{"type", "boolean"}}},
            {"start", {{"type", "integer"}, {"minimum", 1}, {"maximum", 1000000}}},
            {"end", {{"type", "integer"}, {"minimum", 1}, {"maximum", 1000000}}}}},
          {"required", {"thought", "tool"}}};
}

int SeedAgent::estimate_tokens(const std::vector<ChatMessage>& ms) {
  // ~4 characters per token for English and code: a budget check, not a tokenizer.
  size_t chars = 0;
  for (const auto& m : ms) chars += m.content.size() + 8;
  return static_cast<int>(chars / 4);
}

namespace {

enum class Kind { system, task, exploration, proposal, summary };

struct Turn {
  ChatMessage msg;
  Kind kind;
};

std::string join_list(const std::set<std::string>& s) {
  std::string out;
  for (const auto& x : s) out += (out.empty() ? "" : ", ") + x;
  return out.empty() ? "(none)" : out;
}

}  // namespace

AgentRun SeedAgent::run(const std::string& target_step, const std::string& target_file, const std::string& structure,
                        const std::vector<std::string>& seeds, const std::function<AgentVerdict(int)>& judge) {
  static const PromptTemplate sys = load_prompt("agent_system");
  static const PromptTemplate task = load_prompt("agent_task");
  static const PromptTemplate feedback = load_prompt("agent_feedback");
  static const PromptTemplate compaction = load_prompt("agent_compaction");
  AgentRun run;
  std::string seed_text;
  for (const auto& s : seeds) seed_text += "- " + s + "\n";
  if (seed_text.empty()) seed_text = "(none yet)";
  std::vector<Turn> convo;
  for (auto& m : render_prompt(sys, {{"budget", std::to_string(p_.agent_budget)}})) convo.push_back({m, Kind::system});
  for (auto& m : render_prompt(task, {{"target_step", target_step},
                                      {"target_file", target_file},
                                      {"structure", structure},
                                      {"seeds", seed_text}}))
    convo.push_back({m, Kind::task});
  std::set<std::string> files, dirs, functions, proposed_names;
  std::vector<std::string> rejected;
  std::map<std::string, int> repeats;
  const std::string schema = turn_schema().dump();

  while (run.tool_calls < p_.agent_budget) {
    // Compaction: summarise the exploration when the conversation outgrows the budget.
    std::vector<ChatMessage> ms;
    for (const auto& t : convo) ms.push_back(t.msg);
    if (estimate_tokens(ms) > p_.agent_context_tokens) {
      std::string history;
      for (const auto& t : convo)
        if (t.kind == Kind::exploration || t.kind == Kind::summary) history += t.msg.role + ": " + t.msg.content + "\n";
      GenerateRequest sr;
      sr.purpose = "agent_compaction";
      sr.messages = render_prompt(compaction, {{"history", history},
                                               {"files", join_list(files)},
                                               {"directories", join_list(dirs)},
                                               {"functions", join_list(functions)}});
      sr.max_tokens = 512;
      std::string summary = first_text(llm_.generate(sr));
      // The lists are appended verbatim: explored files, directories and functions survive any summary.
      summary += "\nExplored files: " + join_list(files) + "\nExplored directories: " + join_list(dirs) +
                 "\nExplored functions: " + join_list(functions);
      std::vector<Turn> kept;
      bool placed = false;
      for (auto& t : convo) {
        if (t.kind == Kind::exploration || t.kind == Kind::summary) {
          if (!placed) {
            kept.push_back({{"user", "Summary of your exploration so far:\n" + summary}, Kind::summary});
            placed = true;
          }
          continue;
        }
        kept.push_back(std::move(t));
      }
      convo = std::move(kept);
      ++run.compactions;
      run.trace.push_back({{"compaction", run.compactions}, {"tokens_before", estimate_tokens(ms)}});
      ms.clear();
      for (const auto& t : convo) ms.push_back(t.msg);
    }
    GenerateRequest r;
    r.purpose = "agent_turn";
    r.messages = ms;
    r.json_schema = schema;
    r.max_tokens = p_.agent_tokens;
    std::string answer = first_text(llm_.generate(r));
    ++run.tool_calls;
    std::string why;
    auto j = parse_model_json(answer, &why);
    if (!j || !(*j).contains("tool") || !(*j)["tool"].is_string()) {
      ++run.invalid_turns;
      run.trace.push_back({{"turn", run.tool_calls}, {"invalid", j ? "no tool named" : why}});
      convo.push_back({{"assistant", sanitize_utf8(answer.substr(0, 500))}, Kind::exploration});
      convo.push_back({{"user", "That was not a tool call. Answer with JSON: {\"thought\": ..., \"tool\": ...}."},
                       Kind::exploration});
      continue;
    }
    ToolCall call;
    try {
      call = tool_call_from_json(*j);
    } catch (const Error& err) {
      ++run.invalid_turns;
      run.trace.push_back({{"turn", run.tool_calls}, {"invalid", err.what()}});
      convo.push_back({{"assistant", sanitize_utf8(answer.substr(0, 500))}, Kind::exploration});
      convo.push_back({{"user", std::string("That tool call could not be used: ") + err.what()}, Kind::exploration});
      continue;
    }
    json tj = {{"turn", run.tool_calls}, {"tool", call.tool}, {"thought", json_string(*j, "thought")}};
    for (const char* k : {"path", "pattern", "name"})
      if ((*j).contains(k)) tj[k] = (*j)[k];
    if (call.tool == "finish") {
      run.stop_reason = "finish";
      run.trace.push_back(tj);
      return run;
    }
    std::string sig = call.tool + "|" + call.path + "|" + call.pattern + "|" + call.name + "|" +
                      std::to_string(call.start) + "|" + std::to_string(call.end);
    if (++repeats[sig] >= 3) {
      // An agent repeating itself learns nothing new: stop instead of spending the budget.
      run.stop_reason = "loop";
      tj["stopped"] = "the same call a third time";
      run.trace.push_back(tj);
      return run;
    }
    ChatMessage said{"assistant", (*j).dump(-1, ' ', false, json::error_handler_t::replace)};
    if (call.tool == "propose_func") {
      std::string err;
      auto f = tools_.resolve_function(call.name, &err);
      std::string reply;
      if (!f) {
        reply = "propose_func failed: " + err;
        tj["error"] = err;
      } else if (proposed_names.count(call.name)) {
        reply = "You already proposed `" + call.name +
                "`. Rejected so far: " + (rejected.empty() ? "(none)" : join(rejected, ", "));
        tj["duplicate"] = true;
      } else {
        proposed_names.insert(call.name);
        AgentVerdict v = judge(*f);
        tj["accepted"] = v.accepted;
        if (v.accepted) {
          run.accepted.push_back(*f);
          reply = "Accepted: `" + call.name +
                  "` has a procedurally similar step. Continue exploring for others, or finish.";
        } else {
          rejected.push_back(call.name);
          tj["feedback"] = v.feedback;
          reply = render_text(feedback.user,
                              {{"function", call.name}, {"reasons", v.feedback}, {"rejected", join(rejected, ", ")}},
                              "agent_feedback");
        }
      }
      convo.push_back({said, Kind::proposal});
      convo.push_back({{"user", reply}, Kind::proposal});
      run.trace.push_back(tj);
      continue;
    }
    ToolResult res = tools_.call(call);
    for (const auto& f : res.files) files.insert(f);
    for (const auto& d : res.dirs) dirs.insert(d);
    for (int f : res.functions) functions.insert(tools_.function_name(f));
    tj["ok"] = res.ok;
    if (!res.ok)
      tj["error"] = res.error;
    else
      tj["output_chars"] = res.output.size();
    run.trace.push_back(tj);
    convo.push_back({said, Kind::exploration});
    convo.push_back({{"user", res.ok ? res.output : "Error: " + res.error}, Kind::exploration});
  }
  run.stop_reason = "budget";
  return run;
}

}  // namespace repoctx
