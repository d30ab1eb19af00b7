#include "llm/models.h"

#include <string>

#include "util/error.h"

namespace repoctx {

ModelNeeds& ModelNeeds::operator|=(const ModelNeeds& o) {
  llm |= o.llm;
  embedder |= o.embedder;
  embedder_optional |= o.embedder_optional;
  hidden |= o.hidden;
  snippet_embedder |= o.snippet_embedder;
  return *this;
}

std::string ModelNeeds::describe() const {
  std::string s = llm ? "llm" : "";
  auto add = [&](const char* what) { s += std::string(s.empty() ? "" : "+") + what; };
  if (hidden) add("hidden states");
  if (embedder) add("embedder");
  if (embedder_optional) add("embedder (optional)");
  if (snippet_embedder) add("snippet embedder");
  return s;
}

LlmBackend& Models::need_llm(std::string_view who) const {
  if (!llm)
    throw Error(ExitCode::usage, std::string(who) +
                                     " needs an LLM: pass --model path.gguf (in process), --endpoint URL --model NAME "
                                     "(OpenAI-compatible server), or a config file (--config; see docs/LLM.md)");
  return *llm;
}

LlmBackend& Models::need_embedder(std::string_view who) const {
  if (!embedder)
    throw Error(ExitCode::usage, std::string(who) +
                                     " needs an embedding model: pass --embed-model path.gguf (or --embed-endpoint "
                                     "URL --embed-model NAME), or an \"embedding\" entry in the config file");
  return *embedder;
}

LlmBackend& Models::need_snippet_embedder(std::string_view who) const {
  if (snippet_embedder) return *snippet_embedder;
  if (!embedder)
    throw Error(ExitCode::usage, std::string(who) +
                                     " needs an embedding model: pass --snippet-embed-model or --embed-model path.gguf "
                                     "(or the matching --*-endpoint URL), or a \"snippet_embedding\" or \"embedding\" "
                                     "entry in the config file");
  return *embedder;
}

LlmBackend& Models::need_hidden(std::string_view who) const {
  if (hidden) return *hidden;
  if (llm && llm->capabilities().hidden_states) return *llm;
  throw Error(ExitCode::usage,
              std::string(who) +
                  " needs a white-box model for hidden states: a GGUF file in process (--model path.gguf, or "
                  "--hidden-model path.gguf beside an OpenAI-compatible --endpoint)");
}

}  // namespace repoctx
