#!/usr/bin/env python3
"""Everyday use, as a new user meets it: Ctrl-C, progress and summaries, errors that say what to do, good
defaults, and files that stay out of the user's way.

    everyday.py --repoctx BIN [--tiny-model]

1. Interrupts: `llm generate` of 1500 tokens with the tiny model, SIGINT (and, separately, SIGTERM) after
   it started: exit 130 within seconds, not the whole generation; a second Ctrl-C ends the process at once.
3. make-tasks --validate whose test command cannot work prints the cause (the end of the test log) and
   exits with a bad-input code, not 1.
4. A broken ./repoctx.json does not break commands that need no model; where a model is needed the error
   gives line and column; an unknown key is named.
5. An index inside a git work tree gets a .gitignore: `git status` stays clean.
6. Progress and summaries: the automatic refresh shows progress on a terminal; a no-change re-index says
   "up to date" with the index's real totals; an empty folder gets a warning; the retrieve table has a
   header and says what its score means.
7. Defaults: `retrieve --target` uses the structural strategy, `eval` includes it; --exclude-tests keeps
   test files out of the results.
"""
import argparse
import json
import os
import pty
import select
import signal
import subprocess
import sys
import time

from _util import Checker, TempDir, main_wrapper, run, run_json, run_ok, tail

FLASK = "/usr/lib/python3/dist-packages/flask"
ASTROPY = "/usr/lib/python3/dist-packages/astropy"


def interrupt_after(binary, args, sig, delay, timeout=60, cwd=None):
    """Start binary args, send `sig` after `delay` seconds; returns (exit code, seconds from signal to exit)."""
    p = subprocess.Popen([binary] + args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=cwd)
    time.sleep(delay)
    if p.poll() is not None:
        return p.returncode, 0.0, p.stderr.read().decode(errors="replace")
    t0 = time.monotonic()
    p.send_signal(sig)
    try:
        p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    return p.returncode, time.monotonic() - t0, p.stderr.read().decode(errors="replace")


def run_in_pty(binary, args, timeout=300):
    """Run with stderr (and stdout) on a pseudo-terminal; returns (exit code, everything written)."""
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(binary, [binary] + args)
    out = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r, _, _ = select.select([fd], [], [], 0.5)
        if not r:
            continue
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the child closed the terminal (it exited)
            chunk = b""
        if not chunk:
            _, status = os.waitpid(pid, 0)
            os.close(fd)
            return os.waitstatus_to_exitcode(status), out.decode(errors="replace")
        out += chunk
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    os.close(fd)
    return -9, out.decode(errors="replace")


