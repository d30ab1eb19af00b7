#!/usr/bin/env python3
"""Entity extraction vs. CPython's ast, on whole source trees.

    ast_oracle.py --repoctx BIN ROOT [ROOT...]

For each ROOT: tests/oracle/ast_entities.py ROOT -> oracle JSONL;
`repoctx symbols ROOT --db TMP --keep-vendored --keep-generated --jsonl -q` -> repoctx JSONL;
tests/oracle/compare_entities.py ORACLE REPOCTX (exit 0 iff every file the oracle parsed agrees).
Prints each comparison's summary; exits 1 if any root disagrees.
"""
import argparse
import os
import subprocess
import sys

from _util import REPO_ROOT, Checker, TempDir, cmdline, main_wrapper, run, tail

ORACLE = os.path.join(REPO_ROOT, "tests", "oracle", "ast_entities.py")
COMPARE = os.path.join(REPO_ROOT, "tests", "oracle", "compare_entities.py")


def check_root(binary, root, tmp, ck, idx):
    print(f"=== {root}", flush=True)
    if not os.path.isdir(root):
        ck.fail(f"{root}: not a directory")
        return
    oracle_out = os.path.join(tmp, f"oracle{idx}.jsonl")
    ours_out = os.path.join(tmp, f"repoctx{idx}.jsonl")
    db = os.path.join(tmp, f"index{idx}.db")

    p = subprocess.run([sys.executable, ORACLE, root, "--out", oracle_out],
                       capture_output=True, text=True, timeout=1200)
    if not ck.check(p.returncode == 0, f"oracle ran on {root}",
                    f"exit {p.returncode}: {tail(p.stderr)}"):
        return

    args = ["symbols", root, "--db", db, "--keep-vendored", "--keep-generated", "--jsonl", "-q"]
    p = run(binary, args, timeout=1200)
    if not ck.check(p.returncode == 0, f"`{cmdline(binary, args)}` exits 0",
                    f"exit {p.returncode}: {tail(p.stderr)}"):
        return
    if p.stderr.strip():
        print("  repoctx warnings (stderr):")
        for line in p.stderr.strip().splitlines()[:20]:
            print(f"    {line}")
    with open(ours_out, "w", encoding="utf-8") as f:
        f.write(p.stdout)

    c = subprocess.run([sys.executable, COMPARE, oracle_out, ours_out],
                       capture_output=True, text=True, timeout=600)
    print("\n".join("  " + line for line in c.stdout.rstrip().splitlines()))
    if c.stderr.strip():
        print(tail(c.stderr))
    ck.check(c.returncode == 0, f"repoctx agrees with ast on every parsed file of {root}",
             f"compare_entities.py exited {c.returncode}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repoctx", required=True, help="path to the repoctx binary")
    ap.add_argument("roots", nargs="+", metavar="ROOT")
    args = ap.parse_args()
    binary = os.path.abspath(args.repoctx)
    ck = Checker()
    with TempDir("repoctx-oracle-") as tmp:
        for i, root in enumerate(args.roots):
            check_root(binary, os.path.abspath(root), tmp, ck, i)
            # the index of a large tree is not needed any more
            for suffix in ("", "-wal", "-shm", "-journal"):
                p = os.path.join(tmp, f"index{i}.db{suffix}")
                if os.path.exists(p):
                    os.remove(p)
    return ck.finish("ast_oracle")


if __name__ == "__main__":
    sys.exit(main_wrapper("ast_oracle", main))
