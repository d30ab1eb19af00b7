// The study agents' tools on the index (retrieve/agent/react.h's AgentTool): the BM25 code search of the
// study's code (code_search), add_to_context (the only way an agent's context grows, as in the study), and
// AutoCodeRover's search APIs (acr_search.h) as tools: the study's set or all of them.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "retrieve/agent/react.h"
#include "retrieve/study/acr_search.h"
#include "retrieve/study/chunks.h"
#include "retrieve/study/context.h"
#include "retrieve/study/params.h"

namespace repoctx {

// A path as an agent wrote it, normalised ("./a/b.py" -> "a/b.py"), and the corpus document it names; on
// failure *error says why (absolute paths and ".." are outside the repository; unknown paths name close
// ones).
std::optional<int> agent_document(const StudyCorpus& corpus, const std::string& path, std::string* error);

class Bm25SearchTool : public AgentTool {
 public:
  Bm25SearchTool(const Engine& e, const StudyParams& p);
  const ToolSpec& spec() const override { return spec_; }
  ToolOutput call(const nlohmann::json& args) override;

 private:
  const StudyChunkIndex& index_;
  StudyParams p_;
  ToolSpec spec_;
};

class AddToContextTool : public AgentTool {
 public:
  explicit AddToContextTool(GatheredContext& ctx);
  const ToolSpec& spec() const override { return spec_; }
  ToolOutput call(const nlohmann::json& args) override;

 private:
  GatheredContext& ctx_;
  ToolSpec spec_;
};

class AcrTool : public AgentTool {
 public:
  AcrTool(const AcrSearch& s, const std::string& api, const std::vector<std::string>& args);
  const ToolSpec& spec() const override { return spec_; }
  ToolOutput call(const nlohmann::json& args) override;

 private:
  const AcrSearch& s_;
  std::vector<std::string> arg_names_;
  ToolSpec spec_;
};

// The ReAct agent's ACR tools: `study`, the study's set (AcrSearch::study_apis), or `full`, every API of
// AutoCodeRover's (AcrSearch::apis).
std::vector<std::unique_ptr<AgentTool>> acr_tools(const AcrSearch& s, const std::string& set);

}  // namespace repoctx
