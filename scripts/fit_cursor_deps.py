#!/usr/bin/env python3
"""Fits cursor-deps' ranking weights on the hits `complete-retrieval-eval --dump-hits` wrote.

Rows: the `definition` hits of the cursor-deps method (run the eval with a large --top-k so that every
candidate is dumped); label: whether the hit contains a definition the ground-truth line calls. The model is
a conditional (listwise) logit: per task, softmax over its candidates of w.x, the loss -log of the softmax
mass on the positive candidates, L2 penalty `--l2` on w, each task weighing 1; tasks with no positive
candidate say nothing about the order and are left out; per task only the candidates the dumping run ranked in
its top `--depth` (and every positive) are kept: the order that matters is at the top, and it keeps a pure
Python Newton step to seconds. What the strategy needs is an order within a task,
which this fits directly (a pointwise logistic model also spends its weights on telling tasks apart).
Optimised by Newton's method (the loss is convex). `--folds N` first reports Hit@10 / MRR@10 of weights
fitted without each of N groups of libraries (benchmarks), the honest estimate for an unseen library.
Prints the weights as the C++ initializer of kWeights in src/retrieve/cursor_deps.cpp.

    scripts/fit_cursor_deps.py DUMP.jsonl [--l2 1.0] [--folds 4]
"""
import argparse
import json
import math
from collections import defaultdict

NAMES = ["mentioned", "inv_gap", "fn_mentions", "prefix_mentions", "uses", "fn_uses", "owner_inv_gap",
         "owner_fn", "via_name", "via_module", "via_class", "via_self", "via_used", "is_class", "is_method",
         "neighbour", "n_candidates", "recency_rank", "owner_rank", "fn_rank", "log_recency_rank",
         "log_inv_gap"]


def solve(a, b):
    n = len(b)
    m = [row[:] + [b[i]] for i, row in enumerate(a)]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(m[r][c]))
        m[c], m[p] = m[p], m[c]
        if m[c][c] == 0:
            continue
        for r in range(n):
            if r != c:
                f = m[r][c] / m[c][c]
                if f:
                    for k in range(c, n + 1):
                        m[r][k] -= f * m[c][k]
    return [m[i][n] / m[i][i] if m[i][i] else 0.0 for i in range(n)]


def fit(tasks, l2):
    """tasks: list of [(x, y)]; returns w minimising sum_t -log(sum_pos softmax) + l2/2 |w|^2."""
    d = len(NAMES)
    w = [0.0] * d
    usable = [t for t in tasks if any(y for _, y in t)]
    for _ in range(30):
        g = [l2 * v for v in w]
        h = [[l2 if i == j else 0.0 for j in range(d)] for i in range(d)]
        for rows in usable:
            z = [sum(a * b for a, b in zip(w, x)) for x, _ in rows]
            mx = max(z)
            e = [math.exp(v - mx) for v in z]
            p_all = [v / sum(e) for v in e]
            ep = sum(e[i] for i, (_, y) in enumerate(rows) if y)
            p_pos = [e[i] / ep if y else 0.0 for i, (_, y) in enumerate(rows)]
            # Gradient: E_all[x] - E_pos[x]; Hessian: Cov_all[x] - Cov_pos[x] (PSD up to the positives' part).
            mean_all = [sum(p * x[j] for p, (x, _) in zip(p_all, rows)) for j in range(d)]
            mean_pos = [sum(p * x[j] for p, (x, _) in zip(p_pos, rows)) for j in range(d)]
            for j in range(d):
                g[j] += mean_all[j] - mean_pos[j]
            for p, q, (x, _) in zip(p_all, p_pos, rows):
                if p < 1e-12 and q < 1e-12:
                    continue
                for i in range(d):
                    if x[i] == 0:
                        continue
                    for j in range(i, d):
                        h[i][j] += (p - q) * x[i] * x[j]
            for i in range(d):
                for j in range(i, d):
                    h[i][j] -= mean_all[i] * mean_all[j] - mean_pos[i] * mean_pos[j]
        for i in range(d):
            for j in range(i):
                h[i][j] = h[j][i]
        step = solve(h, g)
        # Damped Newton: the positives' covariance makes the Hessian indefinite far from the optimum.
        scale = 1.0
        big = max(abs(s) for s in step)
        if big > 2.0:
            scale = 2.0 / big
        w = [a - scale * s for a, s in zip(w, step)]
        if big * scale < 1e-6:
            break
    return w


def score(rows, w):
    """Hit@10, reciprocal rank at 10 of the first positive under w."""
    s = [sum(a * b for a, b in zip(w, x)) for x, _ in rows]
    order = sorted(range(len(rows)), key=lambda i: -s[i])[:10]
    for r, i in enumerate(order):
        if rows[i][1]:
            return 1, 1.0 / (r + 1)
    return 0, 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dump")
    ap.add_argument("--l2", type=float, default=1.0)
    ap.add_argument("--folds", type=int, default=0)
    ap.add_argument("--depth", type=int, default=60,
                    help="candidates per task: those the dumping run ranked in its top DEPTH, and the positives")
    args = ap.parse_args()
    tasks = defaultdict(list)
    bench = {}
    with open(args.dump) as f:
        for line in f:
            r = json.loads(line)
            if r["method"] != "cursor-deps" or r["label"] != "definition":
                continue
            if r["rank"] > args.depth and not r["contains"]:
                continue
            x = [float(r["features"].get(n, 0.0)) for n in NAMES]
            tasks[r["task"]].append((x, 1 if r["contains"] else 0))
            bench[r["task"]] = r["benchmark"]
    keys = sorted(tasks)
    if args.folds > 1:
        libs = sorted(set(bench.values()))
        hit = rr = 0.0
        for k in range(args.folds):
            held = set(libs[k::args.folds])
            w = fit([tasks[t] for t in keys if bench[t] not in held], args.l2)
            for t in keys:
                if bench[t] in held:
                    h, r = score(tasks[t], w)
                    hit += h
                    rr += r
        print(f"{args.folds}-fold by library (weights fitted without the fold): Hit@10 {hit / len(keys):.3f}, "
              f"MRR@10 {rr / len(keys):.3f} over {len(keys)} tasks")
    w = fit([tasks[t] for t in keys], args.l2)
    hit = sum(score(tasks[t], w)[0] for t in keys) / len(keys)
    rr = sum(score(tasks[t], w)[1] for t in keys) / len(keys)
    print(f"all {len(keys)} tasks, fitted on them: Hit@10 {hit:.3f}, MRR@10 {rr:.3f}")
    for n, b in zip(NAMES, w):
        print(f"  {n:18s} {b:+.3f}")
    print("{" + ", ".join(f"{b:.3f}" for b in w) + "}")


if __name__ == "__main__":
    main()
