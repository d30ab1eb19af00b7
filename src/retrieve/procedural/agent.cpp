#include "retrieve/procedural/agent.h"

#include <algorithm>
#include <map>

#include "llm/prompts.h"
#include "llm/structured.h"
#include "retrieve/procedural/decompose.h"
#include "util/cancel.h"
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

int SeedAgent::compaction_trigger(const ProceduralParams& p, LlmBackend& llm) {
  if (p.agent_context_tokens > 0) return p.agent_context_tokens;
  // The conversation may fill the model's window less the next turn's answer, with a quarter kept free
  // because the estimate is not the model's tokenizer and a tool's output arrives before the next check.
  int ctx = llm.context_length();
  if (ctx <= 0) return kFallbackAgentContextTokens;
  return std::max(1024, ctx * 3 / 4 - p.agent_tokens);
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

namespace {

// One run of the agent: the conversation, what it explored, and one method per kind of turn.
struct Session {
  LlmBackend& llm;
  RepoTools& tools;
  const ProceduralParams& p;
  const std::function<AgentVerdict(int)>& judge;
  AgentRun run;
  std::vector<Turn> convo;
  std::set<std::string> files, dirs, functions, proposed_names;
  std::vector<std::string> rejected;
  std::map<std::string, int> repeats;

  int trigger_tokens;  // compaction past this many estimated tokens (SeedAgent::compaction_trigger)

  Session(LlmBackend& l, RepoTools& t, const ProceduralParams& params, const std::function<AgentVerdict(int)>& j)
      : llm(l), tools(t), p(params), judge(j), trigger_tokens(SeedAgent::compaction_trigger(params, l)) {
    run.compaction_trigger_tokens = trigger_tokens;
  }

  std::vector<ChatMessage> messages() const {
    std::vector<ChatMessage> ms;
    for (const auto& t : convo) ms.push_back(t.msg);
    return ms;
  }

  // Compaction: the exploration messages are replaced by an LLM summary when the conversation outgrows
  // the budget; explored files, directories and functions are appended verbatim and survive any summary.
  void compact_if_needed() {
    static const PromptTemplate compaction = load_prompt("agent_compaction");
    auto ms = messages();
    int tokens = SeedAgent::estimate_tokens(ms);
    if (tokens <= trigger_tokens) return;
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
    std::string summary = first_text(llm.generate(sr));
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
    run.trace.push_back({{"compaction", run.compactions}, {"tokens_before", tokens}});
  }

  // An answer that is no usable tool call goes back to the agent with the reason.
  void invalid(const std::string& answer, const std::string& why, const std::string& reply) {
    ++run.invalid_turns;
    run.trace.push_back({{"turn", run.tool_calls}, {"invalid", why}});
    convo.push_back({{"assistant", sanitize_utf8(answer.substr(0, 500))}, Kind::exploration});
    convo.push_back({{"user", reply}, Kind::exploration});
  }

  void propose(const ToolCall& call, const ChatMessage& said, json& tj) {
    static const PromptTemplate feedback = load_prompt("agent_feedback");
    std::string err;
    auto f = tools.resolve_function(call.name, &err);
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
        reply =
            "Accepted: `" + call.name + "` has a procedurally similar step. Continue exploring for others, or finish.";
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
  }

  void explore(const ToolCall& call, const ChatMessage& said, json& tj) {
    ToolResult res = tools.call(call);
    for (const auto& f : res.files) files.insert(f);
    for (const auto& d : res.dirs) dirs.insert(d);
    for (int f : res.functions) functions.insert(tools.function_name(f));
    tj["ok"] = res.ok;
    if (!res.ok)
      tj["error"] = res.error;
    else
      tj["output_chars"] = res.output.size();
    run.trace.push_back(tj);
    convo.push_back({said, Kind::exploration});
    convo.push_back({{"user", res.ok ? res.output : "Error: " + res.error}, Kind::exploration});
  }

  // One turn; false when the run ends (finish, or a loop).
  bool turn(const json& schema) {
    compact_if_needed();
    auto a = ask_json(llm, {"agent_turn", messages(), schema, p.agent_tokens});
    ++run.tool_calls;
    const std::optional<json>& j = a.value;
    if (!j || !j->contains("tool") || !(*j)["tool"].is_string()) {
      invalid(a.text, a.missing("tool named"),
              "That was not a tool call. Answer with JSON: {\"thought\": ..., \"tool\": ...}.");
      return true;
    }
    ToolCall call;
    try {
      call = tool_call_from_json(*j);
    } catch (const Error& err) {
      invalid(a.text, err.what(), std::string("That tool call could not be used: ") + err.what());
      return true;
    }
    json tj = {{"turn", run.tool_calls}, {"tool", call.tool}, {"thought", json_string(*j, "thought")}};
    for (const char* k : {"path", "pattern", "name"})
      if (j->contains(k)) tj[k] = (*j)[k];
    if (call.tool == "finish") {
      run.stop_reason = "finish";
      run.trace.push_back(tj);
      return false;
    }
    std::string sig = call.tool + "|" + call.path + "|" + call.pattern + "|" + call.name + "|" +
                      std::to_string(call.start) + "|" + std::to_string(call.end);
    if (++repeats[sig] >= 3) {
      // An agent repeating itself learns nothing new: stop instead of spending the budget.
      run.stop_reason = "loop";
      tj["stopped"] = "the same call a third time";
      run.trace.push_back(tj);
      return false;
    }
    ChatMessage said{"assistant", j->dump(-1, ' ', false, json::error_handler_t::replace)};
    if (call.tool == "propose_func")
      propose(call, said, tj);
    else
      explore(call, said, tj);
    return true;
  }
};

}  // namespace

AgentRun SeedAgent::run(const std::string& target_step, const std::string& target_file, const std::string& structure,
                        const std::vector<std::string>& seeds, const std::function<AgentVerdict(int)>& judge) {
  static const PromptTemplate sys = load_prompt("agent_system");
  static const PromptTemplate task = load_prompt("agent_task");
  Session s(llm_, tools_, p_, judge);
  std::string seed_text;
  for (const auto& sd : seeds) seed_text += "- " + sd + "\n";
  if (seed_text.empty()) seed_text = "(none yet)";
  for (auto& m : render_prompt(sys, {{"budget", std::to_string(p_.agent_budget)}}))
    s.convo.push_back({m, Kind::system});
  for (auto& m : render_prompt(task, {{"target_step", target_step},
                                      {"target_file", target_file},
                                      {"structure", structure},
                                      {"seeds", seed_text}}))
    s.convo.push_back({m, Kind::task});
  const json schema = turn_schema();
  while (s.run.tool_calls < p_.agent_budget) {
    throw_if_interrupted("LLM answers so far are cached; re-run to resume");
    if (!s.turn(schema)) return s.run;
  }
  s.run.stop_reason = "budget";
  return s.run;
}

}  // namespace repoctx
