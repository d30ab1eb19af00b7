// ProjAgent 4.2, Agentic Seed Finding: an LLM explores the repository with tools (ls, grep, read_func,
// read_lines, search_func, propose_func; agent_tools.h) and proposes functions likely to hold a step
// procedurally similar to the target step. Each proposal is judged by the caller (the four-stage filter);
// a rejection goes back to the agent with reasons and the functions rejected so far.
//
// Every turn is a JSON object constrained by a schema (thought, tool, arguments), so any model, even a
// random one, produces a parseable call; bad arguments come back to the agent as tool errors. The loop ends
// on `finish`, on the tool-call budget, or when the agent repeats the same call three times.
//
// Context compaction: the conversation is the system prompt, the first user message, exploration messages
// (tool calls and their results) and proposal messages. When it grows past the token budget, the
// exploration messages are replaced by an LLM summary (prompts/agent_compaction.txt) that keeps every
// explored file, directory and function; system prompt, first message and proposals stay whole. The
// budget follows the model's context window (compaction_trigger) unless a parameter fixes it.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llm/backend.h"
#include "retrieve/procedural/agent_tools.h"
#include "retrieve/procedural/types.h"

namespace repoctx {

struct AgentVerdict {
  bool accepted = false;
  std::string feedback;  // reasons, when rejected
};

struct AgentRun {
  int tool_calls = 0;
  int compactions = 0;
  int compaction_trigger_tokens = 0;  // the threshold this run used (SeedAgent::compaction_trigger)
  int invalid_turns = 0;              // answers that were not a usable tool call
  std::string stop_reason;            // finish | budget | loop | error
  std::vector<int> accepted;          // functions whose proposal was accepted
  nlohmann::json trace = nlohmann::json::array();
};

class SeedAgent {
 public:
  SeedAgent(LlmBackend& llm, RepoTools& tools, const ProceduralParams& p);
  // `judge(function)` runs the filter on a proposed function.
  AgentRun run(const std::string& target_step, const std::string& target_file, const std::string& structure,
               const std::vector<std::string>& seeds, const std::function<AgentVerdict(int)>& judge);
  static nlohmann::json turn_schema();
  static int estimate_tokens(const std::vector<ChatMessage>& ms);
  // The conversation is compacted past this many estimated tokens: p.agent_context_tokens when set, else
  // 3/4 of the model's context length less an answer (p.agent_tokens), at least 1,024; when the backend
  // reports no context length, kFallbackAgentContextTokens.
  static int compaction_trigger(const ProceduralParams& p, LlmBackend& llm);
  static constexpr int kFallbackAgentContextTokens = 6000;

 private:
  LlmBackend& llm_;
  RepoTools& tools_;
  ProceduralParams p_;
};

}  // namespace repoctx
