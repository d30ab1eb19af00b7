#include "eval/aligncoder_training.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "llm/metered.h"
#include "retrieve/aligncoder/codebase.h"
#include "retrieve/aligncoder/prompt.h"
#include "retrieve/aligncoder/query_enhancement.h"
#include "util/cancel.h"
#include "util/error.h"
#include "util/file_io.h"
#include "util/hash.h"
#include "util/log.h"
#include "util/memory.h"
#include "util/progress.h"
#include "util/text.h"

namespace repoctx {

using nlohmann::json;
namespace fs = std::filesystem;

// ------------------------------------------------------------------------------------ III-C1 data
std::vector<int> training_files(const Engine& e) {
  const RepoView& v = e.view();
  const size_t n = v.files().size();
  std::vector<std::vector<int>> deps(n);  // f imports deps[f]
  std::vector<int> parent(n);
  for (size_t i = 0; i < n; ++i) parent[i] = static_cast<int>(i);
  std::function<int(int)> root = [&](int x) { return parent[x] == x ? x : parent[x] = root(parent[x]); };
  for (size_t f = 0; f < n; ++f)
    for (int g : e.graph().imported_files(static_cast<int>(f))) {
      if (v.files()[g].language != v.files()[f].language) continue;
      deps[f].push_back(g);
      parent[root(static_cast<int>(f))] = root(g);
    }
  std::map<int, std::vector<int>> clusters;  // files in path order (the view is sorted by path)
  for (size_t f = 0; f < n; ++f) clusters[root(static_cast<int>(f))].push_back(static_cast<int>(f));
  std::vector<int> out;
  for (auto& [r, files] : clusters) {
    if (files.size() < 2) continue;  // III-C1: clusters of one file are dropped
    // Topological order, imported files first (Kahn; a cycle is broken at the file with the fewest
    // unplaced imports, then by path).
    std::unordered_map<int, int> pending;
    for (int f : files) pending[f] = static_cast<int>(deps[f].size());
    std::unordered_map<int, std::vector<int>> users;
    for (int f : files)
      for (int g : deps[f]) users[g].push_back(f);
    std::set<int> placed;
    std::vector<int> order;
    while (order.size() < files.size()) {
      int next = -1;
      for (int f : files)
        if (!placed.count(f) && (next < 0 || pending[f] < pending[next])) next = f;
      placed.insert(next);
      order.push_back(next);
      for (int u : users[next]) --pending[u];
    }
    out.insert(out.end(), order.begin() + 1, order.end());  // a sample's file is a non-first file
  }
  std::sort(out.begin(), out.end());
  return out;
}

int overlap_label(const std::string& target, const std::vector<std::string>& candidates, bool require_definition) {
  std::unordered_set<uint64_t> wanted;
  for (const auto& t : code_tokens(target))
    if (t.whole && t.role != TokenRole::keyword) wanted.insert(t.id);
  if (wanted.empty()) return -1;
  int best = -1, best_score = 0;
  for (size_t i = 0; i < candidates.size(); ++i) {
    std::unordered_set<uint64_t> defined, contained;
    for (const auto& t : code_tokens(candidates[i])) {
      if (!t.whole || !wanted.count(t.id)) continue;
      contained.insert(t.id);
      if (t.role == TokenRole::definition) defined.insert(t.id);
    }
    // Definitions first, then containment; ties keep BM25's order.
    int score = 1000 * static_cast<int>(defined.size()) + static_cast<int>(contained.size());
    if (require_definition && defined.empty()) continue;
    if (score > best_score) {
      best_score = score;
      best = static_cast<int>(i);
    }
  }
  return best;
}

std::vector<uint64_t> frequent_tokens(const std::vector<TrainingRepo>& repos, int k) {
  std::unordered_map<uint64_t, int64_t> df;
  for (const auto& r : repos) {
    const RepoView& v = r.engine->view();
    r.engine->snippet_bm25();  // loads every term vector
    for (size_t s = 0; s < v.snippets().size(); ++s)
      for (const auto& [t, tf] : v.snippet_terms(static_cast<int>(s)).terms) ++df[t];
  }
  std::vector<std::pair<int64_t, uint64_t>> all;
  for (const auto& [t, c] : df) all.emplace_back(-c, t);
  std::sort(all.begin(), all.end());
  std::vector<uint64_t> out;
  for (size_t i = 0; i < all.size() && static_cast<int>(i) < k; ++i) out.push_back(all[i].second);
  std::sort(out.begin(), out.end());
  return out;
}

namespace {

// A deterministic generator per (seed, epoch, sample): samples do not depend on thread scheduling.
struct SampleRng {
  std::mt19937_64 g;
  explicit SampleRng(uint64_t s) : g(s) {}
  uint64_t below(uint64_t n) { return n ? g() % n : 0; }
  double unit() { return static_cast<double>(g() >> 11) / 9007199254740992.0; }
};

struct Position {
  Cursor cursor;
  std::string target;
};

// III-C1: a cursor at the start of a non-blank line in the middle of the file, then 16-96 tokens.
bool pick_position(const Engine& e, int file, const AlignTrainOptions& o, SampleRng& rng, Position& out) {
  const std::string& content = e.view().content(file);
  auto starts = line_starts(content);
  int n = static_cast<int>(starts.size());
  if (n < 10) return false;
  for (int attempt = 0; attempt < 10; ++attempt) {
    int lo = std::max(2, n / 5), hi = std::max(lo + 1, n * 4 / 5);
    int line = lo + static_cast<int>(rng.below(static_cast<uint64_t>(hi - lo)));
    std::string_view text = line_range(content, starts, line, line);
    if (is_blank(text)) continue;
    int column = static_cast<int>(text.find_first_not_of(" \t"));
    size_t at = starts[static_cast<size_t>(line - 1)] + static_cast<size_t>(column);
    int want = o.min_target_tokens +
               static_cast<int>(rng.below(static_cast<uint64_t>(o.max_target_tokens - o.min_target_tokens + 1)));
    size_t i = at;
    int words = 0;
    while (i < content.size() && words < want) {
      while (i < content.size() && std::isspace(static_cast<unsigned char>(content[i]))) ++i;
      if (i >= content.size()) break;
      while (i < content.size() && !std::isspace(static_cast<unsigned char>(content[i]))) ++i;
      ++words;
    }
    if (words < want) continue;  // the target must lie inside the file
    // Not at the very end either: some text must follow the target.
    if (content.find_first_not_of(" \t\r\n", i) == std::string::npos) continue;
    out.cursor = {file, line, column};
    out.target = content.substr(at, i - at);
    return true;
  }
  return false;
}

// Perplexity of `target` after the prompt of the enhanced query (its candidates, when it has any) and one
// snippet (eq. 23-24).
double perplexity(LlmBackend& llm, const Engine& e, const CursorContext& ctx, const Hit& h, const std::string& target,
                  const std::vector<std::string>& candidates, const CompletionParams& p) {
  LogprobRequest r;
  r.prompt = completion_prompt(e, ctx, {h}, p, candidates).text;
  r.continuation = target;
  return llm.logprobs(r).perplexity();
}

// One sample, or false when it has no usable label.
bool make_sample(const TrainingRepo& repo, int file, const AlignTrainOptions& o, const Models& models, SampleRng& rng,
                 AlignSample& s) {
  const Engine& e = *repo.engine;
  Position pos;
  if (!pick_position(e, file, o, rng, pos)) return false;
  auto ctx = make_cursor_context(e, pos.cursor);
  const CompletionParams& cp = o.completion;
  std::string window = query_window(ctx->unfinished, cp.query_lines);
  std::vector<std::string> candidates;
  bool enhanced = o.query == "enhanced";
  if (enhanced && rng.unit() < o.candidate_rate) {
    if (o.candidate_source == "sample")
      candidates = enhance_query(e, *ctx, models.need_llm("sampled training candidates"), cp).candidates;
    else
      candidates = {pos.target};
  }
  std::string text = window;
  for (const auto& c : candidates) text += "\n" + c;
  // C: the candidate set of the fine retrieval, as at inference (BM25's best n and the dependency snippets).
  auto pool = fine_pool(e, *ctx, text, enhanced, o.candidates_per_query);
  if (pool.size() < 2) return false;
  CrossFileIdf idf(e, *ctx);
  std::vector<std::string> texts;
  std::vector<FeatureBag> bags = item_bags(e, *ctx, pool, idf, &texts);
  int label = -1;
  if (o.labels == "ppl") {
    LlmBackend& llm = models.need_llm("perplexity labels (--labels ppl)");
    double best = 0;
    for (size_t i = 0; i < pool.size(); ++i) {
      double ppl = perplexity(llm, e, *ctx, item_hit(e, *ctx, pool[i]), pos.target, candidates, cp);
      if (label < 0 || ppl < best) best = ppl, label = static_cast<int>(i);
    }
  } else {
    label = overlap_label(pos.target, texts, o.labels == "defines");
  }
  if (label < 0) return false;
  BagBuilder qb;
  qb.add_query(query_parts(e, *ctx, cp.query_lines, candidates), cp.recent_lines);
  s.query = qb.build([&](uint64_t t) { return idf(t); });
  s.docs = std::move(bags);
  if (o.encoder.mix) {
    LlmBackend& emb = models.need_embedder("an AlignRetriever mixed with a GGUF embedding");
    s.query.frozen = e.embed_query(emb, text);
    for (size_t i = 0; i < texts.size(); ++i) s.docs[i].frozen = e.embed_document(emb, texts[i]);
  }
  s.label = label;
  s.repo = repo.name;
  s.file = e.view().files()[file].path;
  s.line = pos.cursor.line;
  return true;
}

}  // namespace

std::vector<AlignSample> build_samples(const std::vector<TrainingRepo>& repos, const AlignTrainOptions& o,
                                       const Models& models, int epoch, int* skipped) {
  std::vector<std::vector<int>> files(repos.size());
  size_t eligible = 0;
  for (size_t r = 0; r < repos.size(); ++r) eligible += (files[r] = training_files(*repos[r].engine)).size();
  if (eligible == 0)
    throw Error(ExitCode::bad_input,
                "no training files: the repositories have no import clusters of two or more files");
  std::vector<size_t> with_files;
  for (size_t r = 0; r < repos.size(); ++r)
    if (!files[r].empty()) with_files.push_back(r);
  const int n = o.samples_per_epoch;
  std::vector<AlignSample> slots(static_cast<size_t>(n));
  std::vector<char> ok(static_cast<size_t>(n), 0);
  // LLM calls go one at a time (an in-process model is not shared across threads).
  bool llm = o.labels == "ppl" || (o.query == "enhanced" && o.candidate_source == "sample") || o.encoder.mix;
  int threads = llm ? 1 : std::max(1, o.threads);
  Progress prog(fmt::format("epoch {} samples", epoch + 1), static_cast<uint64_t>(n));
  parallel_for(static_cast<size_t>(n), threads, [&](size_t idx) {
    const int i = static_cast<int>(idx);
    throw_if_interrupted("the last finished epoch's checkpoint is kept; re-run to resume");
    SampleRng rng(hash64(fmt::format("{}\x1f{}\x1f{}", o.seed, epoch, i)));
    // A file drawn uniformly over all repositories' eligible files, or (balance_repos) a repository
    // drawn uniformly among those with eligible files, then one of its files.
    uint64_t k = rng.below(eligible);
    size_t r = 0;
    if (o.balance_repos) {
      r = with_files[rng.below(with_files.size())];
      k = rng.below(files[r].size());
    } else {
      while (k >= files[r].size()) k -= files[r++].size();
    }
    ok[static_cast<size_t>(i)] =
        make_sample(repos[r], files[r][k], o, models, rng, slots[static_cast<size_t>(i)]) ? 1 : 0;
    prog.add();
  });
  prog.finish();
  std::vector<AlignSample> out;
  for (int i = 0; i < n; ++i)
    if (ok[static_cast<size_t>(i)]) out.push_back(std::move(slots[static_cast<size_t>(i)]));
  if (skipped) *skipped = n - static_cast<int>(out.size());
  return out;
}

// ------------------------------------------------------------------------------------------ training
json AlignTrainReport::to_json() const {
  json ep = json::array();
  for (const auto& e : epochs)
    ep.push_back({{"epoch", e.epoch},
                  {"samples", e.samples},
                  {"skipped", e.skipped},
                  {"loss", e.loss},
                  {"top1", e.top1},
                  {"val_loss", e.val_loss},
                  {"val_top1", e.val_top1},
                  {"best", e.best},
                  {"build_seconds", e.build_seconds},
                  {"train_seconds", e.train_seconds}});
  return {{"epochs", ep},
          {"resumed_from", resumed_from},
          {"peak_rss_mb", peak_rss_mb},
          {"val_loss0", val_loss0},
          {"val_top1_0", val_top1_0},
          {"best_epoch", best_epoch},
          {"stopped_early", stopped_early}};
}

namespace {

// What a checkpoint must agree on to be resumed.
json training_fingerprint(const std::vector<TrainingRepo>& repos, const AlignTrainOptions& o,
                          const std::vector<TrainingRepo>& validation) {
  json names = json::array(), val = json::array();
  for (const auto& r : repos) names.push_back(r.name);
  for (const auto& r : validation) val.push_back(r.name);
  const auto& c = o.completion;
  json fp = {{"repos", names},
             {"seed", o.seed},
             {"samples_per_epoch", o.samples_per_epoch},
             {"batch", o.batch},
             {"lr", o.lr},
             {"weight_decay", o.weight_decay},
             {"candidates_per_query", o.candidates_per_query},
             {"labels", o.labels},
             {"query", o.query},
             {"candidate_source", o.candidate_source},
             {"candidate_rate", o.candidate_rate},
             {"target_tokens", {o.min_target_tokens, o.max_target_tokens}},
             {"dim", o.encoder.dim},
             {"vocab", o.encoder.vocab},
             {"tau", o.encoder.tau},
             {"encoder_seed", o.encoder.seed},
             {"mix", o.encoder.mix},
             {"head", o.encoder.head},
             {"query_lines", c.query_lines},
             {"recent_lines", c.recent_lines},
             {"samples", c.samples},
             {"temperature", c.temperature},
             {"top_p", c.top_p}};
  // Added with the generalisation options; present only when used, so older checkpoints still resume.
  if (o.l2_init != 0) fp["l2_init"] = std::isinf(o.l2_init) ? std::string("inf") : fmt::format("{}", o.l2_init);
  if (o.balance_repos) fp["balance_repos"] = true;
  if (!validation.empty()) fp["validation"] = {{"repos", val}, {"samples", o.val_samples}};
  return fp;
}

void write_json_atomic(const std::string& path, const json& j) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error(ExitCode::bad_input, "cannot write '" + tmp + "'");
    out << j.dump() << "\n";
    if (!out) throw Error(ExitCode::bad_input, "cannot write '" + tmp + "' (disk full?)");
  }
  fs::rename(tmp, path);
}

}  // namespace

