// The `files-bm25` and `locate` retrievers (locate.h): a file ranking, then an entity ranking, as hits.
#include <algorithm>
#include <numeric>

#include "repo/model.h"
#include "retrieve/locate/locate.h"
#include "util/error.h"
#include "util/text.h"

namespace repoctx {

using nlohmann::json;

namespace {

Hit file_hit(const Engine& e, int file, double score) {
  Hit h;
  h.type = Hit::Type::file;
  h.file = file;
  h.start_line = 1;
  h.end_line = std::max(1, e.view().files()[static_cast<size_t>(file)].line_count);
  h.score = score;
  return h;
}

// The module level of a file (imports, constants, statements outside any def or class): a snippet hit
// labelled "<module>" over the lines before its first definition.
Hit module_hit(const Engine& e, int file, double score) {
  const auto& fr = e.view().files()[static_cast<size_t>(file)];
  int first_def = fr.line_count;
  for (int en = fr.first_entity; en < fr.first_entity + fr.n_entities; ++en)
    if (e.view().entities()[static_cast<size_t>(en)].parent_index < 0)
      first_def = std::min(first_def, e.view().entities()[static_cast<size_t>(en)].decorated_start_line - 1);
  Hit h;
  h.type = Hit::Type::snippet;
  h.file = file;
  h.start_line = 1;
  h.end_line = std::max(1, first_def);
  h.score = score;
  h.label = "<module>";
  return h;
}

std::string request_of(const RetrievalQuery& q, const char* who) {
  if (trim(q.text).empty())
    throw Error(ExitCode::usage, std::string(who) + " ranks files for a request: give it as --query TEXT");
  return q.text;
}

// Indices of `scores` best first; ties by the path order of `files` so that rankings never depend on ids.
std::vector<size_t> best_first(const Engine& e, const std::vector<int>& files, const std::vector<double>& scores) {
  std::vector<size_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  const auto& fr = e.view().files();
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (scores[a] != scores[b]) return scores[a] > scores[b];
    return fr[static_cast<size_t>(files[a])].path < fr[static_cast<size_t>(files[b])].path;
  });
  return order;
}

class FilesBm25 : public Retriever {
 public:
  FilesBm25(const Engine& e, const RetrieverOptions& o) : e_(e), o_(o) {}
  std::string name() const override { return "files-bm25"; }
  std::vector<Hit> retrieve(const RetrievalQuery& q) override { return run(q).hits; }
  RetrievalResult run(const RetrievalQuery& q) override {
    auto terms = query_terms(request_of(q, "files-bm25"));
    std::vector<int> files;
    std::vector<double> scores;
    for (const auto& sd : file_bm25(e_).score_all(terms, o_.bm25)) {
      files.push_back(sd.doc);
      scores.push_back(sd.score);
    }
    RetrievalResult r;
    auto order = best_first(e_, files, scores);
    size_t k = std::min(order.size(), static_cast<size_t>(std::max(q.top_k, 0)));
    std::vector<char> top_file(e_.view().files().size(), 0);
    for (size_t i = 0; i < k; ++i) {
      r.hits.push_back(file_hit(e_, files[order[i]], scores[order[i]]));
      if (i < kEntityFiles) top_file[static_cast<size_t>(files[order[i]])] = 1;
    }
    // Entity ranking: entity BM25 over the functions and classes of the best files.
    std::vector<ScoredDoc> scored;
    for (const auto& sd : e_.entity_bm25().score_all(terms, o_.bm25)) {
      const auto& en = e_.view().entities()[static_cast<size_t>(sd.doc)];
      if (top_file[static_cast<size_t>(en.file)] && (is_callable(en.kind) || is_type(en.kind))) scored.push_back(sd);
    }
    for (const auto& sd : top_entities(e_, std::move(scored), q.top_k))
      r.hits.push_back(entity_hit(e_, sd.doc, sd.score));
    r.trace = {{"strategy", name()}, {"files", k}, {"entity_files", kEntityFiles}};
    return r;
  }
  static constexpr size_t kEntityFiles = 5;

 private:
  const Engine& e_;
  RetrieverOptions o_;
};

json evidence_json(const RequestEvidence& ev) {
  json frames = json::array();
  for (const auto& f : ev.frames) frames.push_back({{"path", f.path}, {"line", f.line}, {"function", f.function}});
  return {{"frames", frames},
          {"paths", ev.paths},
          {"dotted", ev.dotted},
          {"identifiers", ev.identifiers},
          {"code_identifiers", ev.code_identifiers},
          {"literals", ev.literals},
          {"exceptions", ev.exceptions}};
}

