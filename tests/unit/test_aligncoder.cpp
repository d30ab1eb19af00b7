// AlignCoder (III-B, III-C) and its completion pipeline: the encoder's hand-written gradient against finite
// differences, the model file, token roles, EM/ES against hand-computed values, the benchmark loaders on
// files in the published layouts, the task builder, the cut-copy rule of cursors, query enhancement through
// the cache, the LLM-free labels, resumable training and its generalisation options (the L2 pull towards the
// untrained encoder, repository-balanced sampling, validation early stopping), and model files as methods.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <random>
#include <set>

#include "eval/aligncoder_gradient.h"
#include "eval/aligncoder_training.h"
#include "eval/completion_metrics.h"
#include "eval/completion_retrieval.h"
#include "eval/completion_runner.h"
#include "eval/completion_tasks.h"
#include "helpers.h"
#include "index/index.h"
#include "llm/cache.h"
#include "retrieve/aligncoder/codebase.h"
#include "retrieve/aligncoder/encoder.h"
#include "retrieve/aligncoder/query_enhancement.h"
#include "retrieve/retriever.h"
#include "scripted_backend.h"
#include "util/cancel.h"
#include "util/error.h"
#include "util/text.h"

using namespace repoctx;
using repoctx::testing::ScriptedBackend;
using repoctx::testing::TempDir;