def check_interrupts(ck, binary, work):
    model = os.path.join(work, "tiny.gguf")
    run_ok(binary, ["make-test-model", "--out", model])
    args = ["llm", "generate", "--model", model, "--max-tokens", "1500", "--message", "user:Write a long story.",
            "--no-cache", "--cache", os.path.join(work, "llm-cache.db")]
    t0 = time.monotonic()
    p = run(binary, args, timeout=600)
    full = time.monotonic() - t0
    ck.check(p.returncode == 0, f"uninterrupted generation of 1500 tokens runs to the end ({full:.1f} s)",
             tail(p.stderr))
    for sig, name in ((signal.SIGINT, "SIGINT"), (signal.SIGTERM, "SIGTERM")):
        rc, after, err = interrupt_after(binary, args, sig, min(3.0, full / 3))
        ck.check(rc == 130, f"{name} during generation: exit 130", f"exit {rc}: {tail(err)}")
        ck.check(after < max(5.0, full / 3), f"{name}: stops {after:.1f} s after the signal (whole run {full:.1f} s)")
        ck.check("interrupted" in err, f"{name}: says it was interrupted", tail(err))
    # A second Ctrl-C ends the process at once (the first asks it to stop cleanly).
    p2 = subprocess.Popen([binary] + args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(min(3.0, full / 3))
    p2.send_signal(signal.SIGINT)
    p2.send_signal(signal.SIGINT)
    try:
        rc2 = p2.wait(timeout=10)
    except subprocess.TimeoutExpired:
        p2.kill()
        rc2 = p2.wait()
    ck.check(rc2 == 130, "two Ctrl-C: exit 130 at once", f"exit {rc2}")


def check_make_tasks_cause(ck, binary, work):
    repo = os.path.join(work, "smallpkg")
    os.makedirs(os.path.join(repo, "tests"))
    with open(os.path.join(repo, "calc.py"), "w") as f:
        f.write("def add(a, b):\n    \"\"\"Add.\"\"\"\n    total = a + b\n    total = total + 0\n    return total\n")
    with open(os.path.join(repo, "tests", "test_calc.py"), "w") as f:
        f.write("from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n")
    out = os.path.join(work, "tasks.jsonl")
    p = run(binary, ["make-tasks", repo, "--out", out, "--validate", os.path.join(work, "val"),
                     "--test-template", "python3 -m no_such_test_runner_xyz {tests}", "--db",
                     os.path.join(work, "small.db")], timeout=300)
    ck.check(p.returncode not in (0, 1), "make-tasks --validate with a broken test command: not exit 0 or 1",
             f"exit {p.returncode}")
    ck.check("No module named no_such_test_runner_xyz" in p.stderr,
             "the cause from the test log is printed", tail(p.stderr))
    ck.check("test command itself does not work" in p.stderr, "says the test command itself fails", tail(p.stderr))


def check_config(ck, binary, work):
    cwd = os.path.join(work, "cfg")
    os.makedirs(cwd)
    with open(os.path.join(cwd, "repoctx.json"), "w") as f:
        f.write('{\n  "llm": {\n    "backend": "llama",\n    "model": "x.gguf",,\n  }\n}\n')
    db = os.path.join(work, "flask.db")
    p = subprocess.run([binary, "retrieve", FLASK, "--db", db, "--query", "route", "-k", "3"], cwd=cwd,
                       capture_output=True, text=True, timeout=600)
    ck.check(p.returncode == 0, "a broken ./repoctx.json does not break a query that needs no model",
             f"exit {p.returncode}: {tail(p.stderr)}")
    p = subprocess.run([binary, "llm", "info"], cwd=cwd, capture_output=True, text=True, timeout=60)
    ck.check(p.returncode == 4 and "line 4 column" in p.stderr,
             "where a model is needed, the parse error has line and column (exit 4)",
             f"exit {p.returncode}: {p.stderr.strip()}")
    with open(os.path.join(cwd, "repoctx.json"), "w") as f:
        json.dump({"llm": {"backend": "llama", "modle": "x.gguf"}}, f)
    p = subprocess.run([binary, "llm", "info"], cwd=cwd, capture_output=True, text=True, timeout=60)
    ck.check(p.returncode == 4 and '"llm.modle"' in p.stderr and "model" in p.stderr,
             "a misspelt key is named, with the keys it could be (exit 4)", f"exit {p.returncode}: {p.stderr.strip()}")
    with open(os.path.join(cwd, "repoctx.json"), "w") as f:
        json.dump({"llm": {"backend": "llama", "model": 7}}, f)
    p = subprocess.run([binary, "llm", "info"], cwd=cwd, capture_output=True, text=True, timeout=60)
    ck.check(p.returncode == 4 and '"llm.model" must be a string' in p.stderr, "a value of the wrong type is named",
             p.stderr.strip())


def check_gitignore(ck, binary, work):
    repo = os.path.join(work, "gitrepo")
    os.makedirs(repo)
    with open(os.path.join(repo, "m.py"), "w") as f:
        f.write("def f():\n    return 1\n")
    subprocess.run(["git", "init", "-q", repo], check=True)
    run_ok(binary, ["index", repo, "-q"])
    ck.check(os.path.exists(os.path.join(repo, ".repoctx", "index.db")), "the index of a git tree is in .repoctx/")
    st = subprocess.run(["git", "-C", repo, "status", "--porcelain", "--untracked-files=all"], capture_output=True,
                        text=True).stdout
    ck.check(".repoctx" not in st, "git status does not show .repoctx/", st)
    # A folder outside git: its index goes to $XDG_CACHE_HOME/repoctx/indexes/, the LLM cache beside it, and
    # nothing of either lands in the folder.
    plain = os.path.join(work, "plain")
    os.makedirs(plain)
    with open(os.path.join(plain, "m.py"), "w") as f:
        f.write("def f():\n    return 1\n")
    xdg = os.path.join(work, "xdg")
    env = dict(os.environ, XDG_CACHE_HOME=xdg)
    env.pop("REPOCTX_INDEX_DIR", None)
    env.pop("REPOCTX_LLM_CACHE", None)
    p = subprocess.run([binary, "index", plain, "--json"], capture_output=True, text=True, env=env, timeout=120)
    db = json.loads(p.stdout).get("db", "") if p.returncode == 0 else ""
    ck.check(db.startswith(os.path.join(xdg, "repoctx", "indexes") + os.sep) and os.path.exists(db),
             "outside git the index lives under $XDG_CACHE_HOME/repoctx/indexes/", db or tail(p.stderr))
    p = subprocess.run([binary, "cache", "stats", "--json"], capture_output=True, text=True, env=env, timeout=60)
    ck.check(p.returncode == 0 and os.path.join(xdg, "repoctx", "llm-cache.db") in p.stdout,
             "the LLM cache is $XDG_CACHE_HOME/repoctx/llm-cache.db, its own entry", tail(p.stdout + p.stderr))
    ck.check(os.listdir(plain) == ["m.py"], "nothing is written into a folder outside git", str(os.listdir(plain)))


def check_progress_and_summaries(ck, binary, work):
    repo = os.path.join(work, "flaskcopy")
    subprocess.run(["cp", "-r", FLASK, repo], check=True)
    db = os.path.join(work, "flaskcopy.db")
    run_ok(binary, ["index", repo, "--db", db, "-q"])
    p = run(binary, ["index", repo, "--db", db])
    ck.check("up to date" in p.stderr, "a no-change re-index says it is up to date", p.stderr.strip())
    holds = [ln for ln in p.stderr.splitlines() if "the index holds" in ln]
    ck.check(bool(holds) and " 0 entities" not in holds[0], "and reports the index's real totals", p.stderr.strip())
    j = run_json(binary, ["index", repo, "--db", db, "--json"])
    ck.check(j.get("totals", {}).get("entities", 0) > 100, "--json carries the totals", json.dumps(j)[:300])
    # The automatic refresh inside retrieve shows progress on a terminal.
    for name in os.listdir(repo):
        if name.endswith(".py"):
            with open(os.path.join(repo, name), "a") as f:
                f.write("\n# touched\n")
    rc, text = run_in_pty(binary, ["retrieve", repo, "--db", db, "--query", "register a blueprint", "-k", "3"])
    ck.check(rc == 0 and "indexing" in text, "the automatic refresh shows progress on a terminal", text[-800:])
    ck.check("rank" in text and "score = BM25 score" in text, "the table has a header and says what the score is",
             text[-800:])
    empty = os.path.join(work, "empty")
    os.makedirs(empty)
    with open(os.path.join(empty, "README.txt"), "w") as f:
        f.write("no code here\n")
    p = run(binary, ["index", empty, "--db", os.path.join(work, "empty.db")])
    ck.check("no source files (Python, Java, Go, JavaScript/TypeScript, Rust, C)" in p.stderr, "an empty folder gets a warning", p.stderr.strip())


def check_defaults(ck, binary, work):
    db = os.path.join(work, "flask2.db")
    syms = [json.loads(ln) for ln in run_ok(binary, ["symbols", FLASK, "--db", db, "--kind", "method", "--jsonl"])
            .stdout.splitlines() if ln.strip()]
    target = next(s for s in syms if s["file"] == "app.py")
    j = run_json(binary, ["retrieve", FLASK, "--db", db, "--target", f"{target['file']}::{target['qualname']}",
                          "--json", "-k", "5"])
    ck.check(j.get("strategy") == "structural", "retrieve --target defaults to the structural strategy",
             str(j.get("strategy")))
    j = run_json(binary, ["retrieve", FLASK, "--db", db, "--query", "url rule", "--json", "-k", "5"])
    ck.check(j.get("strategy") == "sparse", "retrieve --query defaults to sparse", str(j.get("strategy")))
    p = run_ok(binary, ["eval", FLASK, "--samples", "5", "-q"])
    ck.check("| structural |" in p.stdout, "eval includes the structural strategy by default", p.stdout[-600:])
    # astropy keeps its tests inside the package: without the flag test files are among the results.
    adb = os.path.join(work, "astropy.db")
    q = ["retrieve", ASTROPY, "--db", adb, "--query", "test the unit conversion of a quantity", "-k", "20", "--json"]
    with_tests = run_json(binary, q, timeout=1200)["results"]
    without = run_json(binary, q + ["--exclude-tests"], timeout=600)["results"]

    def is_test(path):
        base = os.path.basename(path)
        return ("tests/" in path or "test/" in path or "testing/" in path or base.startswith("test_")
                or base.endswith("_test.py") or base == "conftest.py")
    ck.check(any(is_test(r["file"]) for r in with_tests), "astropy: test files rank high without --exclude-tests")
    ck.check(len(without) == 20 and not any(is_test(r["file"]) for r in without),
             "--exclude-tests: 20 results, none from a test file", json.dumps([r["file"] for r in without]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repoctx", required=True)
    ap.add_argument("--tiny-model", action="store_true", help="llama.cpp is built: also the generation checks")
    a = ap.parse_args()
    ck = Checker()
    with TempDir("repoctx-everyday-") as work:
        if a.tiny_model:
            check_interrupts(ck, a.repoctx, work)
        check_make_tasks_cause(ck, a.repoctx, work)
        check_config(ck, a.repoctx, work)
        check_gitignore(ck, a.repoctx, work)
        check_progress_and_summaries(ck, a.repoctx, work)
        check_defaults(ck, a.repoctx, work)
    return ck.finish("everyday")


if __name__ == "__main__":
    sys.exit(main_wrapper("everyday", main))