class Locate : public Retriever {
 public:
  Locate(const Engine& e, const RetrieverOptions& o) : e_(e), model_(LocateModel::load(o.locate_model)) {}
  std::string name() const override { return "locate"; }
  std::vector<Hit> retrieve(const RetrievalQuery& q) override { return run(q).hits; }
  RetrievalResult run(const RetrievalQuery& q) override {
    LocateFeatures feats(e_, request_of(q, "locate"));
    LocateFileCandidates fc = feats.files();
    std::vector<double> logits(fc.files.size());
    for (size_t i = 0; i < fc.files.size(); ++i) logits[i] = model_.file.logit(fc.x[i]);
    // Test files after every other file: a request names behaviour, and the tests that pin it are rarely
    // where the change goes (they are listed apart in the trace).
    std::vector<double> ranked = logits;
    const auto& fr = e_.view().files();
    for (size_t i = 0; i < fc.files.size(); ++i)
      if (is_test_path(fr[static_cast<size_t>(fc.files[i])].path)) ranked[i] -= kTestPenalty;
    auto order = best_first(e_, fc.files, ranked);
    RetrievalResult r;
    size_t k = std::min(order.size(), static_cast<size_t>(std::max(q.top_k, 0)));
    json files = json::array(), tests = json::array();
    for (size_t i = 0; i < order.size(); ++i) {
      size_t c = order[i];
      bool test = is_test_path(fr[static_cast<size_t>(fc.files[c])].path);
      if (i < k) r.hits.push_back(file_hit(e_, fc.files[c], logits[c]));
      json row = {{"path", fr[static_cast<size_t>(fc.files[c])].path}, {"logit", logits[c]}};
      if (test && tests.size() < 10) tests.push_back(row);
      if (!test && files.size() < 10) {
        json x = json::object();
        for (size_t j = 0; j < fc.x[c].size(); ++j)
          if (fc.x[c][j] != 0) x[locate_file_feature_names()[j]] = fc.x[c][j];
        row["features"] = x;
        files.push_back(row);
      }
    }
    LocateEntityCandidates ec = feats.entities(fc, logits, kLocateEntityFiles);
    std::vector<double> escore(ec.entities.size());
    const auto& v = e_.view();
    auto file_of = [&](int c) { return c < 0 ? -1 - c : v.entities()[static_cast<size_t>(c)].file; };
    for (size_t i = 0; i < ec.entities.size(); ++i) {
      escore[i] = model_.entity.logit(ec.x[i]);
      if (is_test_path(fr[static_cast<size_t>(file_of(ec.entities[i]))].path)) escore[i] -= kTestPenalty;
    }
    std::vector<size_t> eorder(ec.entities.size());
    std::iota(eorder.begin(), eorder.end(), 0);
    std::sort(eorder.begin(), eorder.end(), [&](size_t a, size_t b) {
      if (escore[a] != escore[b]) return escore[a] > escore[b];
      int ca = ec.entities[a], cb = ec.entities[b];
      if (ca >= 0 && cb >= 0) return entity_before(v, ca, cb);
      return locate_entity_key(v, ca) < locate_entity_key(v, cb);
    });
    for (size_t i = 0; i < eorder.size() && i < k; ++i) {
      int c = ec.entities[eorder[i]];
      r.hits.push_back(c >= 0 ? entity_hit(e_, c, escore[eorder[i]]) : module_hit(e_, -1 - c, escore[eorder[i]]));
    }
    r.trace = {{"strategy", name()}, {"evidence", evidence_json(feats.evidence())}, {"files", files},
               {"tests", tests},     {"entity_candidates", ec.entities.size()},     {"model", model_.provenance}};
    return r;
  }
  static constexpr double kTestPenalty = 1000.0;

 private:
  const Engine& e_;
  LocateModel model_;
};

}  // namespace

std::unique_ptr<Retriever> make_files_bm25(const Engine& e, const Models&, const RetrieverOptions& o) {
  return std::make_unique<FilesBm25>(e, o);
}
std::unique_ptr<Retriever> make_locate(const Engine& e, const Models&, const RetrieverOptions& o) {
  return std::make_unique<Locate>(e, o);
}

}  // namespace repoctx
