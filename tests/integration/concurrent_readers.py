#!/usr/bin/env python3
"""Readers see one consistent index while a writer rewrites it (issue 21, item 3).

    concurrent_readers.py --repoctx BIN REPO [--readers 4] [--writes 4]

One writer runs `repoctx index --force` WRITES times in a row on REPO (every file's rows deleted and
inserted again, batch by batch); meanwhile READERS processes loop over queries on the same index:
`retrieve --query` (with and without the refresh that every query runs first), `symbols --no-refresh`
and `files --no-refresh`. Every query must exit 0 with a whole answer (valid JSON, as many symbols as the
index holds). Before the fix, `retrieve` failed with `unordered_map::at` (exit 1) in about half the tries:
the view read files and entities outside one read transaction.
"""
import argparse
import json
import os
import subprocess
import sys
import threading
import time

from _util import Checker, TempDir, main_wrapper, run_json, tail, wait_for_binary

QUERIES = ["parse a json config file", "register a url route", "render a template", "open a session"]


def reader(binary, repo, db, k, stop, results, expected_symbols):
    n = 0
    while not stop.is_set():
        n += 1
        kind = (k + n) % 4
        if kind == 0:
            args = ["retrieve", repo, "--db", db, "--query", QUERIES[n % len(QUERIES)], "--json", "-q"]
        elif kind == 1:
            args = ["retrieve", repo, "--db", db, "--no-refresh", "--query", QUERIES[n % len(QUERIES)], "--json",
                    "-q"]
        elif kind == 2:
            args = ["symbols", repo, "--db", db, "--no-refresh", "--jsonl", "-q"]
        else:
            args = ["files", repo, "--db", db, "--no-refresh", "--json", "-q"]
        p = subprocess.run([binary] + args, capture_output=True, text=True, errors="replace", timeout=300)
        problem = None
        if p.returncode != 0:
            problem = f"exit {p.returncode}: {tail(p.stderr, 300)}"
        else:
            try:
                if kind == 2:
                    rows = [json.loads(line) for line in p.stdout.splitlines() if line.strip()]
                    if len(rows) != expected_symbols:
                        problem = f"{len(rows)} symbols, the index holds {expected_symbols}"
                else:
                    out = json.loads(p.stdout)
                    if not out:
                        problem = "an empty answer"
            except json.JSONDecodeError as e:
                problem = f"output is not JSON ({e})"
        results.append((args[0] + (" --no-refresh" if "--no-refresh" in args else ""), problem))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repoctx", required=True)
    ap.add_argument("repo")
    ap.add_argument("--readers", type=int, default=4)
    ap.add_argument("--writes", type=int, default=4)
    args = ap.parse_args()
    binary, repo = os.path.abspath(args.repoctx), os.path.abspath(args.repo)
    wait_for_binary(binary)
    ck = Checker()
    with TempDir("repoctx-concurrent-") as tmp:
        db = os.path.join(tmp, "index.db")
        first = run_json(binary, ["index", repo, "--db", db, "--json", "-q"])
        expected = first["entities"]
        print(f"index of {repo}: {first['files']} files, {expected} entities", flush=True)
        stop = threading.Event()
        results = []
        threads = [threading.Thread(target=reader, args=(binary, repo, db, k, stop, results, expected))
                   for k in range(args.readers)]
        for t in threads:
            t.start()
        write_codes = []
        t0 = time.time()
        for _ in range(args.writes):
            p = subprocess.run([binary, "index", repo, "--db", db, "--force", "-q"], capture_output=True, text=True,
                               errors="replace", timeout=900)
            write_codes.append((p.returncode, tail(p.stderr, 300)))
        stop.set()
        for t in threads:
            t.join()
        seconds = time.time() - t0
        errors = [(what, problem) for what, problem in results if problem]
        by_kind = {}
        for what, problem in results:
            ok, bad = by_kind.get(what, (0, 0))
            by_kind[what] = (ok + (problem is None), bad + (problem is not None))
        print(f"{args.readers} readers x {args.writes} writes in {seconds:.0f} s: {len(results)} queries, "
              f"{len(errors)} errors", flush=True)
        for what, (ok, bad) in sorted(by_kind.items()):
            print(f"  {what:<24} {ok} ok, {bad} failed")
        ck.check(all(code == 0 for code, _ in write_codes), f"all {args.writes} `index --force` runs exit 0",
                 str([w for w in write_codes if w[0] != 0][:2]))
        ck.check(len(results) >= args.readers * 2, f"the readers ran while the index was rewritten "
                                                   f"({len(results)} queries)")
        ck.check(not errors, f"{args.readers} readers x {args.writes} writes: 0 errors",
                 f"{len(errors)} of {len(results)} failed, e.g. {errors[:3]}")
        print(json.dumps({"readers": args.readers, "writes": args.writes, "queries": len(results),
                          "errors": len(errors), "seconds": round(seconds, 1)}))
    return ck.finish("concurrent_readers")


if __name__ == "__main__":
    sys.exit(main_wrapper("concurrent_readers", main))
