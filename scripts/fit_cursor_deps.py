#!/usr/bin/env python3
"""Fits cursor-deps' logistic weights on the hits `complete-retrieval-eval --dump-hits` wrote.

Rows: the `definition` hits of the cursor-deps method (run the eval with a large --top-k so that every
candidate is dumped); label: whether the hit contains a definition the ground-truth line calls. L2-regularised
logistic regression by Newton's method, each task weighted equally (its rows share weight 1). Prints the
weights as the C++ initializer of kWeights in src/retrieve/cursor_deps.cpp.

    scripts/fit_cursor_deps.py DUMP.jsonl [--l2 1.0]
"""
import argparse
import json
import math
from collections import defaultdict

NAMES = ["mentioned", "inv_gap", "fn_mentions", "prefix_mentions", "uses", "fn_uses", "owner_inv_gap",
         "owner_fn", "via_name", "via_module", "via_class", "via_self", "via_used", "is_class", "is_method",
         "neighbour", "n_candidates"]


def solve(a, b):
    n = len(b)
    m = [row[:] + [b[i]] for i, row in enumerate(a)]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(m[r][c]))
        m[c], m[p] = m[p], m[c]
        for r in range(n):
            if r != c and m[c][c] != 0:
                f = m[r][c] / m[c][c]
                for k in range(c, n + 1):
                    m[r][k] -= f * m[c][k]
    return [m[i][n] / m[i][i] for i in range(n)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dump")
    ap.add_argument("--l2", type=float, default=1.0)
    args = ap.parse_args()
    rows = []
    per_task = defaultdict(int)
    with open(args.dump) as f:
        for line in f:
            r = json.loads(line)
            if r["method"] != "cursor-deps" or r["label"] != "definition":
                continue
            x = [1.0] + [float(r["features"].get(n, 0.0)) for n in NAMES]
            rows.append((r["task"], x, 1.0 if r["contains"] else 0.0))
            per_task[r["task"]] += 1
    d = len(NAMES) + 1
    beta = [0.0] * d
    for _ in range(25):
        g = [0.0] * d
        h = [[0.0] * d for _ in range(d)]
        for task, x, y in rows:
            w = 1.0 / per_task[task]
            z = sum(b * v for b, v in zip(beta, x))
            p = 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))
            for i in range(d):
                g[i] += w * (p - y) * x[i]
                wi = w * p * (1 - p) * x[i]
                for j in range(i, d):
                    h[i][j] += wi * x[j]
        for i in range(d):
            for j in range(i):
                h[i][j] = h[j][i]
        for i in range(1, d):
            g[i] += args.l2 * beta[i]
            h[i][i] += args.l2
        step = solve(h, g)
        beta = [b - s for b, s in zip(beta, step)]
        if max(abs(s) for s in step) < 1e-6:
            break
    print(f"rows {len(rows)}, tasks {len(per_task)}")
    for n, b in zip(["bias"] + NAMES, beta):
        print(f"  {n:16s} {b:+.3f}")
    print("{" + f"{beta[0]:.3f}, " + "{" + ", ".join(f"{b:.3f}" for b in beta[1:]) + "}}")


if __name__ == "__main__":
    main()