namespace {

FeatureBag bag(const std::string& code, const std::vector<std::string>& cands, bool query) {
  BagBuilder b;
  if (query)
    b.add_query({"import os\n", code, "os path", cands}, 2);
  else
    b.add(code, TokenPlace::document);
  return b.build([](uint64_t id) { return 0.5 + static_cast<double>(id % 7) / 4.0; });
}

// ----------------------------------------------------------------------------------------- encoder
TEST(AlignEncoder, GradientMatchesFiniteDifferences) {
  for (int variant : {0, 1, 2}) {  // bag of tokens; mixed with an embedding; mixed through a trained head
    const bool mix = variant > 0, with_head = variant == 2;
    EncoderConfig cfg;
    cfg.dim = 16;
    cfg.mix = mix;
    cfg.head = with_head ? 5 : 0;
    AlignEncoder enc(cfg);
    FeatureBag q = bag("def total(items):\n    s = 0\n    for it in items:\n        s += it.price\n",
                       {"return sum(it.price for it in items)"}, true);
    std::vector<FeatureBag> docs = {bag("class Item:\n    def price(self):\n        return self._p\n", {}, false),
                                    bag("def total_price(rows):\n    return sum(rows)\n", {}, false),
                                    bag("import os\nPATH = os.getcwd()\n", {}, false)};
    // Vocabulary: a few tokens of the texts get learned rows.
    std::vector<uint64_t> vocab;
    for (size_t i = 0; i < q.ids.size(); i += 2) vocab.push_back(q.ids[i]);
    for (size_t i = 0; i < docs[0].ids.size(); i += 3) vocab.push_back(docs[0].ids[i]);
    std::sort(vocab.begin(), vocab.end());
    vocab.erase(std::unique(vocab.begin(), vocab.end()), vocab.end());
    enc.set_vocabulary(vocab);
    if (with_head) enc.init_head(8);
    std::mt19937_64 g(7);
    std::normal_distribution<double> nd(0.0, 0.3);
    for (Eigen::Index i = 0; i < enc.params().size(); ++i) enc.params()[i] = nd(g);
    if (mix) {
      auto frozen = [&](int k) {
        std::vector<float> v(8);
        for (int i = 0; i < 8; ++i) v[static_cast<size_t>(i)] = static_cast<float>(std::sin(k * 3.1 + i));
        float n = 0;
        for (float x : v) n += x * x;
        for (float& x : v) x /= std::sqrt(n);
        return v;
      };
      q.frozen = frozen(0);
      for (size_t i = 0; i < docs.size(); ++i) docs[i].frozen = frozen(static_cast<int>(i) + 1);
    }
    std::vector<const FeatureBag*> ptrs;
    for (const auto& d : docs) ptrs.push_back(&d);
    EncoderGrad grad;
    encoder_loss(enc, q, ptrs, 1, &grad);
    auto analytic = [&](Eigen::Index i) {
      if (i < static_cast<Eigen::Index>(enc.delta_offset())) return grad.dense[i];
      if (i >= static_cast<Eigen::Index>(enc.head_offset()))
        return grad.head[i - static_cast<Eigen::Index>(enc.head_offset())];
      auto r = static_cast<int>((static_cast<size_t>(i) - enc.delta_offset()) / static_cast<size_t>(cfg.dim));
      auto k = static_cast<Eigen::Index>((static_cast<size_t>(i) - enc.delta_offset()) % static_cast<size_t>(cfg.dim));
      auto it = grad.rows.find(r);
      return it == grad.rows.end() ? 0.0 : it->second[k];
    };
    int checked = 0, head_checked = 0;
    for (Eigen::Index i = 0; i < enc.params().size(); ++i) {
      bool in_head = i >= static_cast<Eigen::Index>(enc.head_offset());
      // every theta, the mix, every head weight, one in five learned rows' weights
      if (i >= kSlots + 1 && !in_head && i % 5 != 0) continue;
      if (i == kSlots && !mix) continue;
      const double h = 1e-6, old = enc.params()[i];
      enc.params()[i] = old + h;
      double up = encoder_loss(enc, q, ptrs, 1, nullptr);
      enc.params()[i] = old - h;
      double down = encoder_loss(enc, q, ptrs, 1, nullptr);
      enc.params()[i] = old;
      double numeric = (up - down) / (2 * h);
      EXPECT_NEAR(analytic(i), numeric, 1e-5 + 1e-4 * std::abs(numeric)) << "parameter " << i << " variant " << variant;
      ++checked;
      head_checked += in_head;
    }
    EXPECT_GT(checked, 60);
    if (with_head) {
      EXPECT_EQ(head_checked, 40);
      EXPECT_GT(grad.head.norm(), 0.0) << "the head gets no gradient";
    }
    double nonzero = 0;
    for (int s = 0; s < kSlots; ++s) nonzero += std::abs(grad.dense[s]);
    EXPECT_GT(nonzero, 0.0);  // the role weights do get a gradient
  }
}

TEST(AlignEncoder, TrainingOnOneSampleRaisesItsLabel) {
  AlignEncoder enc;
  FeatureBag q = bag("rows = load(path)\nreport = ", {}, true);
  std::vector<FeatureBag> docs = {bag("def load(path):\n    return open(path).read()\n", {}, false),
                                  bag("rows = []\nreport = None\n", {}, false)};
  std::vector<const FeatureBag*> ptrs{&docs[0], &docs[1]};
  enc.set_vocabulary({docs[0].ids.begin(), docs[0].ids.end()});
  AdamState adam;
  adam.lr = 0.05;
  double first = encoder_loss(enc, q, ptrs, 0, nullptr), last = first;
  for (int step = 0; step < 50; ++step) {
    EncoderGrad g;
    last = encoder_loss(enc, q, ptrs, 0, &g);
    adam.apply(enc, g, 1.0);
  }
  EXPECT_LT(last, first * 0.5);
  auto s = enc.scores(q, ptrs);
  EXPECT_GT(s[0], s[1]);
}

// The linear head over a frozen embedding: training moves it and lowers the loss, the model file keeps it
// (float32; exact in checkpoints), and scores use it: the same model with another head scores otherwise.
TEST(AlignEncoder, TrainedHeadLowersTheLossRoundTripsAndDrivesTheScores) {
  EncoderConfig cfg;
  cfg.dim = 16;
  cfg.mix = true;
  cfg.head = 6;
  cfg.embedder = "test-embedder";
  AlignEncoder enc(cfg);
  enc.set_vocabulary({});
  enc.init_head(12);
  ASSERT_EQ(enc.head_size(), 72u);
  auto vec = [](int k) {
    std::vector<float> v(12);
    for (int i = 0; i < 12; ++i) v[static_cast<size_t>(i)] = static_cast<float>(std::cos(k * 1.7 + i * 0.9));
    return v;
  };
  // The same text for every document: only the embeddings (through the head) can tell them apart.
  FeatureBag q = bag("rows = load(path)\n", {}, true);
  std::vector<FeatureBag> docs(4, bag("x = 1\n", {}, false));
  q.frozen = vec(0);
  for (size_t i = 0; i < docs.size(); ++i) docs[i].frozen = vec(static_cast<int>(i) + 5);
  std::vector<const FeatureBag*> ptrs;
  for (const auto& d : docs) ptrs.push_back(&d);
  const int label = 2;
  Eigen::VectorXd head0 = enc.params().tail(72);
  AdamState adam;
  adam.lr = 0.05;
  adam.l2_init = 1.0;  // the pull towards the untrained encoder leaves the head alone
  double first = encoder_loss(enc, q, ptrs, label, nullptr), last = first;
  for (int step = 0; step < 60; ++step) {
    EncoderGrad g;
    last = encoder_loss(enc, q, ptrs, label, &g);
    adam.apply(enc, g, 1.0);
  }
  EXPECT_LT(last, first * 0.5) << "training the head does not lower the loss";
  EXPECT_GT((enc.params().tail(72) - head0).norm(), 0.1) << "the head did not move";
  auto s = enc.scores(q, ptrs);
  EXPECT_EQ(std::max_element(s.begin(), s.end()) - s.begin(), label);
  // Round trip: float32 in the model file, float64 in a checkpoint.
  TempDir tmp;
  enc.save(tmp.str() + "/head.json");
  AlignEncoder back = AlignEncoder::load(tmp.str() + "/head.json");
  EXPECT_EQ(back.config().head, 6);
  EXPECT_EQ(back.config().head_in, 12);
  EXPECT_LT((back.params() - enc.params()).cwiseAbs().maxCoeff(), 1e-6);
  AlignEncoder exact = AlignEncoder::from_json(enc.to_json(true), "checkpoint");
  EXPECT_EQ((exact.params() - enc.params()).norm(), 0.0);
  // Scores follow the head: the untrained one ranks otherwise.
  AlignEncoder other = back;
  other.params().tail(72) = head0;
  auto s_other = other.scores(q, ptrs);
  EXPECT_NE(s_other, back.scores(q, ptrs)) << "scores ignore the trained head";
  // An embedding of another size is a clear error.
  FeatureBag wrong = q;
  wrong.frozen.resize(7);
  EXPECT_THROW(back.scores(wrong, ptrs), Error);
}

// The proximal L2 pull towards the untrained encoder (all parameters 0): infinite keeps it exactly, a
// learning rate of 0 moves nothing, 0 is plain Adam, and a finite pull lands in between.
TEST(AlignEncoder, L2InitKeepsTrainingNearTheUntrainedEncoder) {
  FeatureBag q = bag("rows = load(path)\nreport = ", {}, true);
  std::vector<FeatureBag> docs = {bag("def load(path):\n    return open(path).read()\n", {}, false),
                                  bag("rows = []\nreport = None\n", {}, false)};
  std::vector<const FeatureBag*> ptrs{&docs[0], &docs[1]};
  auto trained = [&](double lr, double l2) {
    AlignEncoder enc;
    enc.set_vocabulary({docs[0].ids.begin(), docs[0].ids.end()});
    AdamState adam;
    adam.lr = lr;
    adam.l2_init = l2;
    for (int step = 0; step < 30; ++step) {
      EncoderGrad g;
      encoder_loss(enc, q, ptrs, 0, &g);
      adam.apply(enc, g, 1.0);
    }
    return enc;
  };
  AlignEncoder untrained;
  untrained.set_vocabulary({docs[0].ids.begin(), docs[0].ids.end()});
  EXPECT_EQ(trained(0.05, INFINITY).params().norm(), 0.0);
  EXPECT_EQ(trained(0.0, 0.0).params().norm(), 0.0);
  EXPECT_EQ(trained(0.05, INFINITY).scores(q, ptrs), untrained.scores(q, ptrs));
  double free = trained(0.05, 0.0).params().norm(), pulled = trained(0.05, 20.0).params().norm();
  EXPECT_GT(free, 0.1);
  EXPECT_GT(pulled, 0.0);
  EXPECT_LT(pulled, 0.5 * free);
  // The optimiser state keeps the pull across a checkpoint, infinity included (JSON has none).
  AdamState a;
  a.l2_init = INFINITY;
  EXPECT_TRUE(std::isinf(AdamState::from_json(a.to_json()).l2_init));
  a.l2_init = 0.25;
  EXPECT_EQ(AdamState::from_json(a.to_json()).l2_init, 0.25);
}

TEST(AlignEncoder, ModelFileRoundTripsAndRejectsOtherVersions) {
  TempDir tmp;
  EncoderConfig cfg;
  cfg.dim = 32;
  cfg.seed = 9;
  AlignEncoder enc(cfg);
  FeatureBag q = bag("x = compute(a, b)\n", {"y = compute(b)"}, true);
  FeatureBag d = bag("def compute(a, b=None):\n    return a\n", {}, false);
  enc.set_vocabulary({q.ids.begin(), q.ids.end()});
  for (Eigen::Index i = 0; i < enc.params().size(); ++i) enc.params()[i] = std::sin(static_cast<double>(i));
  std::string path = tmp.str() + "/m.json";
  enc.save(path, {{"note", "test"}});
  AlignEncoder back = AlignEncoder::load(path);
  EXPECT_EQ(back.config().dim, 32);
  EXPECT_EQ(back.vocabulary(), enc.vocabulary());
  EXPECT_NEAR(back.scores(q, {&d})[0], enc.scores(q, {&d})[0], 1e-6);  // weights stored as float32
  EXPECT_EQ(back.provenance["note"], "test");
  auto j = enc.to_json();
  j["format_version"] = 99;
  std::ofstream(path) << j.dump();
  try {
    AlignEncoder::load(path);
    FAIL() << "a model of another format version loaded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input);
    EXPECT_NE(std::string(e.what()).find("format version 99"), std::string::npos) << e.what();
  }
  try {
    AlignEncoder::load(tmp.str() + "/missing.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::not_found);
  }
}

TEST(AlignEncoder, Base64RoundTrip) {
  for (const std::string& s : std::vector<std::string>{"", "a", "ab", "abc", "abcd", std::string("\0\xff\x10 z", 5)})
    EXPECT_EQ(base64_decode(base64_encode(s.data(), s.size())), s);
  EXPECT_EQ(base64_encode("Man", 3), "TWFu");
  EXPECT_EQ(base64_encode("Ma", 2), "TWE=");
  EXPECT_THROW(base64_decode("TW!u"), std::invalid_argument);
}

TEST(AlignEncoder, TokenRoles) {
  auto toks = code_tokens("class Store:\n    def rows(self):\n        return self.db.fetch(LIMIT)\nLIMIT = 3\n");
  auto role = [&](const std::string& word) {  // of the word's last occurrence
    std::vector<uint64_t> ids;
    tokenize_hashes(word, ids);
    TokenRole r = TokenRole::other;
    for (const auto& t : toks)
      if (t.id == ids.back() && t.whole) r = t.role;
    return r;
  };
  EXPECT_EQ(role("Store"), TokenRole::definition);
  EXPECT_EQ(role("rows"), TokenRole::definition);
  EXPECT_EQ(role("fetch"), TokenRole::call);
  EXPECT_EQ(role("db"), TokenRole::attribute);
  EXPECT_EQ(role("self"), TokenRole::keyword);
  EXPECT_EQ(role("LIMIT"), TokenRole::definition);  // `LIMIT = 3` at a line start
  EXPECT_EQ(code_tokens("f(LIMIT)").back().role, TokenRole::other);
  EXPECT_EQ(code_tokens("xy == 3").front().role, TokenRole::other);  // a comparison is no definition
  // Java: a method or constructor declaration defines its name; a call, `new` and `return` do not.
  auto java = code_tokens(
      "public static List<String> splitAll(String s) throws IOException {\n"
      "    int[] parts(int n);\n"
      "    public Store(int n) {\n"
      "        Items items = new Items(n);\n"
      "        return helper(items) > limit(n) ? 1 : 0;\n"
      "    }\n");
  auto jrole = [&](const std::string& word) {
    std::vector<uint64_t> ids;
    tokenize_hashes(word, ids);
    for (const auto& t : java)
      if (t.id == ids.back() && t.whole) return t.role;
    return TokenRole::other;
  };
  EXPECT_EQ(jrole("splitAll"), TokenRole::definition);
  EXPECT_EQ(jrole("parts"), TokenRole::definition);  // abstract: `;` after the parameters
  EXPECT_EQ(jrole("Store"), TokenRole::definition);  // a constructor after its modifier
  EXPECT_EQ(jrole("Items"), TokenRole::other);       // the first Items is a type; role of the first occurrence
  EXPECT_EQ(jrole("helper"), TokenRole::call);
  EXPECT_EQ(jrole("limit"), TokenRole::call);                                   // after `>`, but no body follows
  EXPECT_EQ(code_tokens("if ready(x):\n    go()\n")[1].role, TokenRole::call);  // Python stays as it was
}

// ----------------------------------------------------------------------------------------- metrics
TEST(CompletionMetrics, HandComputedValues) {
  // The first non-blank generated line against a one-line ground truth.
  EXPECT_TRUE(exact_match("\n   x = f(a)  \ny = 2\n", "x = f(a)"));
  EXPECT_FALSE(exact_match("x = f(b)\n", "x = f(a)"));
  EXPECT_DOUBLE_EQ(edit_similarity("x = f(b)\n", "x = f(a)"), 1.0 - 1.0 / 8.0);
  // "abcd" vs "abed": one substitution over 4.
  EXPECT_DOUBLE_EQ(edit_similarity("abed", "abcd"), 0.75);
  // kitten -> sitting: 3 edits over max(6, 7).
  EXPECT_EQ(levenshtein("kitten", "sitting"), 3u);
  EXPECT_DOUBLE_EQ(edit_similarity("sitting", "kitten"), 1.0 - 3.0 / 7.0);
  // Empty prediction: 0; both empty: 1.
  EXPECT_DOUBLE_EQ(edit_similarity("", "return x"), 0.0);
  EXPECT_DOUBLE_EQ(edit_similarity("   \n", ""), 1.0);
  // Code points, not bytes: "é" vs "e" is one edit over one point.
  EXPECT_EQ(levenshtein("é", "e"), 1u);
  EXPECT_DOUBLE_EQ(edit_similarity("é", "e"), 0.0);
  EXPECT_DOUBLE_EQ(edit_similarity("aé", "ae"), 0.5);
  // Function-level: as many lines as the ground truth has, joined by '\n'.
  EXPECT_TRUE(exact_match("a = 1\n\n  b = 2\nc = 3\n", "a = 1\nb = 2\n"));
  EXPECT_EQ(scored_prediction("a = 1\n\n  b = 2\nc = 3\n", "a = 1\nb = 2\n"), "a = 1\nb = 2");
  // "a = 1\nb = 3" vs "a = 1\nb = 2": 1 edit over 11.
  EXPECT_DOUBLE_EQ(edit_similarity("a = 1\nb = 3\nzzz", "a = 1\nb = 2"), 1.0 - 1.0 / 11.0);
}

// ----------------------------------------------------------------------------------------- loaders
TEST(CompletionTasks, LoadersReadThePublishedLayouts) {
  TempDir tmp;
  std::string cce = tmp.str() + "/cceval_python.jsonl";
  std::ofstream(cce)
      << R"json({"prompt": "import os\nfrom .gen import Gen\n\ndef run(g):\n    return g.", "groundtruth": "get_accept_token()", "right_context": "\n\nprint(1)\n", "metadata": {"task_id": "project_cc_python/74", "repository": "turboderp-exllama-a544085", "file": "example_cfg.py", "context_start_lineno": 0, "groundtruth_start_lineno": 4, "right_context_start_lineno": 5}, "crossfile_context": {"text": "", "list": []}})json"
      << "\n"
      << R"json({"prompt": "package a;\nclass B {\n  void f() { x.", "groundtruth": "go();", "right_context": " }\n}", "metadata": {"task_id": "project_cc_java/1", "repository": "r-java", "file": "src/a/B.java", "context_start_lineno": 10, "groundtruth_start_lineno": 12, "right_context_start_lineno": 12}})json"
      << "\n"
      << R"json({"prompt": "x", "metadata": {"task_id": "project_cc_python/9", "repository": "r", "file": "a.py"}})json"
      << "\n"
      << R"json({"prompt": "import { a } from './a';\nexport const b = a.", "groundtruth": "run();", "metadata": {"task_id": "project_cc_typescript/5", "repository": "r-ts", "file": "src/b.ts", "context_start_lineno": 0}})json"
      << "\n"
      << R"json({"prompt": "class A { void F() { x.", "groundtruth": "Go();", "metadata": {"task_id": "project_cc_csharp/2", "repository": "r-cs", "file": "A.cs", "context_start_lineno": 0}})json"
      << "\n"
      << R"json({"prompt": "class A\n  def f\n    x.", "groundtruth": "go", "metadata": {"task_id": "project_cc_ruby/1", "repository": "r-rb", "file": "a.rb", "context_start_lineno": 0}})json"
      << "\n";
  CompletionTaskLoadOptions o;
  o.repos_dir = "/repos";
  auto t = load_completion_tasks(cce, o);
  ASSERT_EQ(t.size(), 6u);
  EXPECT_EQ(t[0].id, "project_cc_python/74");
  EXPECT_EQ(t[0].repo, "/repos/turboderp-exllama-a544085");
  EXPECT_EQ(t[0].file, "example_cfg.py");
  EXPECT_EQ(t[0].line, 5);
  EXPECT_EQ(t[0].column, 13);  // the cursor follows "    return g."
  EXPECT_EQ(t[0].ground_truth, "get_accept_token()");
  EXPECT_EQ(t[0].benchmark, "cceval-python");
  EXPECT_TRUE(t[0].error.empty());
  EXPECT_EQ(t[1].benchmark, "cceval-java");
  EXPECT_EQ(t[1].line, 13);
  EXPECT_EQ(t[1].column, 15);
  EXPECT_EQ(t[2].id, "project_cc_python/9");
  EXPECT_NE(t[2].error.find("groundtruth"), std::string::npos) << t[2].error;  // a missing field: its error
  EXPECT_EQ(t[3].benchmark, "cceval-typescript");
  EXPECT_TRUE(t[3].error.empty()) << t[3].error;
  EXPECT_EQ(t[3].line, 2);
  EXPECT_EQ(t[4].id, "project_cc_csharp/2");  // CrossCodeEval's C# set
  EXPECT_TRUE(t[4].error.empty()) << t[4].error;
  EXPECT_EQ(t[4].benchmark, "cceval-csharp");
  EXPECT_EQ(t[4].column, 23);
  EXPECT_NE(t[5].error.find("does not index"), std::string::npos) << t[5].error;  // read, and marked

  for (const std::string kind : {"line", "api", "function"}) {
    std::string p = tmp.str() + "/" + kind + "_level_completion_2k_context_codex.test.jsonl";
    std::ofstream(p)
        << R"json({"prompt": "def f():\n", "metadata": {"task_id": "huggingface_evaluate/3", "ground_truth": "    return compute(x)\n", "fpath_tuple": ["huggingface_evaluate", "src", "evaluate", "module.py"], "context_start_lineno": 0, "line_no": 41}})json"
        << "\n"
        << R"json({"prompt": "", "metadata": {"task_id": "huggingface_evaluate/4", "ground_truth": "x", "fpath_tuple": "module.py", "line_no": 2}})json"
        << "\n"
        << "not json\n";
    CompletionTaskLoadOptions ro;
    ro.repos["huggingface_evaluate"] = "/tmp/he";
    auto r = load_completion_tasks(p, ro);
    ASSERT_EQ(r.size(), 3u);
    EXPECT_EQ(r[0].repo, "/tmp/he");
    EXPECT_EQ(r[0].file, "src/evaluate/module.py");
    EXPECT_EQ(r[0].line, 42);
    EXPECT_EQ(r[0].column, 0);
    EXPECT_EQ(r[0].kind, kind);
    EXPECT_EQ(r[0].benchmark, "repoeval-" + kind);
    EXPECT_NE(r[1].error.find("fpath_tuple"), std::string::npos) << r[1].error;
    EXPECT_NE(r[2].error.find("not a JSON object"), std::string::npos) << r[2].error;
  }

  // repoctx's own layout round-trips through write/load.
  CompletionTask mine;
  mine.id = "flask/api/app.py:10";
  mine.benchmark = "flask-api";
  mine.kind = "api";
  mine.repo = "/usr/lib/python3/dist-packages/flask";
  mine.file = "app.py";
  mine.line = 10;
  mine.column = 8;
  mine.ground_truth = "return helper(x)";
  mine.definitions = {"helpers.py::helper"};
  std::string p = tmp.str() + "/mine.jsonl";
  write_completion_tasks(p, {mine, mine});
  auto back = load_completion_tasks(p, {});
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].definitions, mine.definitions);
  EXPECT_EQ(back[0].column, 8);
  EXPECT_NE(back[1].error.find("appears twice"), std::string::npos);
  EXPECT_THROW(load_completion_tasks(tmp.str() + "/none.jsonl", {}), Error);
}

// ------------------------------------------------------------------------------- repository fixture
const char* kStore =
    "class Store:\n"
    "    \"\"\"Rows kept in memory.\"\"\"\n"
    "\n"
    "    def __init__(self, rows):\n"
    "        self._rows = list(rows)\n"
    "\n"
    "    def fetch_rows(self, limit):\n"
    "        return self._rows[:limit]\n"
    "\n"
    "\n"
    "def open_store(path):\n"
    "    with open(path) as f:\n"
    "        return Store(f.read().split())\n";
const char* kReport =
    "from .store import Store, open_store\n"
    "from .fmt import render_table\n"
    "\n"
    "\n"
    "def summary(path, limit):\n"
    "    store = open_store(path)\n"
    "    rows = store.fetch_rows(limit)\n"
    "    total = len(rows)\n"
    "    header = 'rows: %d' % total\n"
    "    return render_table(header, rows)\n"
    "\n"
    "\n"
    "def detail(path):\n"
    "    store = open_store(path)\n"
    "    rows = store.fetch_rows(100)\n"
    "    lines = [str(r) for r in rows]\n"
    "    return render_table('detail', lines)\n"
    "\n"
    "\n"
    "def footer():\n"
    "    return 'end'\n";
const char* kFmt =
    "def render_table(header, rows):\n"
    "    out = [header]\n"
    "    for r in rows:\n"
    "        out.append('  ' + str(r))\n"
    "    return '\\n'.join(out)\n"
    "\n"
    "\n"
    "def render_line(text):\n"
    "    return text.strip()\n";

void write_fixture(const TempDir& repo) {
  repo.write("shop/__init__.py", "");
  repo.write("shop/store.py", kStore);
  repo.write("shop/report.py", kReport);
  repo.write("shop/fmt.py", kFmt);
}

std::unique_ptr<Engine> index_repo(const TempDir& repo, const TempDir& tmp, const std::string& name = "i.db") {
  IndexOptions o;
  o.db_path = tmp.str() + "/" + name;
  o.progress = false;
  build_index(repo.str(), o);
  return Engine::open(o.db_path);
}

std::string rows_of(const Engine& e, const std::vector<Hit>& hits) {
  std::string s;
  for (const auto& h : hits) {
    char score[64];
    std::snprintf(score, sizeof score, "%a", h.score);
    s += h.label + " " + e.view().files()[h.file].path + ":" + std::to_string(h.start_line) + "-" +
         std::to_string(h.end_line) + " " + score + "\n";
  }
  return s;
}

TEST(CompletionCursor, RetrievalEqualsRetrievalOnACopyCutAtTheCursor) {
  TempDir repo, tmp, copy, tmp2;
  write_fixture(repo);
  auto e = index_repo(repo, tmp);
  int file = *e->view().file_by_path("shop/report.py");
  Cursor c{file, 15, 4};  // inside detail(): "    rows = store.fetch_rows(100)" at its indentation
  auto ctx = make_cursor_context(*e, c);
  // The copy: the file holds only the text before the cursor.
  write_fixture(copy);
  copy.write("shop/report.py", ctx->unfinished);
  auto e2 = index_repo(copy, tmp2);
  int file2 = *e2->view().file_by_path("shop/report.py");
  std::string cut = e2->view().content(file2);
  auto s2 = line_starts(cut);
  Cursor c2{file2, static_cast<int>(s2.size()), static_cast<int>(cut.size() - s2.back())};
  auto ctx2 = make_cursor_context(*e2, c2);
  EXPECT_EQ(ctx->unfinished, ctx2->unfinished);
  RetrieverOptions ro;
  ro.completion.candidates = "none";
  ro.completion.model_path = "untrained";
  for (const std::string name : {"aligncoder-snippets", "aligncoder", "rlcoder", "reacc", "in-file"}) {
    RetrievalQuery q1, q2;
    q1.cursor = ctx;
    q2.cursor = ctx2;
    q1.top_k = q2.top_k = 30;
    auto h1 = make_retriever(name, *e, {}, ro)->retrieve(q1);
    auto h2 = make_retriever(name, *e2, {}, ro)->retrieve(q2);
    EXPECT_EQ(rows_of(*e, h1), rows_of(*e2, h2)) << name;
    if (name != "in-file") {
      EXPECT_FALSE(h1.empty()) << name;
      for (const auto& h : h1) EXPECT_NE(h.file, file) << name << ": the file itself is the query side";
    }
  }
  // The cut hides what follows: dependency snippets come from the imports before the cursor only.
  bool dep = false;
  for (const auto& d : ctx->dependencies) dep |= d.label == "class shop.store.Store";
  EXPECT_TRUE(dep);
}

TEST(CompletionCursor, PositionsOutsideTheFileAreBadInput) {
  TempDir repo, tmp;
  write_fixture(repo);
  auto e = index_repo(repo, tmp);
  int file = *e->view().file_by_path("shop/fmt.py");
  for (Cursor c : {Cursor{file, 0, 0}, Cursor{file, 99, 0}, Cursor{file, 1, 500}}) {
    try {
      make_cursor_context(*e, c);
      FAIL() << c.line << ":" << c.column;
    } catch (const Error& err) {
      EXPECT_EQ(err.code(), ExitCode::bad_input);
      EXPECT_NE(std::string(err.what()).find("shop/fmt.py"), std::string::npos) << err.what();
    }
  }
  EXPECT_EQ(query_window("a\n\nb\n  \nc\nd", 2), "c\nd");
  EXPECT_EQ(query_window("a\nb", 0), "a\nb");
}

// ------------------------------------------------------------------------------------------ builder
TEST(CompletionTasks, BuilderIsDeterministicAndKeepsAwayFromFileEdges) {
  TempDir repo, tmp;
  write_fixture(repo);
  auto e = index_repo(repo, tmp);
  CompletionBuildOptions o;
  o.kind = "both";
  o.margin_lines = 2;
  o.max_per_file = 10;
  o.min_tokens = 2;
  auto a = build_completion_tasks(*e, repo.str(), o);
  auto b = build_completion_tasks(*e, repo.str(), o);
  ASSERT_FALSE(a.empty());
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(completion_task_json(a[i]), completion_task_json(b[i]));
  o.seed = 42;
  auto c = build_completion_tasks(*e, repo.str(), o);
  std::set<std::string> ids_a, ids_c;
  for (const auto& t : a) ids_a.insert(t.id);
  for (const auto& t : c) ids_c.insert(t.id);
  EXPECT_EQ(ids_a, ids_c);  // every candidate fits here: the same set, in another order
  bool reordered = false;
  for (size_t i = 0; i < a.size(); ++i) reordered |= a[i].id != c[i].id;
  EXPECT_TRUE(reordered);
  int api = 0;
  for (const auto& t : a) {
    int n = e->view().files()[*e->view().file_by_path(t.file)].line_count;
    EXPECT_GT(t.line, o.margin_lines) << t.id;
    EXPECT_LE(t.line, n - o.margin_lines) << t.id;
    EXPECT_NO_THROW(task_cursor(*e, t)) << t.id;  // the file matches the task
    if (t.kind == "api") {
      ++api;
      ASSERT_FALSE(t.definitions.empty());
      for (const auto& d : t.definitions) EXPECT_NE(d.substr(0, d.find("::")), t.file) << "another file's definition";
    }
  }
  EXPECT_GT(api, 0);
  // A task whose file changed since is refused with the reason.
  CompletionTask bad = a.front();
  bad.ground_truth = "something else entirely";
  try {
    task_cursor(*e, bad);
    FAIL();
  } catch (const Error& err) {
    EXPECT_EQ(err.code(), ExitCode::bad_input);
    EXPECT_NE(std::string(err.what()).find("no longer matches"), std::string::npos);
  }
}

// The fixture's API completion tasks (cursor before a call of a definition in another file), small margins so
// that the small fixture yields some.
std::vector<CompletionTask> fixture_api_tasks(const Engine& e, const TempDir& repo) {
  CompletionBuildOptions bo;
  bo.kind = "api";
  bo.margin_lines = 2;
  bo.max_per_file = 10;
  bo.min_tokens = 2;
  return build_completion_tasks(e, repo.str(), bo);
}

// The retrieval measure's In-File baseline retrieves from the completed file alone, so it can never hold an
// API task's definition (always in another file), while BM25 over the cross-file codebase finds some.
TEST(CompletionRetrievalEval, InFileBaselineScoresItsOwnFileOnly) {
  TempDir repo, tmp;
  write_fixture(repo);
  auto e = index_repo(repo, tmp);
  auto tasks = fixture_api_tasks(*e, repo);
  ASSERT_FALSE(tasks.empty());
  RetrievalEvalOptions o;
  o.methods = {"bm25", "in-file"};
  o.bootstrap = 50;
  auto rep = run_completion_retrieval_eval(tasks, o, Models{}, [&](const std::string&) -> Engine& { return *e; });
  ASSERT_EQ(rep.overall.size(), 2u);
  EXPECT_EQ(rep.overall[1].method, "in-file");
  EXPECT_EQ(rep.overall[1].tasks, static_cast<int>(tasks.size()));
  EXPECT_EQ(rep.overall[1].hits, 0);
  EXPECT_GT(rep.overall[0].hits, 0);
  o.methods = {"bm25", "in-files"};
  EXPECT_THROW(run_completion_retrieval_eval(tasks, o, Models{}, [&](const std::string&) -> Engine& { return *e; }),
               Error);
}

// aligncoder@FILE: several model files in one paired run. A file holding the untrained encoder scores
// exactly as `untrained`; a file that cannot be read fails the run before any task, naming it.
TEST(CompletionRetrievalEval, ModelFilesAsMethodsInOneRun) {
  TempDir repo, tmp;
  write_fixture(repo);
  auto e = index_repo(repo, tmp);
  auto tasks = fixture_api_tasks(*e, repo);
  ASSERT_FALSE(tasks.empty());
  std::string file = tmp.str() + "/untrained.json";
  AlignEncoder().save(file);
  RetrievalEvalOptions o;
  o.methods = {"untrained", "aligncoder@" + file, "aligncoder-oracle@" + file, "untrained-oracle"};
  o.baseline = "untrained";
  o.bootstrap = 50;
  auto engine = [&](const std::string&) -> Engine& { return *e; };
  auto rep = run_completion_retrieval_eval(tasks, o, Models{}, engine);
  ASSERT_EQ(rep.overall.size(), 4u);
  EXPECT_EQ(rep.overall[1].method, "aligncoder@" + file);
  EXPECT_GT(rep.overall[0].hits, 0);
  EXPECT_EQ(rep.overall[1].hits, rep.overall[0].hits);
  EXPECT_EQ(rep.overall[1].diff, 0.0);
  EXPECT_EQ(rep.overall[2].hits, rep.overall[3].hits);
  o.methods = {"untrained", "aligncoder@" + tmp.str() + "/missing.json"};
  try {
    run_completion_retrieval_eval(tasks, o, Models{}, engine);
    FAIL() << "a missing model file was not reported";
  } catch (const Error& err) {
    EXPECT_EQ(err.code(), ExitCode::not_found);
    EXPECT_NE(std::string(err.what()).find("missing.json"), std::string::npos);
  }
}

// -------------------------------------------------------------------------------- query enhancement
TEST(QueryEnhancement, SamplesOnceThroughTheCacheWithThePaperSettings) {
  TempDir repo, tmp;
  write_fixture(repo);
  auto e = index_repo(repo, tmp);
  auto scripted = std::make_unique<ScriptedBackend>();
  ScriptedBackend* sb = scripted.get();
  std::vector<GenerateRequest> seen;
  sb->answers["aligncoder_sample"] = [&](const GenerateRequest& r) {
    seen.push_back(r);
    return std::string("rows = store.fetch_rows(limit)");
  };
  auto cache = std::make_shared<LlmCache>(tmp.str() + "/llm.db");
  CachedBackend cached(std::move(scripted), cache);
  Models m;
  m.llm = &cached;
  RetrieverOptions ro;
  ro.completion.model_path = "untrained";
  int file = *e->view().file_by_path("shop/report.py");
  RetrievalQuery q;
  q.cursor = make_cursor_context(*e, Cursor{file, 15, 4});
  q.top_k = 5;
  auto r1 = make_retriever("aligncoder", *e, m, ro)->run(q);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].n, 4);
  EXPECT_DOUBLE_EQ(seen[0].temperature, 0.8);
  EXPECT_DOUBLE_EQ(seen[0].top_p, 0.95);
  EXPECT_TRUE(seen[0].messages.empty());  // a raw completion prompt
  EXPECT_NE(seen[0].prompt.find("# file path: shop/"), std::string::npos);
  EXPECT_NE(seen[0].prompt.find("    store = open_store(path)"), std::string::npos);
  EXPECT_EQ(seen[0].prompt.find("fetch_rows(100)"), std::string::npos) << "the text after the cursor is absent";
  EXPECT_EQ(r1.trace["candidates_from"], "sampler");
  int calls = sb->total_calls;
  auto before = cache->stats();
  auto r2 = make_retriever("aligncoder", *e, m, ro)->run(q);
  auto after = cache->stats();
  EXPECT_EQ(sb->total_calls, calls) << "a re-run with the same seed makes no LLM call";
  EXPECT_EQ(after.misses, before.misses);
  EXPECT_GT(after.hits, before.hits);
  EXPECT_EQ(r2.trace["candidates_from"], "cache");
  EXPECT_EQ(rows_of(*e, r1.hits), rows_of(*e, r2.hits));
  // Another seed is another request.
  ro.completion.seed = 5;
  make_retriever("aligncoder", *e, m, ro)->run(q);
  EXPECT_EQ(sb->total_calls, calls + 1);
  // Without an LLM, sampling is a usage error naming the way out; candidates=none needs none.
  EXPECT_THROW(make_retriever("aligncoder", *e, {}, ro), Error);
  ro.completion.candidates = "none";
  EXPECT_NO_THROW(make_retriever("aligncoder", *e, {}, ro)->run(q));
}

