#!/usr/bin/env python3
"""Completion retrieval for a cursor treats the text after the cursor as absent.

    cursor_cut.py --repoctx BIN REPO --tasks N

N completion tasks (line- and API-level) are built from REPO with `repoctx make-completion-tasks`. For each,
the repository is copied and, in the copy, the task's file is cut at the cursor (its bytes up to the cursor's
line and column, computed here from the task, not by repoctx). Every completion strategy must then answer
`repoctx retrieve --file F --line L --column C` exactly the same on the original (where repoctx hides the
text itself) as on the copy (where the text is really gone): same (label, file, start_line, end_line) rows,
scores bit-identical. The file itself is never a result of the cross-file strategies.
"""
import argparse
import json
import os
import shutil
import sys
import time

from _util import Checker, Failure, TempDir, cmdline, main_wrapper, run, run_ok, tail

# (label, strategy, extra retrieve args)
# MODEL: a model trained at the start of the run on REPO (learned weights, not just the initial ones).
STRATEGIES = [
    ("bm25 (coarse)", "aligncoder-snippets", ["--param", "dependency_snippets=1"]),
    ("aligncoder untrained", "aligncoder", ["--param", "candidates=none", "--model-file", "untrained"]),
    ("aligncoder trained", "aligncoder", ["--param", "candidates=none", "--model-file", "MODEL"]),
    ("aligncoder built-in", "aligncoder", ["--param", "candidates=none"]),
    ("aligncoder oracle", "aligncoder", ["--param", "candidates=oracle", "--completion", "OracleCandidate(x)",
                                         "--model-file", "MODEL"]),
    ("rlcoder", "rlcoder", ["--model-file", "MODEL"]),
    ("reacc", "reacc", []),
    ("in-file", "in-file", []),
    ("cursor-deps", "cursor-deps", []),
    ("imports-recency", "imports-recency", []),
]
FIELDS = ("label", "file", "start_line", "end_line")


def cut_bytes(data, line, column):
    """The file's bytes before (line, column): lines split at b'\\n' (the engine's convention)."""
    pos = 0
    for _ in range(line - 1):
        nl = data.index(b"\n", pos)
        pos = nl + 1
    return data[:pos + column]


def rows(res):
    return [tuple(r.get(f) for f in FIELDS) + (float(r["score"]).hex(),) for r in res.get("results", [])]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repoctx", required=True)
    ap.add_argument("repo")
    ap.add_argument("--tasks", type=int, required=True)
    a = ap.parse_args()
    binary, repo = os.path.abspath(a.repoctx), os.path.abspath(a.repo)
    if not os.path.isdir(repo):
        raise Failure(f"not a directory: {repo}")
    ck = Checker()
    t0 = time.time()
    with TempDir("repoctx-cursor-") as tmp:
        db = os.path.join(tmp, "orig.db")
        tasks_path = os.path.join(tmp, "tasks.jsonl")
        run_ok(binary, ["index", repo, "--db", db, "-q"])
        run_ok(binary, ["make-completion-tasks", repo, "--db", db, "--no-refresh", "--kind", "both",
                        "--max", str(a.tasks), "--out", tasks_path, "-q"])
        tasks = [json.loads(line) for line in open(tasks_path)]
        model = os.path.join(tmp, "align.json")
        p = run(binary, ["train-aligncoder", repo, "--out", model, "--epochs", "1", "--samples", "300", "-q"],
                env={"REPOCTX_INDEX_DIR": os.path.join(tmp, "indexes")}, timeout=600)
        if p.returncode != 0:
            raise Failure(f"train-aligncoder failed: {tail(p.stderr)}")
        ck.check(len(tasks) == a.tasks, f"{len(tasks)} tasks built (line and API level)")
        ck.check(any(t["kind"] == "api" and t.get("definitions") for t in tasks), "API tasks name their definitions")
        skip_builtin = False
        compared = 0
        for i, t in enumerate(tasks, 1):
            path = t["file"]
            print(f"--- [{i}/{len(tasks)}] {t['id']} ({t['kind']}) at {t['line']}:{t['column']}", flush=True)
            with open(os.path.join(repo, path), "rb") as f:
                data = f.read()
            cut = cut_bytes(data, t["line"], t["column"])
            copy = os.path.join(tmp, "copy", os.path.basename(repo))
            copy_db = os.path.join(tmp, "copy.db")
            shutil.rmtree(os.path.join(tmp, "copy"), ignore_errors=True)
            for suffix in ("", "-wal", "-shm"):
                if os.path.exists(copy_db + suffix):
                    os.remove(copy_db + suffix)
            shutil.copytree(repo, copy, symlinks=True)
            with open(os.path.join(copy, path), "wb") as f:
                f.write(cut)
            run_ok(binary, ["index", copy, "--db", copy_db, "-q"])
            for label, strategy, extra in STRATEGIES:
                if label == "aligncoder built-in" and skip_builtin:
                    continue
                args = ["--file", path, "--line", str(t["line"]), "--column", str(t["column"]),
                        "--strategy", strategy, "-k", "20", "--json", "-q", "--no-refresh"]
                args += [model if x == "MODEL" else x for x in extra]
                pa = run(binary, ["retrieve", repo, "--db", db] + args)
                if label == "aligncoder built-in" and pa.returncode == 3 and "no built-in" in pa.stderr:
                    print("  (no built-in AlignRetriever model in this build: that row is skipped)")
                    skip_builtin = True
                    continue
                pb = run(binary, ["retrieve", copy, "--db", copy_db] + args)
                if pa.returncode or pb.returncode:
                    ck.fail(f"{label} {t['id']}: retrieve exits 0",
                            f"original {pa.returncode}: {tail(pa.stderr, 400)}; copy {pb.returncode}: "
                            f"{tail(pb.stderr, 400)}\n  `{cmdline(binary, ['retrieve', repo] + args)}`")
                    continue
                ra, rb = json.loads(pa.stdout), json.loads(pb.stdout)
                compared += 1
                same = rows(ra) == rows(rb)
                detail = ""
                if not same:
                    for k, (x, y) in enumerate(zip(rows(ra) + [None] * 30, rows(rb) + [None] * 30)):
                        if x != y:
                            detail = f"rank {k + 1}: original {x}, copy {y}"
                            break
                ck.check(same, f"{label:22} {t['id']}: original == cut copy ({len(ra['results'])} results)", detail)
                if strategy != "in-file":
                    own = [r for r in ra["results"] if r.get("file") == path and r.get("label") != "dependency"]
                    if own:
                        ck.fail(f"{label} {t['id']}: the file itself is not a result", str(own[0]))
                if strategy != "in-file" and not ra["results"]:
                    ck.fail(f"{label} {t['id']}: some context retrieved")
        print(f"\ncompared {compared} (task, strategy) pairs in {time.time() - t0:.0f} s")
    return ck.finish("cursor_cut")


if __name__ == "__main__":
    sys.exit(main_wrapper("cursor_cut", main))
