#!/usr/bin/env python3
"""`locate` and `files-bm25` through `repoctx localize-eval` on a git history of real code.

    locate_eval.py --repoctx BIN [--source DIR] [--mirrors DIR --repo owner/name] [--tasks N]

The history is generated (default) from a real package's sources (--source, Debian's python3-pyparsing, a
library `train-locate` never saw): a first commit holds the package with the bodies of N documented
functions replaced by `raise NotImplementedError`, then one commit per function restores its body, its
message the docstring's first sentence (what an issue asking for the feature would say). With --mirrors and
--repo the history is a real clone's instead (e.g. /work/.mirror's encode/httpx); a missing clone fails.
An LCA-style set is built from the commits (`make-lca-tasks`: message -> gold diff of non-test Python files),
then `localize-eval --strategies locate,files-bm25` runs on it. Checked: one row
per (task, strategy) with no error, ranked metrics and rankings in every row, locate's file rankings with
no test file before a non-test one, locate at least as good as files-bm25 on files F1@1 and files R@10
and on entities F1@3, averaged over the set, the generated tasks' gold being the restored function, the
table's ranked section with both strategies, and `localize-table` printing the same.
"""
import argparse
import ast
import json
import os
import shutil
import subprocess
import sys

from _util import Checker, Failure, TempDir, main_wrapper, run_ok

TEST_DIRS = ("tests/", "test/", "testing/")


def is_test(path):
    base = path.rsplit("/", 1)[-1]
    return (any(d in path for d in TEST_DIRS) or base.startswith("test_") or base.endswith("_test.py")
            or base == "conftest.py")


def mean(xs):
    return sum(xs) / len(xs) if xs else 0.0


def git(repo, *argv):
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.org", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@example.org", GIT_AUTHOR_DATE="2020-01-01T00:00:00Z",
               GIT_COMMITTER_DATE="2020-01-01T00:00:00Z")
    subprocess.run(["git", "-C", repo, *argv], check=True, env=env, capture_output=True, timeout=120)


def documented_functions(root):
    """(file, FunctionDef) of functions with a docstring of >= 4 words and >= 3 statements after it."""
    found = []
    for path in sorted(pathlib_files(root)):
        rel = os.path.relpath(path, root)
        if is_test(rel):
            continue
        tree = ast.parse(open(path, encoding="utf-8").read())
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            doc = ast.get_docstring(node)
            first = doc.strip().split("\n")[0].strip() if doc else ""
            if len(first.split()) >= 4 and len(node.body) >= 4 and node.body[-1].end_lineno - node.body[1].lineno >= 4:
                found.append((rel, node, first))
    return found


def pathlib_files(root):
    for d, _, files in os.walk(root):
        if "__pycache__" in d:
            continue
        yield from (os.path.join(d, f) for f in files if f.endswith(".py"))