std::pair<double, double> evaluate_samples(const AlignEncoder& enc, const std::vector<AlignSample>& samples) {
  double loss = 0;
  int top1 = 0;
  for (const auto& sm : samples) {
    throw_if_interrupted("the last finished epoch's checkpoint is kept; re-run to resume");
    std::vector<const FeatureBag*> docs;
    for (const auto& d : sm.docs) docs.push_back(&d);
    auto s = enc.scores(sm.query, docs);
    top1 += static_cast<int>(std::max_element(s.begin(), s.end()) - s.begin()) == sm.label;
    loss += encoder_loss(enc, sm.query, docs, sm.label, nullptr);
  }
  if (samples.empty()) return {0, 0};
  return {loss / static_cast<double>(samples.size()), static_cast<double>(top1) / static_cast<double>(samples.size())};
}

EpochReport train_one_epoch(AlignEncoder& enc, AdamState& adam, std::vector<AlignSample>& samples, int batch,
                            uint64_t seed) {
  EpochReport rep;
  std::mt19937_64 g(seed);
  for (size_t i = samples.size(); i > 1; --i) std::swap(samples[i - 1], samples[g() % i]);  // Fisher-Yates
  EncoderGrad grad;
  double loss = 0;
  int top1 = 0;
  Progress prog("training", samples.size());
  for (size_t b = 0; b < samples.size(); b += static_cast<size_t>(batch)) {
    throw_if_interrupted("the last finished epoch's checkpoint is kept; re-run to resume");
    grad.clear();
    size_t end = std::min(samples.size(), b + static_cast<size_t>(batch));
    for (size_t i = b; i < end; ++i) {
      std::vector<const FeatureBag*> docs;
      for (const auto& d : samples[i].docs) docs.push_back(&d);
      auto s = enc.scores(samples[i].query, docs);
      top1 += static_cast<int>(std::max_element(s.begin(), s.end()) - s.begin()) == samples[i].label;
      loss += encoder_loss(enc, samples[i].query, docs, samples[i].label, &grad);
    }
    adam.apply(enc, grad, 1.0 / static_cast<double>(end - b));
    prog.add(end - b);
  }
  prog.finish();
  rep.samples = static_cast<int>(samples.size());
  rep.loss = samples.empty() ? 0 : loss / static_cast<double>(samples.size());
  rep.top1 = samples.empty() ? 0 : static_cast<double>(top1) / static_cast<double>(samples.size());
  return rep;
}

