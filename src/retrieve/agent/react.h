// One generic ReAct agent loop (Yao et al.): the model thinks, picks a tool with JSON arguments, reads the
// tool's output, and goes on until a stop policy ends the run. The context-retrieval study's agents
// (retrieve/study/) are this loop with different tools (BM25 search or AutoCodeRover's search APIs, plus
// add_to_context) and stop policies (CL, TC, SR).
//
//  - Tools implement AgentTool: a name, a description and a JSON schema of their arguments. A turn is one
//    of two kinds of call (ReactParams::tool_calls):
//    native: the API's own tool calling (OpenAI's tools/tool_choice, tool messages answering each call id),
//      as the study's agent called its tools; an answer is a message without tool calls. Taken by default
//      when the backend has it (an OpenAI-compatible server); a server that refuses tools on the first turn
//      sends the run to the schema path, and the trace says why.
//    schema: one JSON-schema-constrained call (llm/structured.h) whose schema holds the union of the tools'
//      argument schemas under one "turn" field (no root anyOf, which OpenAI's strict mode refuses), so any
//      model, even a random one, answers with a parseable tool call; "answer" is the turn without one.
//  - Stop policies (StopPolicy) decide what an answer without a tool call means (stop, or continue with a
//    message) and may stop the run after any tool call.
//  - Bad turns never crash the run: unparseable answers, unknown tools, missing or mistyped arguments and
//    tool failures go back to the model as errors and are recorded in the trace; after `max_invalid` bad
//    turns in a row the run stops ("invalid"). The same call repeated `loop_repeats` times stops it
//    ("loop"). Tool output is cut to `tool_output_chars`.
//  - Compaction: past `conversation_tokens` (estimated) the tool exchanges so far are replaced by an LLM
//    summary (prompts/react_compaction.txt); system prompt, task and policy messages stay whole.
//  - Ctrl-C: checked before every model call; LLM answers so far are in the cache.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llm/backend.h"

namespace repoctx {

struct ToolSpec {
  std::string name;
  std::string description;    // one line, shown to the model
  nlohmann::json parameters;  // JSON schema of the arguments object (type object, properties, required)
};

struct ToolOutput {
  bool ok = false;
  std::string text;  // what the model reads (an error message when !ok)
};

class AgentTool {
 public:
  virtual ~AgentTool() = default;
  virtual const ToolSpec& spec() const = 0;
  // `args` has passed the spec's schema check (required fields present, declared types right).
  virtual ToolOutput call(const nlohmann::json& args) = 0;
};

struct ReactParams {
  int max_turns = 60;       // model turns in all (a hard budget)
  int run_turns = 15;       // turns without an answer before the run is treated as answered
                            // (LangChain AgentExecutor's max_iterations, which the study used)
  int turn_tokens = 512;    // generation budget of one turn
  int thought_chars = 400;  // schema bounds of the turn's fields
  int answer_chars = 400;
  int string_arg_chars = 200;
  int tool_output_chars = 4000;     // a tool's output is cut to this
  int conversation_tokens = 12000;  // compaction threshold (estimated tokens)
  int compaction_tokens = 512;
  int loop_repeats = 3;              // the same call this many times stops the run
  int max_invalid = 3;               // bad turns in a row that stop the run
  std::string tool_calls = "auto";   // auto (native when the backend has it) | native | schema
  std::string tool_choice = "auto";  // native: the API's tool_choice (auto | required)
};

class ReactAgent;

// What a policy says about an answer without a tool call.
struct StopDecision {
  bool stop = true;
  std::string reason;    // the stop reason recorded in the trace ("" when continuing)
  std::string message;   // when continuing: the user message the model reads next
  nlohmann::json trace;  // what the policy did (e.g. the self-reflection call), for the trace
};

class StopPolicy {
 public:
  virtual ~StopPolicy() = default;
  virtual std::string name() const = 0;
  // After every tool call: a non-empty reason stops the run now.
  virtual std::string after_tool(const ReactAgent&) { return ""; }
  // On an answer without a tool call (or a run that used up run_turns: `answer` is then empty).
  virtual StopDecision on_answer(ReactAgent& agent, const std::string& answer) = 0;
};

struct ReactRun {
  std::string stop_reason;     // a policy's reason | budget | loop | invalid
  std::string tool_call_mode;  // how the turns called tools: native | schema
  int turns = 0, tool_calls = 0, invalid_turns = 0, compactions = 0;
  std::string final_answer;
  nlohmann::json trace = nlohmann::json::array();  // one entry per turn and per policy decision
};

class ReactAgent {
 public:
  // `purpose` tags the LLM calls (accounting, llm/metered.h). Tools and policy must outlive the agent.
  ReactAgent(LlmBackend& llm, std::vector<AgentTool*> tools, StopPolicy& policy, ReactParams p,
             std::string purpose = "react_turn");
  // `system` and `task` are rendered prompts; the tool list is part of the system message the caller
  // renders (tool_list() helps).
  ReactRun run(const std::vector<ChatMessage>& system_and_task);

  // "- name {args}: description" per tool, for system prompts.
  std::string tool_list() const;
  // The schema path's turn: {"turn": one of the tools' calls or the answer}.
  nlohmann::json turn_schema() const;
  // The native path's tools, in the API's `tools` shape (strict: every object closed, every field required).
  nlohmann::json native_tools() const;
  // The path a run starts on: "native" or "schema" (for the system prompt's description of a turn).
  std::string planned_tool_calls() const;
  LlmBackend& llm() const { return llm_; }
  const std::vector<ChatMessage>& conversation() const { return convo_; }
  const ReactParams& params() const { return p_; }
  const ReactRun& current() const { return run_; }
  // Context the caller measures (e.g. tokens gathered), recorded with every turn of the trace.
  std::function<nlohmann::json()> trace_state;

  // Checks `args` against a tool's parameters schema (required fields, declared types, string bounds are
  // not enforced): "" when usable, else what is wrong.
  static std::string check_arguments(const ToolSpec& spec, const nlohmann::json& args);

 private:
  enum class Kind { fixed, exchange, summary };
  bool turn();
  bool schema_turn(nlohmann::json& tj);
  bool native_turn(nlohmann::json& tj);
  // Runs one tool call (unknown tools, bad arguments and failures become error text); records it in `tj`.
  // Returns what the model reads next.
  std::string execute(const std::string& name, const nlohmann::json& args, nlohmann::json& tj);
  // The same call repeated loop_repeats times: records the stop in `tj` and returns true.
  bool repeated(const std::string& name, const nlohmann::json& args, nlohmann::json& tj);
  void handle_tool(const std::string& name, const nlohmann::json& args, const std::string& said, nlohmann::json& tj);
  bool handle_answer(const std::string& answer, const std::string& said, nlohmann::json& tj);
  void bad_turn(const std::string& said, const std::string& why, nlohmann::json& tj);
  void push(ChatMessage m, Kind k);
  void compact_if_needed();
  AgentTool* find(const std::string& name) const;

  LlmBackend& llm_;
  std::vector<AgentTool*> tools_;
  StopPolicy& policy_;
  ReactParams p_;
  std::string purpose_;
  std::vector<ChatMessage> convo_;
  std::vector<Kind> kinds_;
  ReactRun run_;
  int since_answer_ = 0, invalid_streak_ = 0;
  bool native_ = false, native_answered_ = false;  // native path; a native turn has succeeded this run
  std::map<std::string, int> repeats_;
};

// Estimated tokens of a conversation (a budget check; util/token_count.h).
int conversation_tokens(const std::vector<ChatMessage>& ms);

}  // namespace repoctx
