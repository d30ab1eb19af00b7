// eval, train-structural, rq2: retrieval quality without an LLM, the structural model's training, and
// ProjAgent's RQ2 table.
#include <fmt/core.h>

#include <filesystem>
#include <iostream>

#include "cli/commands.h"
#include "cli/common.h"
#include "eval/loro.h"
#include "eval/retrieval_eval.h"
#include "eval/rq2.h"
#include "eval/rq2_label.h"
#include "eval/train_structural.h"
#include "util/error.h"
#include "util/log.h"

using nlohmann::json;

namespace repoctx {
namespace {

struct EvalCmd {
  OutputOptions out;
  ModelOptions models;
  std::vector<std::string> repos;
  std::string strategies = "sparse,same-file,imports,structural";
  EvalOptions eo;
  std::vector<std::string> params;

  int run() {
    apply_params(eo.retriever, params);
    eo.strategies = split_list(strategies);
    ModelNeeds needs;
    for (const auto& s : eo.strategies) needs |= retriever_info(s).needs;
    ModelSet ms = open_models(models, needs);
    std::vector<EvalReport> reports;
    json all = json::array();
    for (const auto& repo : repos) {
      RepoOptions r;
      r.repo = repo;
      auto eng = open_engine(r, out);
      EvalReport rep = run_retrieval_eval(*eng, ms.models, eo);
      json j = {{"repo", repo}, {"targets", rep.candidates}, {"mean_oracle_size", rep.mean_oracle}};
      for (const auto& s : rep.scores) {
        json sj = {{"strategy", s.strategy}, {"mrr", s.mrr}, {"ms_p50", s.ms_p50}, {"ms_mean", s.ms_mean}};
        for (const auto& [k, r] : s.recall) sj["recall@" + std::to_string(k)] = r;
        j["strategies"].push_back(sj);
      }
      all.push_back(j);
      reports.push_back(std::move(rep));
    }
    if (out.json)
      print_json(all);
    else
      std::cout << eval_markdown(reports, eo.ks);
    return 0;
  }
};

struct TrainStructuralCmd {
  OutputOptions out;
  std::vector<std::string> repos;
  TrainOptions to;
  std::string model_out = "models/structural.json";

  int run() const {
    std::vector<std::unique_ptr<Engine>> engines;
    std::vector<const Engine*> ptrs;
    for (const auto& repo : repos) {
      RepoOptions r;
      r.repo = repo;
      engines.push_back(open_engine(r, out));
      ptrs.push_back(engines.back().get());
    }
    TrainReport rep;
    auto m = train_structural(ptrs, to, &rep);
    write_file(model_out, m->to_json() + "\n");
    if (out.json)
      print_json({{"targets", rep.targets},
                  {"rows", rep.rows},
                  {"positives", rep.positives},
                  {"repositories", rep.repos},
                  {"log_loss", rep.log_loss},
                  {"model", model_out}});
    else if (!out.quiet)
      fmt::print(stderr,
                 "trained on {} targets ({} rows, {} positives) from {} repositories; log loss {:.4f}; wrote {}\n",
                 rep.targets, rep.rows, rep.positives, rep.repos.size(), rep.log_loss, model_out);
    return 0;
  }
};

// ---- leave-one-repository-out evaluation of the structural model
// The ranker and its gradient-boosted trees' hyperparameters, shared by train-structural and eval-loro.
void add_ranker_options(CLI::App* c, TrainOptions& to) {
  c->add_option("--ranker", to.ranker, "ranking model: linear (listwise/logistic) or gbdt (gradient-boosted trees)")
      ->check(CLI::IsMember({"linear", "gbdt"}))
      ->capture_default_str();
  c->add_option("--objective", to.gbdt.objective, "gbdt ranking objective")
      ->check(CLI::IsMember({"rank:ndcg", "rank:pairwise", "rank:map"}))
      ->capture_default_str();
  c->add_option("--trees", to.gbdt.trees, "gbdt boosting rounds")->check(CLI::Range(1, 100000))->capture_default_str();
  c->add_option("--depth", to.gbdt.max_depth, "gbdt maximum tree depth")
      ->check(CLI::Range(1, 20))
      ->capture_default_str();
  c->add_option("--eta", to.gbdt.eta, "gbdt learning rate")->check(CLI::Range(1e-6, 1.0))->capture_default_str();
  c->add_option("--min-child-weight", to.gbdt.min_child_weight, "gbdt minimum hessian per leaf")
      ->check(CLI::Range(0.0, 1e6))
      ->capture_default_str();
  c->add_option("--gbdt-threads", to.gbdt.nthread, "gbdt training threads (1 = deterministic on any machine)")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
}

struct LoroCmd {
  OutputOptions out;
  ModelOptions models;
  std::vector<std::string> repos;
  std::string baselines = "sparse,same-file,imports";
  std::string models_dir, write_model;
  LoroOptions lo;