namespace {

void check_options(const AlignTrainOptions& o) {
  if (o.labels != "overlap" && o.labels != "defines" && o.labels != "ppl")
    throw Error(ExitCode::usage, "--labels takes overlap, defines or ppl");
  if (o.query != "enhanced" && o.query != "plain") throw Error(ExitCode::usage, "--query takes enhanced or plain");
  if (o.candidate_source != "oracle" && o.candidate_source != "sample")
    throw Error(ExitCode::usage, "--candidates takes oracle or sample");
  if (o.epochs < 1 || o.samples_per_epoch < 1 || o.batch < 1 || o.candidates_per_query < 2)
    throw Error(ExitCode::usage, "--epochs, --samples and --batch must be >= 1, --candidates-per-query >= 2");
  if (o.min_target_tokens < 1 || o.max_target_tokens < o.min_target_tokens)
    throw Error(ExitCode::usage, "target token range must satisfy 1 <= min <= max");
  if (o.out_path.empty()) throw Error(ExitCode::usage, "--out is required");
  if (o.encoder.head > 0 && !o.encoder.mix)
    throw Error(ExitCode::usage, "--head N trains a head over an embedding model: add --mix (and --embed-model)");
  if (!(o.l2_init >= 0)) throw Error(ExitCode::usage, "--l2-init must be >= 0 (inf: keep the untrained encoder)");
  if (o.val_samples < 1 || o.patience < 1) throw Error(ExitCode::usage, "--val-samples and --patience must be >= 1");
}

// Early stopping state, kept in the checkpoint.
struct Validation {
  std::vector<AlignSample> samples;
  double loss0 = 0, top1_0 = 0, best = 0;
  int best_epoch = 0, since_best = 0;
  json to_json() const {
    return {
        {"loss0", loss0}, {"top1_0", top1_0}, {"best", best}, {"best_epoch", best_epoch}, {"since_best", since_best}};
  }
  void from_json(const json& j) {
    loss0 = j.at("loss0");
    top1_0 = j.at("top1_0");
    best = j.at("best");
    best_epoch = j.at("best_epoch");
    since_best = j.at("since_best");
  }
};

// The validation samples: drawn like an epoch's, from the validation repositories, once.
std::vector<AlignSample> validation_samples(const std::vector<TrainingRepo>& validation, const AlignTrainOptions& o,
                                            const Models& models) {
  AlignTrainOptions vo = o;
  vo.samples_per_epoch = o.val_samples;
  auto out = build_samples(validation, vo, models, -1);
  if (out.empty()) throw Error(ExitCode::bad_input, "the validation repositories gave no usable sample");
  return out;
}

// After an epoch: records the validation loss; true when this epoch is the best so far.
bool validate_epoch(const AlignEncoder& enc, Validation& v, int epoch, EpochReport& ep) {
  std::tie(ep.val_loss, ep.val_top1) = evaluate_samples(enc, v.samples);
  if (ep.val_loss < v.best) {
    v.best = ep.val_loss;
    v.best_epoch = epoch;
    v.since_best = 0;
    return ep.best = true;
  }
  ++v.since_best;
  return false;
}

// The checkpoint `ckpt` (made with fingerprint `fp`) read into the encoder, the optimizer and the early
// stopping state; returns the epochs it has done.
int resume_checkpoint(const std::string& ckpt, const json& fp, bool with_validation, AlignEncoder& enc, AdamState& adam,
                      Validation& val) {
  std::ifstream in(ckpt);
  json j = json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.contains("fingerprint"))
    throw Error(ExitCode::bad_input, "checkpoint '" + ckpt + "' is damaged: remove it or pass --restart");
  if (j["fingerprint"] != fp)
    throw Error(ExitCode::usage, "checkpoint '" + ckpt +
                                     "' was made with other options or repositories: re-run with the same ones to "
                                     "resume, or pass --restart");
  enc = AlignEncoder::from_json(j.at("model"), ckpt);
  adam = AdamState::from_json(j.at("adam"));
  const int start = j.at("epochs_done").get<int>();
  if (with_validation) val.from_json(j.at("validation"));
  return start;
}

