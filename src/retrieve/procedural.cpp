// `procedural`: ProjAgent's procedural retrieval (retrieve/procedural/pipeline.h) behind the Retriever
// interface. Each hit is a context function of one target step: its score is the projection similarity,
// its label says which step, whether that step was confirmed, and how the context was found.
#include <fstream>

#include "eval/rq2.h"
#include "retrieve/procedural/pipeline.h"
#include "retrieve/retriever.h"
#include "util/error.h"

namespace repoctx {
namespace {

class ProceduralRetriever : public Retriever {
 public:
  ProceduralRetriever(const Engine& e, const RetrieverOptions& o) : e_(e), o_(o) {}
  std::string name() const override { return "procedural"; }

  std::vector<Hit> retrieve(const RetrievalQuery& q) override {
    if (!q.target)
      throw Error(ExitCode::usage, "the procedural strategy needs --target (it decomposes the function to write)");
    if (!e_.llm())
      throw Error(ExitCode::usage,
                  "the procedural strategy needs an LLM with hidden states: --model path.gguf (llama backend), "
                  "or a config file; an embedding model too (--embed-model, default: the same model)");
    LlmBackend& emb = e_.embedder() ? *e_.embedder() : *e_.llm();
    ProceduralPipeline pipe(e_, *e_.llm(), emb, *e_.hidden_states(), o_.procedural);
    auto out = pipe.run(*q.target);
    if (!o_.trace_path.empty()) {
      std::ofstream f(o_.trace_path);
      if (!f) throw Error(ExitCode::bad_input, "cannot write the trace to '" + o_.trace_path + "'");
      f << out.trace.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    }
    if (!o_.rq2_pairs_path.empty()) {
      std::ofstream f(o_.rq2_pairs_path, std::ios::app);
      if (!f) throw Error(ExitCode::bad_input, "cannot append RQ2 pairs to '" + o_.rq2_pairs_path + "'");
      for (const auto& p : pipe.rq2_pairs()) f << rq2_pair_json(p) << "\n";
    }
    std::vector<Hit> hits;
    for (const auto& st : out.steps) {
      for (const auto& c : st.contexts) {
        Hit h = entity_hit(e_, c.function, c.similarity);
        h.label =
            "step " + std::to_string(st.id) + (st.confirmed ? " confirmed" : " unconfirmed") + " (" + c.source + ")";
        h.text = "# step " + std::to_string(st.id) + ": " + st.description + "\n# context: " + c.description + "\n" +
                 c.snippet;
        h.features["step"] = st.id;
        h.features["confirmed"] = st.confirmed ? 1 : 0;
        hits.push_back(std::move(h));
      }
    }
    if (q.top_k > 0 && hits.size() > static_cast<size_t>(q.top_k) * out.steps.size())
      hits.resize(static_cast<size_t>(q.top_k) * out.steps.size());
    last_ = std::move(out);
    return hits;
  }

  const ProceduralOutcome& last() const { return last_; }

 private:
  const Engine& e_;
  RetrieverOptions o_;
  ProceduralOutcome last_;
};

}  // namespace

std::unique_ptr<Retriever> make_procedural(const Engine& e, const RetrieverOptions& o) {
  return std::make_unique<ProceduralRetriever>(e, o);
}

}  // namespace repoctx