  int run() {
    lo.baselines = split_list(baselines);
    ModelNeeds needs;
    for (const auto& s : lo.baselines) needs |= retriever_info(s).needs;
    ModelSet ms = open_models(models, needs);
    auto open = [&](const std::string& repo) {
      RepoOptions r;
      r.repo = repo;
      return open_engine(r, out);
    };
    if (!models_dir.empty()) std::filesystem::create_directories(models_dir);
    LoroReport rep = run_loro(repos, open, ms.models, lo);
    if (!models_dir.empty())
      for (const auto& f : rep.folds) write_file(models_dir + "/" + f.name + ".json", f.model->to_json() + "\n");
    if (!write_model.empty()) write_file(write_model, rep.all->to_json() + "\n");
    if (out.json)
      std::cout << loro_json(rep) << "\n";
    else
      std::cout << loro_markdown(rep);
    return 0;
  }
};

void add_loro_command(CLI::App& app, Commands& out) {
  auto l = std::make_shared<LoroCmd>();
  auto* c = app.add_subcommand("eval-loro",
                               "leave-one-repository-out: for each repository, train the structural model on the "
                               "others and score it on that one, next to the baselines on the same targets");
  c->add_option("repos", l->repos, "repositories (at least two)")->required();
  c->add_option("--samples", l->lo.samples, "targets per repository")->capture_default_str();
  c->add_option("--seed", l->lo.seed, "sampling seed")->capture_default_str();
  c->add_option("--baselines", l->baselines, "comma-separated strategies scored on the same targets (may be empty)")
      ->capture_default_str();
  c->add_flag("--include-tests", l->lo.include_tests, "also sample functions from test files");
  c->add_option("--l2", l->lo.train.l2, "L2 regularisation")->capture_default_str();
  c->add_option("--negatives", l->lo.train.negatives, "negatives kept per training target (logistic loss)")
      ->capture_default_str();
  c->add_option("--loss", l->lo.train.loss, "training loss")
      ->check(CLI::IsMember({"listwise", "logistic"}))
      ->capture_default_str();
  c->add_option("--models-dir", l->models_dir, "write each fold's model to DIR/<repository name>.json");
  c->add_option("--write-model", l->write_model, "write the model trained on every repository (the one to ship)");
  c->add_option("--neighbours", l->lo.train.params.neighbours,
                "similar functions whose references vote (the retriever's --neighbours)")
      ->check(CLI::Range(0, 100000))
      ->capture_default_str();
  c->add_option("--cascade-keep", l->lo.train.params.cascade.keep,
                "rank held-out pools as the retriever does: candidates past this many by the first trees stay "
                "below (the retriever's structural_cascade_keep; 0 = every tree for every candidate)")
      ->capture_default_str();
  c->add_option("--samples-out", l->lo.samples_out, "write every target's candidate rows (label, features) as JSONL");
  add_ranker_options(c, l->lo.train);
  add_output_options(c, l->out);
  add_model_options(c, l->models);
  out.push_back({c, [l] { return l->run(); }});
}
// ---- end of the leave-one-repository-out evaluation

struct Rq2LabelCmd {
  OutputOptions out;
  ModelOptions models;
  std::string pairs, labels;
  Rq2LabelOptions lo;

  int run() {
    auto all = read_rq2_pairs(pairs);
    LlmSession session(llm_config(models));
    LlmBackend& llm = session.models(ModelNeeds{.llm = true}).need_llm("rq2-label");
    if (!out.quiet) log_info("rq2-label: {} pairs, labelled by {}", all.size(), llm.identity());
    auto rep = label_rq2_pairs(llm, all, labels, lo);
    for (const auto& e : rep.errors) log_warn("rq2-label: no usable verdict for {}", e);
    json j = {{"pairs", rep.pairs},
              {"reused", rep.reused},
              {"labelled", rep.labelled},
              {"similar", rep.similar},
              {"unusable", rep.unusable},
              {"labels", labels},
              {"llm_calls", rep.usage.total().calls},
              {"llm_cached", rep.usage.total().cached}};
    if (out.json)
      print_json(j);
    else
      fmt::print("{} pairs: {} labelled now ({} similar), {} already labelled, {} without a usable answer -> {}\n",
                 rep.pairs, rep.labelled, rep.similar, rep.reused, rep.unusable, labels);
    // Pairs without a verdict stay unlabelled (rq2 counts them as such); the exit status says so.
    return rep.unusable > 0 ? static_cast<int>(ExitCode::llm) : 0;
  }
};

struct Rq2Cmd {
  OutputOptions out;
  std::string pairs, labels, agreement;
  std::vector<std::string> configs;