// ------------------------------------------------------------------------------------------ training
TEST(AlignTraining, OverlapLabelPrefersTheDefinition) {
  std::vector<std::string> c = {"x = 1\nrows = 2\n", "def fetch_rows(self, limit):\n    return self._rows\n",
                                "store.fetch_rows(3)\n"};
  EXPECT_EQ(overlap_label("rows = store.fetch_rows(limit)", c), 1);
  EXPECT_EQ(overlap_label("return None", c), -1);  // keywords only: nothing to match
  EXPECT_EQ(overlap_label("zzz_unknown()", c), -1);
}

// The fixture of write_fixture with more files, so that clusters and targets exist in numbers.
void write_training_fixture(TempDir& repo, int views = 4) {
  write_fixture(repo);
  for (int i = 0; i < views; ++i)
    repo.write("shop/view" + std::to_string(i) + ".py",
               std::string("from .report import summary, detail\nfrom .fmt import render_line\n\n\n") + "def page" +
                   std::to_string(i) + "(path):\n    head = summary(path, 10)\n    body = detail(path)\n" +
                   "    tail = render_line(head)\n    text = head + body + tail\n    lines = text.split()\n" +
                   "    first = lines[0]\n    last = lines[-1]\n    return render_line(first + last)\n\n\n" +
                   "def other" + std::to_string(i) + "():\n    return page" + std::to_string(i) + "('x')\n");
}

