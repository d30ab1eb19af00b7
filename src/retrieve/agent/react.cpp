#include "retrieve/agent/react.h"

#include <algorithm>

#include "llm/prompts.h"
#include "llm/structured.h"
#include "util/cancel.h"
#include "util/error.h"
#include "util/text.h"
#include "util/token_count.h"

namespace repoctx {

using nlohmann::json;

int conversation_tokens(const std::vector<ChatMessage>& ms) {
  int n = 0;
  for (const auto& m : ms) n += estimate_tokens(m.content) + 4;
  return n;
}

ReactAgent::ReactAgent(LlmBackend& llm, std::vector<AgentTool*> tools, StopPolicy& policy, ReactParams p,
                       std::string purpose)
    : llm_(llm), tools_(std::move(tools)), policy_(policy), p_(p), purpose_(std::move(purpose)) {}

std::string ReactAgent::tool_list() const {
  std::string out;
  for (const AgentTool* t : tools_) {
    const ToolSpec& s = t->spec();
    std::string args;
    for (auto it = s.parameters["properties"].begin(); it != s.parameters["properties"].end(); ++it)
      args += (args.empty() ? "" : ", ") + it.key() + ": " + it.value().value("type", "any");
    out += "- " + s.name + "(" + args + "): " + s.description + "\n";
  }
  return out;
}

namespace {

// A copy of a tool's schema with every string bounded, so constrained decoding always ends.
json bounded(json schema, int max_chars) {
  if (schema.is_object()) {
    if (schema.value("type", "") == "string" && !schema.contains("maxLength") && !schema.contains("enum"))
      schema["maxLength"] = max_chars;
    if (schema.value("type", "") == "object" && !schema.contains("additionalProperties"))
      schema["additionalProperties"] = false;
    for (auto& [k, v] : schema.items()) v = bounded(v, max_chars);
  } else if (schema.is_array()) {
    for (auto& v : schema) v = bounded(v, max_chars);
  }
  return schema;
}

}  // namespace

json ReactAgent::turn_schema() const {
  json any = json::array();
  json thought = {{"type", "string"}, {"maxLength", p_.thought_chars}};
  for (const AgentTool* t : tools_) {
    const ToolSpec& s = t->spec();
    any.push_back({{"type", "object"},
                   {"properties",
                    {{"thought", thought},
                     {"action", {{"type", "string"}, {"enum", {s.name}}}},
                     {"arguments", bounded(s.parameters, p_.string_arg_chars)}}},
                   {"required", {"thought", "action", "arguments"}},
                   {"additionalProperties", false}});
  }
  any.push_back({{"type", "object"},
                 {"properties",
                  {{"thought", thought},
                   {"action", {{"type", "string"}, {"enum", {"answer"}}}},
                   {"answer", {{"type", "string"}, {"maxLength", p_.answer_chars}}}}},
                 {"required", {"thought", "action", "answer"}},
                 {"additionalProperties", false}});
  return {{"type", "object"},
          {"properties", {{"turn", {{"anyOf", any}}}}},
          {"required", {"turn"}},
          {"additionalProperties", false}};
}

std::string ReactAgent::planned_tool_calls() const {
  bool native = p_.tool_calls == "native" || (p_.tool_calls == "auto" && llm_.capabilities().tool_calls);
  return native ? "native" : "schema";
}

json ReactAgent::native_tools() const {
  json out = json::array();
  for (const AgentTool* t : tools_) {
    const ToolSpec& s = t->spec();
    out.push_back({{"type", "function"},
                   {"function",
                    {{"name", s.name},
                     {"description", s.description},
                     {"parameters", bounded(s.parameters, p_.string_arg_chars)},
                     {"strict", true}}}});
  }
  return out;
}

std::string ReactAgent::check_arguments(const ToolSpec& spec, const json& args) {
  if (!args.is_object()) return "the arguments must be a JSON object";
  const json& props = spec.parameters.value("properties", json::object());
  for (const auto& r : spec.parameters.value("required", json::array())) {
    std::string k = r.get<std::string>();
    if (!args.contains(k) || args[k].is_null()) return "missing argument '" + k + "'";
  }
  for (auto it = args.begin(); it != args.end(); ++it) {
    if (!props.contains(it.key())) return "unknown argument '" + it.key() + "' (arguments: " + props.dump() + ")";
    std::string type = props[it.key()].value("type", "");
    const json& v = it.value();
    bool ok = type.empty() || (type == "string" && v.is_string()) || (type == "integer" && v.is_number_integer()) ||
              (type == "number" && v.is_number()) || (type == "boolean" && v.is_boolean());
    if (!ok) return "argument '" + it.key() + "' must be of type " + type + ", got " + v.dump();
  }
  return "";
}

AgentTool* ReactAgent::find(const std::string& name) const {
  for (AgentTool* t : tools_)
    if (t->spec().name == name) return t;
  return nullptr;
}

void ReactAgent::push(ChatMessage m, Kind k) {
  convo_.push_back(std::move(m));
  kinds_.push_back(k);
}

void ReactAgent::compact_if_needed() {
  int tokens = conversation_tokens(convo_);
  if (tokens <= p_.conversation_tokens) return;
  static const PromptTemplate compaction = load_prompt("react_compaction");
  std::string history;
  for (size_t i = 0; i < convo_.size(); ++i)
    if (kinds_[i] != Kind::fixed) history += convo_[i].role + ": " + convo_[i].content + "\n";
  GenerateRequest r;
  r.purpose = purpose_ + "_compaction";
  r.messages = render_prompt(compaction, {{"history", history}});
  r.max_tokens = p_.compaction_tokens;
  std::string summary = sanitize_utf8(first_text(llm_.generate(r)));
  std::vector<ChatMessage> kept;
  std::vector<Kind> kept_kinds;
  bool placed = false;
  for (size_t i = 0; i < convo_.size(); ++i) {
    if (kinds_[i] == Kind::fixed) {
      kept.push_back(convo_[i]);
      kept_kinds.push_back(Kind::fixed);
    } else if (!placed) {
      kept.push_back({"user", "Summary of the steps so far:\n" + summary});
      kept_kinds.push_back(Kind::summary);
      placed = true;
    }
  }
  convo_ = std::move(kept);
  kinds_ = std::move(kept_kinds);
  ++run_.compactions;
  run_.trace.push_back(
      {{"compaction", run_.compactions}, {"tokens_before", tokens}, {"tokens_after", conversation_tokens(convo_)}});
}

void ReactAgent::bad_turn(const std::string& said, const std::string& why, json& tj) {
  ++run_.invalid_turns;
  ++invalid_streak_;
  tj["invalid"] = why;
  push({"assistant", sanitize_utf8(said.substr(0, 500))}, Kind::exchange);
  push({"user", "Error: " + why +
                    ". Answer with one JSON object: {\"turn\": {\"thought\", \"action\", \"arguments\"}} to "
                    "call a tool, or {\"turn\": {\"thought\", \"action\": \"answer\", \"answer\"}} when done."},
       Kind::exchange);
}

std::string ReactAgent::execute(const std::string& name, const json& args, json& tj) {
  AgentTool* tool = find(name);
  ToolOutput out;
  if (!tool) {
    std::string names;
    for (const AgentTool* t : tools_) names += (names.empty() ? "" : ", ") + t->spec().name;
    out = {false, "unknown tool '" + name + "'; the tools are: " + names};
  } else if (std::string bad = check_arguments(tool->spec(), args); !bad.empty()) {
    out = {false, name + ": " + bad};
  } else {
    out = tool->call(args);
    ++run_.tool_calls;
  }
  std::string text = out.text;
  if (text.size() > static_cast<size_t>(p_.tool_output_chars)) {
    size_t cut = static_cast<size_t>(p_.tool_output_chars);
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
    text = text.substr(0, cut) + "\n[output cut: " + std::to_string(out.text.size() - cut) + " more characters]";
    tj["cut"] = true;
  }
  tj["ok"] = out.ok;
  if (!out.ok) tj["error"] = out.text.substr(0, 300);
  tj["output_chars"] = out.text.size();
  invalid_streak_ = out.ok || tool ? 0 : invalid_streak_ + 1;
  return out.ok ? text : "Error: " + text;
}

void ReactAgent::handle_tool(const std::string& name, const json& args, const std::string& said, json& tj) {
  push({"assistant", said}, Kind::exchange);
  push({"user", execute(name, args, tj)}, Kind::exchange);
}

bool ReactAgent::repeated(const std::string& name, const json& args, json& tj) {
  int seen = ++repeats_[name + "|" + args.dump()];
  if (seen < p_.loop_repeats) return false;
  run_.stop_reason = "loop";
  tj["stop"] = "loop";
  tj["repeats"] = seen;
  return true;
}

bool ReactAgent::handle_answer(const std::string& answer, const std::string& said, json& tj) {
  if (!said.empty()) push({"assistant", said}, Kind::fixed);
  since_answer_ = 0;
  StopDecision d = policy_.on_answer(*this, answer);
  tj["policy"] = d.trace.is_null() ? json::object() : d.trace;
  if (d.stop) {
    run_.stop_reason = d.reason;
    run_.final_answer = answer;
    tj["stop"] = d.reason;
    return false;
  }
  push({"user", d.message}, Kind::fixed);
  return true;
}

// The schema path: one constrained call whose "turn" is a tool call or the answer.
bool ReactAgent::schema_turn(json& tj) {
  StructuredCall call{purpose_, convo_, turn_schema(), p_.turn_tokens};
  StructuredAnswer a = ask_json(llm_, call);
  const json turn = a.ok() ? a.value->value("turn", json()) : json();
  auto field = [&](const char* k) {
    return turn.is_object() && turn.contains(k) && turn[k].is_string() ? turn[k].get<std::string>() : "";
  };
  const std::string action = field("action");
  const std::string said = a.ok() ? a.value->dump(-1, ' ', false, json::error_handler_t::replace) : a.text;
  if (!a.ok() || action.empty()) {
    bad_turn(a.text, a.ok() ? "the answer names no action" : a.error, tj);
    return true;
  }
  tj["action"] = action;
  tj["thought"] = field("thought");
  if (action == "answer") {
    invalid_streak_ = 0;
    return handle_answer(field("answer"), said, tj);
  }
  json args = turn.value("arguments", json::object());
  tj["arguments"] = args;
  if (repeated(action, args, tj)) return false;
  handle_tool(action, args, said, tj);
  if (std::string why = policy_.after_tool(*this); !why.empty()) {
    run_.stop_reason = why;
    tj["stop"] = why;
    return false;
  }
  return true;
}

// The native path: the API's tool calls, each answered by a tool message with its call id.
bool ReactAgent::native_turn(json& tj) {
  GenerateRequest r;
  r.purpose = purpose_;
  r.messages = convo_;
  r.max_tokens = p_.turn_tokens;
  r.tools = native_tools();
  r.tool_choice = p_.tool_choice;
  GenerateResult res = llm_.generate(r);
  if (res.choices.empty()) throw Error(ExitCode::llm, "the model returned no choice for a ReAct turn");
  native_answered_ = true;
  Generation g = std::move(res.choices[0]);
  g.text = sanitize_utf8(g.text);
  if (g.tool_calls.empty()) {
    invalid_streak_ = 0;
    tj["action"] = "answer";
    return handle_answer(g.text, g.text, tj);
  }
  for (size_t i = 0; i < g.tool_calls.size(); ++i)
    if (g.tool_calls[i].id.empty()) g.tool_calls[i].id = "call_" + std::to_string(run_.turns) + "_" + std::to_string(i);
  push({"assistant", g.text, g.tool_calls}, Kind::exchange);
  tj["thought"] = g.text;
  json calls = json::array();
  bool go_on = true;
  for (const LlmToolCall& call : g.tool_calls) {
    json cj = {{"action", call.name}};
    json args = json::parse(call.arguments.empty() ? "{}" : call.arguments, nullptr, false);
    std::string text;
    if (args.is_discarded()) {
      ++run_.invalid_turns;
      ++invalid_streak_;
      cj["invalid"] = "the arguments are not JSON";
      text = "Error: the arguments of " + call.name + " are not a JSON object: " + call.arguments.substr(0, 200);
    } else {
      cj["arguments"] = args;
      if (go_on && repeated(call.name, args, cj)) go_on = false;
      text = go_on ? execute(call.name, args, cj) : "Not run: the run stopped.";
    }
    push({"tool", text, {}, call.id}, Kind::exchange);
    calls.push_back(std::move(cj));
  }
  tj["action"] = calls[0]["action"];
  if (calls[0].contains("arguments")) tj["arguments"] = calls[0]["arguments"];
  tj["calls"] = calls;
  for (const auto& cj : calls)
    if (cj.contains("stop")) tj["stop"] = cj["stop"];
  if (!go_on) return false;
  if (std::string why = policy_.after_tool(*this); !why.empty()) {
    run_.stop_reason = why;
    tj["stop"] = why;
    return false;
  }
  return true;
}

// One model turn; false when the run ends.
bool ReactAgent::turn() {
  throw_if_interrupted("LLM answers so far are cached; re-run to resume");
  compact_if_needed();
  ++run_.turns;
  ++since_answer_;
  json tj = {{"turn", run_.turns}};
  if (trace_state) tj["state"] = trace_state();
  bool go_on = true;
  if (native_) {
    try {
      go_on = native_turn(tj);
    } catch (const Error& e) {
      // A server without tool calling refuses the first request that offers tools: the run goes on with
      // schema-constrained turns (an explicit `native` choice fails instead).
      if (e.code() == ExitCode::interrupted || native_answered_ || p_.tool_calls != "auto") throw;
      native_ = false;
      run_.tool_call_mode = "schema";
      tj["native_tool_calls_refused"] = std::string(e.what()).substr(0, 300);
      go_on = schema_turn(tj);
    }
  } else {
    go_on = schema_turn(tj);
  }
  if (trace_state) tj["state_after"] = trace_state();
  run_.trace.push_back(tj);
  if (go_on && invalid_streak_ >= p_.max_invalid) {
    run_.stop_reason = "invalid";
    run_.trace.push_back({{"stop", "invalid"}, {"invalid_in_a_row", invalid_streak_}});
    return false;
  }
  if (go_on && since_answer_ >= p_.run_turns) {
    // The executor's iteration limit: the run ends as if the model had answered; the policy decides.
    json pj = {{"run_turns_reached", p_.run_turns}};
    go_on = handle_answer("", "", pj);
    run_.trace.push_back(pj);
  }
  return go_on;
}

ReactRun ReactAgent::run(const std::vector<ChatMessage>& system_and_task) {
  run_ = ReactRun{};
  convo_.clear();
  kinds_.clear();
  repeats_.clear();
  since_answer_ = invalid_streak_ = 0;
  if (p_.tool_calls != "auto" && p_.tool_calls != "native" && p_.tool_calls != "schema")
    throw Error(ExitCode::usage, "tool_calls must be auto, native or schema, got '" + p_.tool_calls + "'");
  native_ = planned_tool_calls() == "native";
  native_answered_ = false;
  run_.tool_call_mode = native_ ? "native" : "schema";
  for (const auto& m : system_and_task) push(m, Kind::fixed);
  while (run_.turns < p_.max_turns)
    if (!turn()) return run_;
  run_.stop_reason = "budget";
  run_.trace.push_back({{"stop", "budget"}, {"max_turns", p_.max_turns}});
  return run_;
}

}  // namespace repoctx