// A fresh encoder's vocabulary (the repositories' frequent tokens) and, over an embedding model, its head.
void init_encoder(AlignEncoder& enc, const EncoderConfig& ec, const std::vector<TrainingRepo>& repos,
                  const AlignTrainOptions& o, const Models& models) {
  enc.set_vocabulary(frequent_tokens(repos, o.encoder.vocab));
  if (ec.mix && ec.head > 0) {
    // The head's input is the embedding model's dimension: one short embedding (cached) tells it.
    EmbedRequest r;
    r.texts = {"def f():\n    return 0\n"};
    r.task = EmbedTask::document;
    r.purpose = "aligncoder_head_shape";
    auto v = models.need_embedder("the AlignRetriever's head").embed(r).vectors;
    enc.init_head(v.empty() ? 0 : static_cast<int>(v.front().size()));
  }
}

// After epoch `epoch` (0-based): the encoder's provenance, the checkpoint, then (when `save`) the model file.
// The checkpoint first, then the model: an interruption between them leaves a resumable state.
void write_epoch(AlignEncoder& enc, const AdamState& adam, const Validation& val, bool with_validation,
                 const AlignTrainOptions& o, const json& fp, const std::string& ckpt, int epoch, const EpochReport& ep,
                 bool save) {
  json prov = {{"trained_on", fp["repos"]}, {"epochs", epoch + 1}, {"options", fp}, {"last_epoch", ep.loss}};
  if (with_validation) prov["validation"] = val.to_json();
  if (!o.command.empty()) prov["command"] = o.command;
  enc.provenance = prov;
  json state = {
      {"fingerprint", fp}, {"epochs_done", epoch + 1}, {"model", enc.to_json(true)}, {"adam", adam.to_json()}};
  if (with_validation) state["validation"] = val.to_json();
  write_json_atomic(ckpt, state);
  if (save) enc.save(o.out_path, prov);
}

}  // namespace