AlignTrainOptions small_training(const std::string& out) {
  AlignTrainOptions o;
  o.samples_per_epoch = 24;
  o.batch = 4;
  o.epochs = 3;
  o.encoder.dim = 32;
  o.encoder.vocab = 64;
  o.candidates_per_query = 4;
  o.min_target_tokens = 4;
  o.max_target_tokens = 12;
  o.out_path = out;
  return o;
}

TEST(AlignTraining, ResumingGivesTheSameModelAsOneRunAndCtrlCKeepsTheCheckpoint) {
  TempDir repo, tmp;
  write_training_fixture(repo);
  auto e = index_repo(repo, tmp);
  EXPECT_GE(training_files(*e).size(), 4u);
  std::vector<TrainingRepo> repos = {{"shop", e.get()}};
  AlignTrainOptions o = small_training(tmp.str() + "/straight.json");
  auto straight = train_aligncoder(repos, o, {});
  EXPECT_EQ(straight.epochs.size(), 3u);
  for (const auto& ep : straight.epochs) EXPECT_GT(ep.samples, 0);
  // Two epochs, then a third in another call.
  o.out_path = tmp.str() + "/resumed.json";
  o.epochs = 2;
  train_aligncoder(repos, o, {});
  // Ctrl-C during the third epoch: the error says so, and the checkpoint of epoch 2 stays.
  o.epochs = 3;
  g_interrupted = true;
  try {
    train_aligncoder(repos, o, {});
    g_interrupted = false;
    FAIL() << "training ignored the interruption";
  } catch (const Error& err) {
    g_interrupted = false;
    EXPECT_EQ(err.code(), ExitCode::interrupted);
  }
  auto rep = train_aligncoder(repos, o, {});
  EXPECT_EQ(rep.resumed_from, 2);
  EXPECT_EQ(rep.epochs.size(), 1u);
  auto a = AlignEncoder::load(tmp.str() + "/straight.json"), b = AlignEncoder::load(tmp.str() + "/resumed.json");
  ASSERT_EQ(a.params().size(), b.params().size());
  EXPECT_EQ((a.params() - b.params()).norm(), 0.0) << "resumed training differs from one run";
  // Other options do not resume silently.
  o.seed = 3;
  EXPECT_THROW(train_aligncoder(repos, o, {}), Error);
}

