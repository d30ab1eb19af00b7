#!/usr/bin/env python3
"""Issue 19's `locate` and `files-bm25` through `repoctx localize-eval` on a real repository's history.

    locate_eval.py --repoctx BIN --mirrors DIR [--repo owner/name] [--tasks N]

An LCA-style set is built from the repository's commits (`make-lca-tasks`: message -> gold diff of
non-test Python files), then `localize-eval --strategies locate,files-bm25` runs on it. Checked: one row
per (task, strategy) with no error, ranked metrics and rankings in every row, locate's file rankings with
no test file before a non-test one, locate at least as good as files-bm25 on files F1@1 and files R@10
and on entities F1@3, averaged over the set (httpx is held out: the shipped model never saw it), the
table's ranked section with both strategies, and `localize-table` printing the same.
Exits 77 (skipped) when the mirror folder lacks the repository.
"""
import argparse
import json
import os
import sys

from _util import Checker, Failure, TempDir, main_wrapper, run_ok

TEST_DIRS = ("tests/", "test/", "testing/")


def is_test(path):
    base = path.rsplit("/", 1)[-1]
    return (any(d in path for d in TEST_DIRS) or base.startswith("test_") or base.endswith("_test.py")
            or base == "conftest.py")


def mean(xs):
    return sum(xs) / len(xs) if xs else 0.0


def body(args):
    clone = os.path.join(args.mirrors, args.repo.replace("/", "+"), "repo")
    if not os.path.isdir(clone):
        print(f"skipped: no mirror of {args.repo} at {clone}")
        return 77
    c = Checker()
    with TempDir("locate-eval-") as tmp:
        tasks = os.path.join(tmp, "tasks.jsonl")
        run_ok(args.repoctx, ["make-lca-tasks", clone, "--name", args.repo, "--out", tasks,
                              "--max", str(args.tasks), "--scan", "400"])
        n_tasks = sum(1 for line in open(tasks) if line.strip())
        c.check(n_tasks >= 3, f"{n_tasks} tasks built from {args.repo}'s history")
        out = os.path.join(tmp, "run")
        run_ok(args.repoctx, ["localize-eval", tasks, "--strategies", "locate,files-bm25", "--repos", args.mirrors,
                              "--out", out, "--cache-dir", os.path.join(tmp, "cache"), "-q"], timeout=1200)
        rows = [json.loads(line) for line in open(os.path.join(out, "results-0of1.jsonl")) if line.strip()]
        by = {}
        for r in rows:
            by.setdefault(r["strategy"], []).append(r)
        c.check(sorted(by) == ["files-bm25", "locate"] and all(len(v) == n_tasks for v in by.values()),
                "one row per task and strategy", str({k: len(v) for k, v in by.items()}))
        errors = [r.get("error") for r in rows if "error" in r]
        c.check(not errors, "no error rows", str(errors[:3]))
        ok = [r for r in rows if "error" not in r]
        c.check(all("ranked" in r and "file@1" in r["ranked"] and "entity@3" in r["ranked"] for r in ok),
                "every row has the ranked metrics")
        loc = [r for r in by.get("locate", []) if "error" not in r]
        bm = [r for r in by.get("files-bm25", []) if "error" not in r]
        c.check(all(r["file_ranking"] and r["entity_ranking"] for r in loc), "locate ranks files and entities")
        bad = []
        for r in loc:
            tests_seen = False
            for p in r["file_ranking"]:
                if is_test(p):
                    tests_seen = True
                elif tests_seen:
                    bad.append((r["task"], r["file_ranking"]))
                    break
        c.check(not bad, "locate ranks test files after the other files", str(bad[:1]))
        m = {s: {k: mean([x["ranked"][k.split(":")[0]][k.split(":")[1]] for x in v])
                 for k in ("file@1:f1", "file@10:r", "entity@3:f1")}
             for s, v in (("locate", loc), ("files-bm25", bm))}
        print(f"  locate {m['locate']}\n  files-bm25 {m['files-bm25']}")
        c.check(m["locate"]["file@1:f1"] >= m["files-bm25"]["file@1:f1"], "locate files F1@1 >= files-bm25's")
        c.check(m["locate"]["file@10:r"] >= m["files-bm25"]["file@10:r"], "locate files R@10 >= files-bm25's")
        c.check(m["locate"]["entity@3:f1"] >= m["files-bm25"]["entity@3:f1"], "locate entities F1@3 >= files-bm25's")
        c.check(m["locate"]["file@10:r"] >= 0.5, "locate files R@10 >= 0.5")
        table = open(os.path.join(out, "table.md")).read()
        c.check("ranked: file and entity rankings" in table and "| locate |" in table and "| files-bm25 |" in table,
                "table.md has the ranked section with both strategies")
        printed = run_ok(args.repoctx, ["localize-table", out]).stdout
        c.check(printed == table, "localize-table prints the same table")
    return c.finish("locate_eval")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repoctx", required=True)
    ap.add_argument("--mirrors", default="/work/.mirror")
    ap.add_argument("--repo", default="encode/httpx")  # a held-out repository of docs/EVAL.md
    ap.add_argument("--tasks", type=int, default=8)
    args = ap.parse_args()
    sys.exit(main_wrapper("locate_eval", lambda: body(args)))


if __name__ == "__main__":
    main()
