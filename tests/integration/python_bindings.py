#!/usr/bin/env python3
"""The `repoctx` Python module (pybind11), imported from the build folder, on a copy of a Debian library.

    python_bindings.py --module-dir BUILD/python --repoctx BIN REPO

Checks: Index(path) indexes and loads; retrieve returns plain Python objects equal to the CLI's --json
output (same hits, same order); structural retrieval for a target; symbols, files, snippets, read, grep;
refresh sees an added function; errors are repoctx.Error with the CLI's exit code (unknown keyword 2,
missing target 3, a path outside the repository 4); the GIL is released while the engine works (a Python
thread keeps running during a forced re-index).
"""
import argparse
import os
import shutil
import sys
import threading
import time

from _util import Checker, Failure, TempDir, main_wrapper, run_json


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--module-dir", required=True)
    ap.add_argument("--repoctx", required=True)
    ap.add_argument("repo")
    a = ap.parse_args()
    sys.path.insert(0, a.module_dir)
    try:
        import repoctx
    except ImportError as e:
        raise Failure(f"cannot import repoctx from {a.module_dir}: {e} (is pybind11-dev installed and the module built?)")
    ck = Checker()
    ck.check(os.path.dirname(repoctx.__file__) == os.path.abspath(a.module_dir), "the module comes from the build folder",
             repoctx.__file__)
    with TempDir("repoctx-python-") as work:
        copy = os.path.join(work, "flask")
        shutil.copytree(a.repo, copy, ignore=shutil.ignore_patterns("__pycache__"))
        db = os.path.join(work, "index.db")
        ix = repoctx.Index(copy, db=db)
        info = ix.info()
        ck.check(isinstance(info, dict) and info["files"] > 10 and info["db"] == db, "Index(path) indexes and loads",
                 str(info)[:200])
        query = "register a url rule for a view function"
        r = ix.retrieve(query=query, strategy="sparse", k=8)
        cli = run_json(a.repoctx, ["retrieve", copy, "--db", db, "--no-refresh", "--query", query, "-k", "8", "--json"])
        cli_score = cli["score"]
        ck.check(type(r) is dict and type(r["results"]) is list and type(r["results"][0]["score"]) is float,
                 "retrieve returns plain dicts, lists and floats")
        ck.check([h["target"] for h in r["results"]] == [h["target"] for h in cli["results"]],
                 "retrieve: the CLI's hits in the CLI's order")
        s = ix.retrieve(target="helpers.py::get_root_path", strategy="structural", k=5, with_text=True)
        ck.check(s["target"] == "helpers.py::get_root_path" and len(s["results"]) == 5 and s["results"][0]["text"],
                 "structural retrieval for a target", str(s)[:200])
        ck.check(any(x["target"] == "helpers.py::get_root_path" for x in ix.symbols(name="get_root_path")), "symbols")
        ck.check(any(f["path"] == "helpers.py" for f in ix.files()), "files")
        ck.check(len(ix.snippets(file="helpers.py")) > 3, "snippets")
        ck.check(ix.read(path="helpers.py", start_line=1, end_line=2).startswith("helpers.py (lines 1-2"), "read")
        ck.check("helpers.py:" in ix.grep(pattern="def get_root_path"), "grep")
        ck.check("structural" in [x["name"] for x in repoctx.strategies()], "strategies()")
        request = "Blueprint url_prefix is ignored when registering a nested blueprint"
        loc = ix.localize(request=request)
        cli = run_json(a.repoctx, ["localize", copy, "--db", db, "--no-refresh", "--query", request, "--json"])
        ck.check(isinstance(loc, dict) and loc["results"]
                 and [(x["file"], x["start_line"], x["end_line"]) for x in loc["results"]]
                 == [(x["file"], x["start_line"], x["end_line"]) for x in cli["results"]]
                 and loc["context_tokens"] == cli["context_tokens"] and loc["score"] == "BM25 score of the chunk",
                 "localize(): the CLI's ranges and context tokens, and what the scores mean", str(loc)[:300])
        ck.check(r.get("score") == cli_score == "BM25 score" and s.get("score", "").startswith("ranking score"),
                 "retrieve() says what its scores mean, as the CLI does", f"{r.get('score')!r} vs {cli_score!r}")
        ck.check([x["name"] for x in repoctx.localize_strategies()][:1] == ["study-bm25"], "localize_strategies()")
        for call, code, what in [(lambda: ix.retrieve(query="x", colour=1), 2, "an unknown keyword"),
                                 (lambda: ix.retrieve(query="x", k="ten"), 2, "k as a string"),
                                 (lambda: ix.retrieve(target="helpers.py::nope"), 3, "a missing target"),
                                 (lambda: ix.localize(request="x", strategy="sparse"), 2, "localize: not a study strategy"),
                                 (lambda: ix.localize(request=""), 2, "localize: an empty request"),
                                 (lambda: ix.read(path="../../etc/passwd"), 4, "a path outside the repository"),
                                 (lambda: repoctx.Index(os.path.join(work, "nope")), 3, "a missing repository")]:
            try:
                call()
                ck.fail(f"{what}: repoctx.Error")
            except repoctx.Error as e:
                ck.check(e.exit_code == code and str(e), f"{what}: repoctx.Error, exit_code {code}",
                         f"{e.exit_code}: {e}")
        with open(os.path.join(copy, "helpers.py"), "a") as f:
            f.write("\n\ndef python_binding_probe():\n    return 1\n")
        st = ix.refresh()
        ck.check(st["parsed"] == 1 and st["reloaded"] and ix.symbols(name="python_binding_probe"),
                 "refresh sees an added function", str(st))
        # The GIL: a Python thread must run while the engine re-parses every file.
        ticks, done = [0], threading.Event()

        def count():
            while not done.is_set():
                ticks[0] += 1
                time.sleep(0.001)

        t = threading.Thread(target=count)
        t.start()
        # Forced re-indexes for at least 0.3 s (one of flask took under 0.05 s on a fast machine: too short to
        # tell). Holding the GIL, the thread could only tick between two calls, a few times per call; released,
        # it ticks about once per millisecond throughout.
        t0, calls = time.time(), 0
        while time.time() - t0 < 0.3:
            ix.refresh(force=True)
            calls += 1
        spent = time.time() - t0
        done.set()
        t.join()
        ck.check(ticks[0] > 0.25 * spent / 0.001 and ticks[0] > 10 * calls,
                 f"a Python thread ran during {calls} re-indexes in {spent:.2f} s ({ticks[0]} ticks): the GIL is "
                 "released")
    return ck.finish("python_bindings")


if __name__ == "__main__":
    sys.exit(main_wrapper("python_bindings", main))