// --balance-repos: each repository drawn equally often, whatever its number of eligible files.
TEST(AlignTraining, BalancedSamplingDrawsEachRepositoryEquallyOften) {
  TempDir big, small, tmp, tmp2;
  write_training_fixture(big, 12);
  write_fixture(small);
  auto eb = index_repo(big, tmp);
  auto es = index_repo(small, tmp2);
  size_t nb = training_files(*eb).size(), ns = training_files(*es).size();
  ASSERT_GE(ns, 1u);
  ASSERT_GE(nb, 3 * ns);
  std::vector<TrainingRepo> repos = {{"big", eb.get()}, {"small", es.get()}};
  auto share_of_small = [&](bool balance) {
    AlignTrainOptions o = small_training("unused");
    o.samples_per_epoch = 400;
    o.balance_repos = balance;
    auto samples = build_samples(repos, o, {}, 0);
    std::map<std::string, double> drawn;
    for (const auto& s : samples) drawn[s.repo] += 1;
    return drawn["small"] / static_cast<double>(samples.size());
  };
  double by_file = share_of_small(false), by_repo = share_of_small(true);
  EXPECT_LT(by_file, 0.35) << nb << " vs " << ns << " eligible files";
  EXPECT_GT(by_repo, 0.35);
  EXPECT_GT(by_repo, by_file + 0.1);
}

