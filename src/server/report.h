// `repoctx report`: one self-contained HTML page (inline CSS and JavaScript, nothing fetched: a Content
// Security Policy forbids it) for a retrieval trace (`retrieve --strategy procedural --trace`) or a
// generation trace (`generate --trace`).
//
// Retrieval: the target and its steps; the context functions' steps with their validation verdicts;
// function selection and the subspace; per plan-confirmation round and target step the initial seeds with
// their similarity scores and verdicts, the agent's tool calls and proposals, the expansion and its
// verification, the confirmation verdicts; the final context with scores; LLM usage per stage; the
// parameters. Generation adds the plan, the prompt's contexts, each generation/refinement round with the
// static-check findings, and the procedural retrieval it ran (same sections, ids prefixed "procedural-").
// Every section is a <section> with a stable id (target, context-steps, seeds, agent, expansion,
// confirmation, final-context, llm-usage, params; plan, rounds, findings for generation). Tables sort by a
// click on a column header; texts longer than a line are folded (<details>). Trace fields the page does
// not know are shown under "other" rather than dropped.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace repoctx {

enum class TraceKind { retrieval, generation };

// Throws Error(bad_input) when `trace` is neither kind (naming the fields it expected).
TraceKind trace_kind(const nlohmann::json& trace);
std::string render_report(const nlohmann::json& trace, const std::string& source_name);

}  // namespace repoctx
