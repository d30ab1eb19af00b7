#!/usr/bin/env python3
"""Whether two repoctx builds answer the same: `retrieve --target` with the default strategy on N targets
(the repository's functions and methods, evenly spaced in the index's order, as `repoctx bench-serve` picks
them), each build as a fresh process, comparing the top K hits (target names, in order) and their scores.

usage: scripts/compare_retrieve.py REFERENCE_BIN CANDIDATE_BIN REPO [--db DB] [--targets 500] [-k 20]
Prints one line per differing target and a summary; exit 0 when every answer is the same, 1 otherwise.
Each build runs from an argv (no shell); Ctrl-C stops it (exit 130).
"""
import argparse
import json
import subprocess
import sys


def run(argv):
    r = subprocess.run(argv, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"compare_retrieve: {argv[0]} exited {r.returncode}: {r.stderr.strip()[:400]}")
    return r.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("reference")
    ap.add_argument("candidate")
    ap.add_argument("repo")
    ap.add_argument("--db", default="")
    ap.add_argument("--targets", type=int, default=500)
    ap.add_argument("-k", type=int, default=20)
    a = ap.parse_args()
    db = ["--db", a.db] if a.db else []
    symbols = [json.loads(line) for line in run([a.candidate, "symbols", a.repo, "--jsonl", "--no-refresh", *db]).splitlines()]
    fns = [s for s in symbols if s["kind"] in ("function", "method")]
    n = min(a.targets, len(fns))
    targets = [fns[i * len(fns) // n]["file"] + "::" + fns[i * len(fns) // n]["qualname"] for i in range(n)]
    same = 0
    for t in targets:
        answers = []
        for binary in (a.reference, a.candidate):
            out = json.loads(run([binary, "retrieve", a.repo, "--target", t, "-k", str(a.k), "--json", "--no-refresh", *db]))
            answers.append([(h["target"], h["score"]) for h in out["results"]])
        if answers[0] == answers[1]:
            same += 1
        else:
            print(f"{t}: differs ({answers[0][:3]} ... vs {answers[1][:3]} ...)")
    print(f"{same} of {n} targets: the same top {a.k} (names, order and scores)")
    return 0 if same == n else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