// Early stopping on validation repositories: the model file holds the epoch with the lowest validation
// loss, the untrained encoder (epoch 0) when no epoch beats it, and training stops after `patience` epochs
// without improvement; a repository may not be both training and validation.
TEST(AlignTraining, ValidationKeepsTheBestEpochAndStopsEarly) {
  TempDir repo, val_repo, tmp, tmp2;
  write_training_fixture(repo);
  write_training_fixture(val_repo);
  auto e = index_repo(repo, tmp);
  auto v = index_repo(val_repo, tmp2);
  std::vector<TrainingRepo> repos = {{"shop", e.get()}}, validation = {{"shop-val", v.get()}};
  AlignTrainOptions o = small_training(tmp.str() + "/frozen.json");
  o.epochs = 5;
  o.patience = 2;
  o.val_samples = 24;
  // An infinite pull: no epoch changes the encoder, so none beats epoch 0, and training stops after 2.
  o.l2_init = INFINITY;
  auto frozen = train_aligncoder(repos, o, {}, validation);
  EXPECT_GT(frozen.val_loss0, 0.0);
  EXPECT_EQ(frozen.best_epoch, 0);
  EXPECT_TRUE(frozen.stopped_early);
  EXPECT_EQ(frozen.epochs.size(), 2u);
  EXPECT_EQ(AlignEncoder::load(o.out_path).params().norm(), 0.0);
  // Free training at lr 0.01 overfits this tiny fixture: validation gets worse from epoch 1, so the model
  // file keeps the untrained encoder although the checkpoint's has moved.
  o.l2_init = 0;
  o.out_path = tmp.str() + "/overfit.json";
  auto overfit = train_aligncoder(repos, o, {}, validation);
  EXPECT_EQ(overfit.best_epoch, 0);
  EXPECT_TRUE(overfit.stopped_early);
  for (const auto& ep : overfit.epochs) EXPECT_GT(ep.val_loss, overfit.val_loss0);
  EXPECT_EQ(AlignEncoder::load(o.out_path).params().norm(), 0.0);
  {
    std::ifstream in(o.out_path + ".ckpt");
    auto moved = AlignEncoder::from_json(nlohmann::json::parse(in).at("model"), "ckpt");
    EXPECT_GT(moved.params().norm(), 0.0);
  }
  // At lr 0.003 validation improves, and the file holds the best epoch's encoder.
  o.l2_init = 0;
  o.lr = 0.003;
  o.out_path = tmp.str() + "/free.json";
  auto free = train_aligncoder(repos, o, {}, validation);
  ASSERT_GE(free.best_epoch, 1);
  const EpochReport& best = free.epochs[static_cast<size_t>(free.best_epoch - 1)];
  EXPECT_TRUE(best.best);
  EXPECT_LT(best.val_loss, free.val_loss0);
  for (const auto& ep : free.epochs) EXPECT_GE(ep.val_loss, best.val_loss);
  AlignEncoder saved = AlignEncoder::load(o.out_path);
  EXPECT_GT(saved.params().norm(), 0.0);
  EXPECT_EQ(saved.provenance.at("epochs").get<int>(), free.best_epoch);
  // Training and validation share a repository: a usage error.
  std::vector<TrainingRepo> same = {{"shop", v.get()}};
  EXPECT_THROW(train_aligncoder(repos, o, {}, same), Error);
}

}  // namespace

