#!/usr/bin/env python3
"""Leave-one-repository-out (`repoctx eval-loro`, issue 19) on real libraries: its plumbing, checked
against the commands it stands for.

    loro_protocol.py --repoctx BIN REPO1 REPO2 REPO3 [--samples N]

For each held-out repository H the fold's model must have been fitted on exactly the other repositories'
samples (never H's): its provenance and the fold's `trained_on` name only the others, its training target
count is the sum of theirs, and its weights equal those of `repoctx train-structural OTHERS` with the same
samples and seed. Its scores on H must equal `repoctx eval H --structural-model <fold model>` on the same
targets, the baseline rows must equal `repoctx eval H --strategies same-file`, and the mean row must be the
mean of the folds. Fewer than two repositories is a usage error (exit 2). All of it holds for both rankers:
the linear model and the gradient-boosted trees (`--ranker gbdt`, whose fold trees must equal
train-structural's byte for byte: training is deterministic).
"""
import argparse
import json
import os
import sys

from _util import Checker, TempDir, main_wrapper, run, run_json

KS = ("recall@1", "recall@5", "recall@10", "recall@20", "mrr")


def close(a, b, tol=1e-9):
    return abs(a - b) <= tol * max(1.0, abs(a), abs(b))


def same_model(fold_model, ref_model):
    if fold_model.get("ranker") == "gbdt":
        return fold_model["xgboost"] == ref_model["xgboost"] and fold_model["params"] == ref_model["params"]
    return len(fold_model["weights"]) == len(ref_model["weights"]) and all(
        close(x, y, 1e-6) for x, y in zip(fold_model["weights"], ref_model["weights"]))


def check_ranker(ck, args, work, ranker):
    b, repos, n = args.repoctx, [os.path.realpath(r) for r in args.repos], str(args.samples)
    opts = ["--ranker", ranker] + (["--trees", "20"] if ranker == "gbdt" else [])
    work = os.path.join(work, ranker)
    models = os.path.join(work, "folds")
    shipped = os.path.join(work, "all.json")
    rep = run_json(b, ["eval-loro", *repos, "--samples", n, "--baselines", "same-file", "--models-dir", models,
                       "--write-model", shipped, "--json", "-q", *opts], timeout=1800)
    folds = rep["folds"]
    ck.check([f["repo"] for f in folds] == args.repos, "one fold per repository, in order",
             str([f["repo"] for f in folds]))
    targets = {f["name"]: f["targets"] for f in folds}
    for i, f in enumerate(folds):
        name, held = f["name"], f["repo"]
        others = [r for j, r in enumerate(repos) if j != i]
        ck.check(f["targets"] > 0, f"{name}: has targets", str(f["targets"]))
        ck.check([os.path.realpath(r) for r in f["trained_on"]] == others,
                 f"{name}: trained on exactly the other repositories", str(f["trained_on"]))
        want = sum(t for k, t in targets.items() if k != name)
        ck.check(f["train_targets"] == want, f"{name}: training targets = the others' targets",
                 f"{f['train_targets']} != {want}")
        with open(os.path.join(models, name + ".json")) as fh:
            fold_model = json.load(fh)
        prov = [os.path.realpath(r) for r in fold_model["provenance"]["trained_on"]]
        ck.check(os.path.realpath(held) not in prov and prov == others,
                 f"{name}: the fold model's provenance leaves the held-out repository out", str(prov))
        # The fold model is the model train-structural fits on the other repositories alone.
        ref = os.path.join(work, "ref-" + name + ".json")
        run_json(b, ["train-structural", *others, "--samples", n, "--seed", "1", "-o", ref, "--json", "-q",
                     *opts], timeout=1800)
        with open(ref) as fh:
            ref_model = json.load(fh)
        ck.check(fold_model.get("ranker", "linear") == ranker and same_model(fold_model, ref_model),
                 f"{name} ({ranker}): fold model = train-structural on the others",
                 str(fold_model.get("weights", [])[:4]) + " vs " + str(ref_model.get("weights", [])[:4]))
        # Its scores on the held-out repository are those of `repoctx eval` with that model.
        ev = run_json(b, ["eval", held, "--strategies", "same-file,structural", "--samples", n, "--seed", "1",
                          "--structural-model", os.path.join(models, name + ".json"), "--json", "-q"],
                      timeout=1800)[0]
        by = {s["strategy"]: s for s in ev["strategies"]}
        loro = {s["strategy"]: s for s in f["strategies"]}
        for strat, label in (("structural", "structural (LORO)"), ("same-file", "same-file")):
            diff = [(k, loro[label][k], by[strat][k]) for k in KS if not close(loro[label][k], by[strat][k])]
            ck.check(not diff and ev["targets"] == f["targets"],
                     f"{name}: {label} scores = `repoctx eval` on the same targets", str(diff))
    for m in rep["mean"]:
        rows = [s for f in folds for s in f["strategies"] if s["strategy"] == m["strategy"]]
        ck.check(len(rows) == len(folds) and all(
            close(m[k], sum(r[k] for r in rows) / len(rows)) for k in KS),
                 f"mean row of {m['strategy']} = mean of the folds")
    with open(shipped) as fh:
        prov = [os.path.realpath(r) for r in json.load(fh)["provenance"]["trained_on"]]
    ck.check(prov == repos, f"--write-model ({ranker}): the model to ship is trained on every repository",
             str(prov))


def body(args):
    ck = Checker()
    with TempDir("repoctx-loro-") as work:
        for ranker in ("linear", "gbdt"):
            check_ranker(ck, args, work, ranker)
        p = run(args.repoctx, ["eval-loro", args.repos[0], "--samples", str(args.samples)])
        ck.check(p.returncode == 2 and "at least two" in p.stderr, "one repository: usage error (exit 2)",
                 f"rc={p.returncode} {p.stderr[-300:]}")
        p = run(args.repoctx, ["eval-loro", *args.repos[:2], "--samples", "5", "--neighbours", "-1"])
        ck.check(p.returncode == 2 and "--neighbours" in p.stderr, "--neighbours -1: usage error (exit 2)",
                 f"rc={p.returncode} {p.stderr[-300:]}")
    return ck.finish("loro_protocol")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repoctx", required=True)
    ap.add_argument("repos", nargs="+")
    ap.add_argument("--samples", type=int, default=30)
    args = ap.parse_args()
    sys.exit(main_wrapper("loro_protocol", lambda: body(args)))


if __name__ == "__main__":
    main()
