// `procedural`: ProjAgent's procedural retrieval (retrieve/procedural/pipeline.h) behind the Retriever
// interface. Each hit is a context function of one target step: its score is the projection similarity,
// its label says which step, whether that step was confirmed, and how the context was found. The result's
// plan is the target's decomposition (every step, also those without context), which generation prompts
// with; with the parameter `retrieve=false` only the target is decomposed (ProjAgent's no-procedural
// ablation).
#include <fstream>

#include "retrieve/procedural/pipeline.h"
#include "retrieve/retriever.h"
#include "util/error.h"

namespace repoctx {
namespace {

class ProceduralRetriever : public Retriever {
 public:
  ProceduralRetriever(const Engine& e, const Models& m, const RetrieverOptions& o) : e_(e), m_(m), o_(o) {}
  std::string name() const override { return "procedural"; }

  std::vector<Hit> retrieve(const RetrievalQuery& q) override { return run(q).hits; }

  RetrievalResult run(const RetrievalQuery& q) override {
    if (!q.target)
      throw Error(ExitCode::usage, "the procedural strategy needs --target (it decomposes the function to write)");
    ProceduralPipeline pipe(e_, m_, o_.procedural);
    ProceduralOutcome out;
    try {
      out = pipe.run(*q.target, q.context, q.withheld);
    } catch (const Error& err) {
      if (err.code() == ExitCode::interrupted && !pipe.partial_trace().is_null()) write_trace(pipe.partial_trace());
      throw;
    }
    rq2_ = pipe.rq2_pairs();
    RetrievalResult r;
    for (const auto& st : out.steps) {
      PlanStep ps{st.id, st.description, st.confirmed, {}};
      size_t kept = 0;
      for (const auto& c : st.contexts) {
        if (q.top_k > 0 && kept++ >= static_cast<size_t>(q.top_k)) break;  // top k per step
        Hit h = entity_hit(e_, c.function, c.similarity);
        h.label =
            "step " + std::to_string(st.id) + (st.confirmed ? " confirmed" : " unconfirmed") + " (" + c.source + ")";
        h.description = c.description;
        h.text = c.snippet;
        h.features["step"] = st.id;
        h.features["confirmed"] = st.confirmed ? 1 : 0;
        h.features["similarity"] = c.similarity;
        ps.hits.push_back(r.hits.size());
        r.hits.push_back(std::move(h));
      }
      r.plan.push_back(std::move(ps));
    }
    // The final context, as the hits rank it (what a report shows beside the stages that found it).
    nlohmann::json fc = nlohmann::json::array();
    for (size_t i = 0; i < r.hits.size(); ++i) {
      const Hit& h = r.hits[i];
      fc.push_back({{"rank", i + 1},
                    {"function", e_.target_name(h.entity)},
                    {"step", static_cast<int>(h.features.at("step"))},
                    {"confirmed", h.features.at("confirmed") > 0},
                    {"similarity", h.score},
                    {"label", h.label},
                    {"description", h.description}});
    }
    out.trace["final_context"] = std::move(fc);
    write_trace(out.trace);
    r.trace = std::move(out.trace);
    r.usage = out.usage;
    r.empty_reason = out.empty_reason;
    return r;
  }

  const std::vector<Rq2Pair>& rq2_pairs() const { return rq2_; }

 private:
  void write_trace(const nlohmann::json& trace) const {
    if (o_.trace_path.empty()) return;
    std::ofstream f(o_.trace_path);
    if (!f) throw Error(ExitCode::bad_input, "cannot write the trace to '" + o_.trace_path + "'");
    f << trace.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  }

  const Engine& e_;
  Models m_;
  RetrieverOptions o_;
  std::vector<Rq2Pair> rq2_;
};

}  // namespace

const std::vector<Rq2Pair>& last_rq2_pairs(const Retriever& r) {
  static const std::vector<Rq2Pair> none;
  const auto* p = dynamic_cast<const ProceduralRetriever*>(&r);
  return p ? p->rq2_pairs() : none;
}

std::unique_ptr<Retriever> make_procedural(const Engine& e, const Models& m, const RetrieverOptions& o) {
  return std::make_unique<ProceduralRetriever>(e, m, o);
}

}  // namespace repoctx