// Eq. 23-24 labels: the snippet whose prompt (the enhanced query: its sampled candidates, and the one
// snippet) gives the target the lowest perplexity. The scripted model's perplexity is low exactly when the
// prompt shows the definition of render_line; the label must be a snippet defining it (argmax would pick one
// that does not), and every scored prompt must hold the sampled candidate.
TEST(AlignTraining, PerplexityLabelsPickTheLowestPerplexityWithTheSampledCandidatesInThePrompt) {
  TempDir repo, tmp;
  write_training_fixture(repo);
  auto e = index_repo(repo, tmp);
  std::vector<TrainingRepo> repos = {{"shop", e.get()}};
  ScriptedBackend llm;
  llm.answers["aligncoder_sample"] = [](const GenerateRequest&) { return std::string("zqsampled = detail(path)"); };
  int asked = 0, without_candidate = 0;
  llm.logprob_fn = [&](const LogprobRequest& r) {
    ++asked;
    if (r.prompt.find("zqsampled = detail(path)") == std::string::npos) ++without_candidate;
    LogprobResult out;
    bool low = r.prompt.find("def render_line") != std::string::npos;
    double spread = static_cast<double>(std::hash<std::string>{}(r.prompt) % 7) * 0.1;
    out.logprobs = {low ? -0.1 : -2.0 - spread, low ? -0.1 : -1.5};
    return out;
  };
  Models m;
  m.llm = &llm;
  AlignTrainOptions o = small_training(tmp.str() + "/ppl.json");
  o.labels = "ppl";
  o.query = "enhanced";
  o.candidate_source = "sample";
  o.candidate_rate = 1.0;
  o.completion.samples = 2;
  auto samples = build_samples(repos, o, m, 0);
  ASSERT_FALSE(samples.empty());
  EXPECT_GT(asked, 0);
  EXPECT_EQ(without_candidate, 0) << "a perplexity prompt left out the enhanced query's candidates";
  uint64_t render_line = 0;
  for (const auto& t : code_tokens("def render_line(x):"))
    if (t.whole && t.role == TokenRole::definition) render_line = t.id;
  ASSERT_NE(render_line, 0u);
  auto defines = [&](const FeatureBag& b) {
    for (size_t i = 0; i < b.size(); ++i)
      if (b.ids[i] == render_line)
        for (uint32_t k = b.begin[i]; k < b.begin[i + 1]; ++k)
          if (b.entries[k].first % kRoles == static_cast<int>(TokenRole::definition)) return true;
    return false;
  };
  int informative = 0;
  for (const auto& s : samples) {
    if (s.file == "shop/fmt.py") continue;  // its own code shows the definition to every prompt
    int defining = 0;
    for (const auto& d : s.docs) defining += defines(d);
    if (defining == 0 || defining == static_cast<int>(s.docs.size())) continue;  // every label would do
    ++informative;
    EXPECT_TRUE(defines(s.docs[static_cast<size_t>(s.label)]))
        << s.file << ":" << s.line << ": the label is not the lowest-perplexity snippet";
  }
  EXPECT_GT(informative, 0) << "no sample had both kinds of snippet: the check checked nothing";
}