  int run() const {
    std::vector<Rq2Config> cfgs;
    for (const auto& c : configs) {
      auto colon = c.find(':');
      char* end = nullptr;
      Rq2Config rc;
      rc.name = c;
      if (colon != std::string::npos) {
        rc.tau = std::strtod(c.c_str(), &end);
        rc.k = std::atoi(c.c_str() + colon + 1);
      }
      if (colon == std::string::npos || end != c.c_str() + colon || rc.k < 1)
        throw Error(ExitCode::usage, "--config takes TAU:K, e.g. 0.65:2, got '" + c + "'");
      cfgs.push_back(rc);
    }
    if (!agreement.empty()) {
      auto ag = rq2_agreement(read_rq2_labels(labels), read_rq2_labels(agreement));
      if (out.json)
        print_json({{"pairs", ag.pairs}, {"observed", ag.observed}, {"kappa", ag.kappa}});
      else
        fmt::print("{} pairs labelled in both: observed agreement {:.3f}, Cohen's kappa {:.3f}\n", ag.pairs,
                   ag.observed, ag.kappa);
      return 0;
    }
    auto rep = evaluate_rq2(read_rq2_pairs(pairs), read_rq2_labels(labels), cfgs.empty() ? rq2_paper_configs() : cfgs);
    if (!out.json) {
      std::cout << rq2_markdown(rep);
      return 0;
    }
    auto group = [](const Rq2Group& g) {
      return json{{"pairs", g.pairs}, {"precision", g.precision}, {"recall", g.recall}, {"f1", g.f1}};
    };
    json rows = json::array();
    for (const auto& r : rep.rows)
      rows.push_back({{"config", r.config.name},
                      {"tau", r.config.tau},
                      {"k", r.config.k},
                      {"promoted", group(r.promoted)},
                      {"leftover", group(r.leftover)}});
    print_json({{"pairs", rep.pairs}, {"labelled", rep.labelled}, {"best_row", rep.best_row}, {"rows", rows}});
    return 0;
  }
};

}  // namespace

void add_eval_commands(CLI::App& app, Commands& out) {
  auto e = std::make_shared<EvalCmd>();
  auto* c =
      app.add_subcommand("eval", "LLM-free retrieval quality: Recall@k and MRR against the symbols real bodies use");
  c->add_option("repos", e->repos, "repositories to evaluate on")->required();
  c->add_option("--strategies", e->strategies, "comma-separated strategies")->capture_default_str();
  c->add_option("--samples", e->eo.samples, "targets per repository")->capture_default_str();
  c->add_option("--seed", e->eo.seed, "sampling seed")->capture_default_str();
  c->add_flag("--include-tests", e->eo.include_tests, "also sample functions from test files");
  c->add_option("--structural-model", e->eo.retriever.model_path,
                "structural: weights file (default: the shipped model)");
  c->add_option("--param", e->params,
                "strategy NAME=VALUE as for `retrieve --param`, e.g. imports_order=bm25, hybrid_fusion=none");
  add_output_options(c, e->out);
  add_model_options(c, e->models);
  out.push_back({c, [e] { return e->run(); }});

  auto t = std::make_shared<TrainStructuralCmd>();
  c = app.add_subcommand("train-structural", "train the structural strategy's ranking model on repositories");
  c->add_option("repos", t->repos, "training repositories (keep evaluation repositories out)")->required();
  c->add_option("--samples", t->to.samples, "targets per repository")->capture_default_str();
  c->add_option("--seed", t->to.seed, "sampling seed")->capture_default_str();
  c->add_option("--l2", t->to.l2, "L2 regularisation")->capture_default_str();
  c->add_option("--loss", t->to.loss, "training loss")
      ->check(CLI::IsMember({"listwise", "logistic"}))
      ->capture_default_str();
  c->add_option("--negatives", t->to.negatives, "negatives kept per training target (<= 0: all, gbdt only)")
      ->capture_default_str();
  add_ranker_options(c, t->to);
  c->add_option("-o,--out", t->model_out, "model file to write")->capture_default_str();
  add_output_options(c, t->out);
  out.push_back({c, [t] { return t->run(); }});

  add_loro_command(app, out);

  auto r = std::make_shared<Rq2Cmd>();
  c = app.add_subcommand("rq2",
                         "ProjAgent RQ2 (Table 3): precision, recall, F1 of (tau, k) configurations over labelled "
                         "pairs written by `retrieve --strategy procedural --rq2-pairs`");
  c->add_option("--pairs", r->pairs, "pairs file (JSONL)")->required();
  c->add_option("--labels", r->labels, "labels file (JSONL: target_step, context_step, similar)")->required();
  c->add_option("--config", r->configs, "TAU:K (repeatable; default: the paper's A-F)");
  c->add_option("--agreement", r->agreement,
                "another labels file: print the observed agreement and Cohen's kappa with --labels instead");
  add_output_options(c, r->out);
  out.push_back({c, [r] { return r->run(); }});

  auto l = std::make_shared<Rq2LabelCmd>();
  c = app.add_subcommand("rq2-label",
                         "ProjAgent RQ2's labelling stage: an LLM judges each pair of a pairs file procedurally "
                         "similar or not (prompts/rq2_label.txt), appending to a labels file `rq2` reads");
  c->add_option("--pairs", l->pairs, "pairs file (JSONL, from `retrieve --strategy procedural --rq2-pairs`)")
      ->required();
  c->add_option("--labels", l->labels, "labels file to append to (pairs already in it are skipped)")->required();
  c->add_option("--max-tokens", l->lo.max_tokens, "tokens per verdict")->capture_default_str();
  c->add_option("--snippet-chars", l->lo.snippet_chars, "the context snippet is cut here")->capture_default_str();
  add_output_options(c, l->out);
  add_model_options(c, l->models);
  out.push_back({c, [l] { return l->run(); }});
}

}  // namespace repoctx