def make_history(source, repo, n):
    """The generated history (module doc); returns [(file, function name, message)] in commit order."""
    shutil.copytree(source, repo, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    funcs = documented_functions(repo)
    # Round robin over the files (a function from each file in turn, each file's taken from its middle out),
    # so that the tasks spread over the package; nested functions of a chosen one are skipped.
    by_file = {}
    for f in funcs:
        by_file.setdefault(f[0], []).append(f)
    for rel, fs in by_file.items():
        mid = len(fs) // 2
        by_file[rel] = sorted(fs, key=lambda f, fs=fs, mid=mid: abs(fs.index(f) - mid))
    order = [fs[i] for i in range(max(map(len, by_file.values()))) for _, fs in sorted(by_file.items()) if i < len(fs)]
    chosen = []
    for f in order:
        if len(chosen) == n:
            break
        if not any(c[0] == f[0] and (c[1].lineno <= f[1].lineno <= c[1].end_lineno
                                     or f[1].lineno <= c[1].lineno <= f[1].end_lineno) for c in chosen):
            chosen.append(f)
    originals = {}
    for rel, node, _ in chosen:
        originals.setdefault(rel, open(os.path.join(repo, rel), encoding="utf-8").read())
    # Hide the bodies, bottom-up per file so that earlier line numbers stay valid.
    lines_of = {rel: text.split("\n") for rel, text in originals.items()}
    for rel, node, _ in sorted(chosen, key=lambda c: (c[0], -c[1].lineno)):
        lines = lines_of[rel]
        first, last = node.body[1].lineno, node.body[-1].end_lineno
        indent = lines[first - 1][:len(lines[first - 1]) - len(lines[first - 1].lstrip())]
        lines[first - 1:last] = [indent + "raise NotImplementedError"]
    for rel, lines in lines_of.items():
        open(os.path.join(repo, rel), "w", encoding="utf-8").write("\n".join(lines))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "Import the package with the bodies of some documented functions missing")
    # Restore one body per commit, top-down per file, each on the state the previous commits left.
    done = []
    for rel, node, message in sorted(chosen, key=lambda c: (c[0], c[1].lineno)):
        current = open(os.path.join(repo, rel), encoding="utf-8").read().split("\n")
        original = originals[rel].split("\n")
        first, last = node.body[1].lineno, node.body[-1].end_lineno
        # Top-down: every hidden body above this one in the file is restored already, so it sits where it
        # sits in the original.
        at = first - 1
        assert current[at].strip() == "raise NotImplementedError", (rel, node.name, current[at])
        current[at:at + 1] = original[first - 1:last]
        open(os.path.join(repo, rel), "w", encoding="utf-8").write("\n".join(current))
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", message)
        done.append((rel, node, message))
    return [(rel, node.name, message) for rel, node, message in done]


def body(args):
    c = Checker()
    with TempDir("locate-eval-") as tmp:
        if args.mirrors:
            clone = os.path.join(args.mirrors, args.repo.replace("/", "+"), "repo")
            if not os.path.isdir(clone):
                raise Failure(f"no clone of {args.repo} at {clone} (give --mirrors the folder that holds "
                              "owner+name/repo, or leave both out to generate a history)")
            mirrors = args.mirrors
        else:
            mirrors = os.path.join(tmp, "mirrors")
            clone = os.path.join(mirrors, args.repo.replace("/", "+"), "repo")
            made = make_history(args.source, clone, args.tasks)
            c.check(len(made) == args.tasks, f"{len(made)} commits generated from {args.source}")
        tasks = os.path.join(tmp, "tasks.jsonl")
        run_ok(args.repoctx, ["make-lca-tasks", clone, "--name", args.repo, "--out", tasks,
                              "--max", str(args.tasks), "--scan", "400"])
        task_rows = [json.loads(line) for line in open(tasks) if line.strip()]
        n_tasks = len(task_rows)
        c.check(n_tasks >= 3, f"{n_tasks} tasks built from {args.repo}'s history")
        if not args.mirrors:
            want = sorted((rel, msg) for rel, _, msg in made)
            got = sorted((m["new_path"], r["message"]) for r in task_rows for m in r["mods"])
            c.check(got == want, "the tasks are the generated commits (message, changed file)", f"{got} vs {want}")
        out = os.path.join(tmp, "run")
        run_ok(args.repoctx, ["localize-eval", tasks, "--strategies", "locate,files-bm25", "--repos", mirrors,
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
    ap.add_argument("--source", default="/usr/lib/python3/dist-packages/pyparsing")
    ap.add_argument("--mirrors", help="a folder of real clones (owner+name/repo) instead of a generated history")
    ap.add_argument("--repo", default="local/pyparsing", help="owner/name (with --mirrors: the clone to use)")
    ap.add_argument("--tasks", type=int, default=8)
    args = ap.parse_args()
    sys.exit(main_wrapper("locate_eval", lambda: body(args)))


if __name__ == "__main__":
    main()