// RepoCoder as its paper defines it: windows of the other files (query_lines lines, sliding by half), scored
// by the Jaccard index of alphanumeric token sets, best first; the second round's query is the unfinished
// code with the first round's completion appended. The scores are recomputed here with an independent
// tokenizer (std::regex-free: split on anything not [A-Za-z0-9]).
TEST(RepoCoder, SlidingWindowsScoredByJaccardWithTheCompletionInTheSecondRound) {
  TempDir repo, tmp;
  write_training_fixture(repo);
  auto e = index_repo(repo, tmp);
  ScriptedBackend llm;
  llm.answers["repocoder_generate"] = [](const GenerateRequest&) { return std::string("render_table(header, rows)"); };
  Models m;
  m.llm = &llm;
  RetrieverOptions ro;
  ro.completion.query_lines = 4;
  auto r = make_retriever("repocoder", *e, m, ro);
  int file = *e->view().file_by_path("shop/view1.py");
  RetrievalQuery q;
  q.cursor = make_cursor_context(*e, Cursor{file, 8, 4});
  q.top_k = 5;
  auto res = r->run(q);
  ASSERT_FALSE(res.hits.empty());
  ASSERT_EQ(res.trace["rounds"].size(), 2u);
  EXPECT_EQ(res.trace["rounds"][0]["completion"], "render_table(header, rows)");
  auto tokens = [](const std::string& s) {
    std::set<std::string> out;
    std::string w;
    for (char c : s) {
      if (std::isalnum(static_cast<unsigned char>(c))) {
        w += c;
      } else if (!w.empty()) {
        out.insert(w);
        w.clear();
      }
    }
    if (!w.empty()) out.insert(w);
    return out;
  };
  auto query = tokens(query_window(q.cursor->unfinished + "render_table(header, rows)", 4));
  double last = 2;
  for (const auto& h : res.hits) {
    EXPECT_EQ(h.label, "window");
    EXPECT_NE(h.file, file) << "the cursor's own file is never a result";
    EXPECT_LE(h.end_line - h.start_line + 1, 4);
    EXPECT_EQ((h.start_line - 1) % 2, 0) << "windows slide by half their length";
    auto w = tokens(h.text);
    size_t both = 0;
    for (const auto& t : w) both += query.count(t);
    double jac = static_cast<double>(both) / static_cast<double>(w.size() + query.size() - both);
    EXPECT_NEAR(h.score, jac, 1e-12) << h.text;
    EXPECT_LE(h.score, last);
    last = h.score;
  }
  // The best window is the same code in a sibling view (RepoCoder finds similar code, not definitions).
  EXPECT_EQ(e->view().files()[res.hits[0].file].path.rfind("shop/view", 0), 0u);
  EXPECT_EQ(res.hits[0].start_line, 5);
}