AlignTrainReport train_aligncoder(const std::vector<TrainingRepo>& repos, const AlignTrainOptions& o,
                                  const Models& models, const std::vector<TrainingRepo>& validation) {
  check_options(o);
  if (repos.empty()) throw Error(ExitCode::usage, "train-aligncoder needs at least one repository");
  for (const auto& v : validation)
    for (const auto& r : repos)
      if (v.name == r.name)
        throw Error(ExitCode::usage, "'" + v.name + "' is both a training and a validation repository");
  const std::string ckpt = o.out_path + ".ckpt";
  json fp = training_fingerprint(repos, o, validation);
  EncoderConfig ec = o.encoder;
  if (ec.mix) ec.embedder = models.need_embedder("an AlignRetriever mixed with a GGUF embedding").identity();
  AlignEncoder enc(ec);
  AdamState adam;
  adam.lr = o.lr;
  adam.weight_decay = o.weight_decay;
  adam.l2_init = o.l2_init;
  AlignTrainReport report;
  Validation val;
  int start = 0;
  if (!o.restart && fs::exists(ckpt)) {
    start = resume_checkpoint(ckpt, fp, !validation.empty(), enc, adam, val);
    report.resumed_from = start;
    log_info("resuming from {} after epoch {}", ckpt, start);
  } else {
    init_encoder(enc, ec, repos, o, models);
  }
  if (!validation.empty()) {
    val.samples = validation_samples(validation, o, models);
    if (start == 0) {  // epoch 0: the untrained encoder is the model to beat, and the model file until beaten
      std::tie(val.loss0, val.top1_0) = evaluate_samples(enc, val.samples);
      val.best = val.loss0;
      enc.provenance = {{"trained_on", fp["repos"]}, {"epochs", 0}, {"options", fp}, {"validation", val.to_json()}};
      if (!o.command.empty()) enc.provenance["command"] = o.command;
      enc.save(o.out_path, enc.provenance);
      log_info("validation ({} samples): untrained loss {:.4f}, label ranked first {:.1f}%", val.samples.size(),
               val.loss0, 100 * val.top1_0);
    }
    report.val_loss0 = val.loss0;
    report.val_top1_0 = val.top1_0;
  }
  for (int epoch = start; epoch < o.epochs; ++epoch) {
    if (!validation.empty() && val.since_best >= o.patience) {
      report.stopped_early = true;
      break;
    }
    auto t0 = std::chrono::steady_clock::now();
    int skipped = 0;
    auto samples = build_samples(repos, o, models, epoch, &skipped);
    auto t1 = std::chrono::steady_clock::now();
    EpochReport ep =
        train_one_epoch(enc, adam, samples, o.batch, hash64(fmt::format("{}\x1f{}\x1fshuffle", o.seed, epoch)));
    auto t2 = std::chrono::steady_clock::now();
    ep.epoch = epoch + 1;
    ep.skipped = skipped;
    ep.build_seconds = std::chrono::duration<double>(t1 - t0).count();
    ep.train_seconds = std::chrono::duration<double>(t2 - t1).count();
    bool save = validation.empty() || validate_epoch(enc, val, epoch + 1, ep);
    write_epoch(enc, adam, val, !validation.empty(), o, fp, ckpt, epoch, ep, save);
    log_info(
        "epoch {}/{}: loss {:.4f}, label ranked first {:.1f}%, {} samples ({} skipped), build {:.1f} s, train {:.1f} s",
        epoch + 1, o.epochs, ep.loss, 100 * ep.top1, ep.samples, ep.skipped, ep.build_seconds, ep.train_seconds);
    if (!validation.empty())
      log_info("  validation loss {:.4f} (untrained {:.4f}), label ranked first {:.1f}%{}", ep.val_loss, val.loss0,
               100 * ep.val_top1, save ? ": the best so far, written" : "");
    report.epochs.push_back(ep);
  }
  if (!validation.empty()) report.best_epoch = val.best_epoch;
  report.peak_rss_mb = peak_rss_mb();
  return report;
}

}  // namespace repoctx
