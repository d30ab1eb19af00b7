#include "retrieve/aligncoder/query_enhancement.h"

#include "retrieve/aligncoder/prompt.h"

namespace repoctx {

std::string Enhancement::text() const {
  std::string t = window;
  for (const auto& c : candidates) t += "\n" + c;
  return t;
}

GenerateRequest sampling_request(const std::string& prompt, const CompletionParams& p) {
  GenerateRequest r;
  r.prompt = prompt;  // raw text: a code model continues the file
  r.n = p.samples;
  r.temperature = p.temperature;
  r.top_p = p.top_p;
  r.max_tokens = p.sample_tokens;
  r.seed = p.seed;
  r.purpose = "aligncoder_sample";
  return r;
}

Enhancement enhance_query(const Engine& e, const CursorContext& ctx, LlmBackend& sampler, const CompletionParams& p) {
  Enhancement out;
  out.window = query_window(ctx.unfinished, p.query_lines);
  out.coarse = coarse_retrieve(e, ctx, out.window, p.dependency_snippets != 0, p.coarse_k);
  std::vector<Hit> hits;
  for (const auto& it : out.coarse) hits.push_back(item_hit(e, ctx, it));
  CompletionPrompt prompt = completion_prompt(e, ctx, hits, p);
  if (p.samples <= 0) return out;
  GenerateResult res = sampler.generate(sampling_request(prompt.text, p));
  out.cached = res.cached;
  for (const auto& c : res.choices) out.candidates.push_back(c.text);
  return out;
}

}  // namespace repoctx
