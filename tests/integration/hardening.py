#!/usr/bin/env python3
"""Hostile and careless input (issue 21): every probe ends in a clean outcome.

    hardening.py --repoctx BIN [--report FILE] [--only NAME,...] [--heavy] [--timeout S]

Each probe feeds repoctx one kind of bad input and records what happened (exit code, seconds, the
message); the checks then require the hardened outcome. `--report FILE` writes the observations as
JSON (docs/RELIABILITY.md's "before" and "after" columns come from running this script on the code
before and after the change). Probes:

  deep       files nested 11,000 and 50,000 levels deep (Python `w=1+1+...`, parentheses, lists,
             attribute chains; Java expressions and nested classes): every command that refreshes
             the index exits 0, the rest of the repository is indexed, the file is listed by
             `files --skipped` with the reason
  oneline    20,000 and 100,000 statements on one line: indexed, with entity documents whose total
             length is linear in the file (each statement's own text, not the whole line per entity)
  sigint     SIGINT while one huge file is being parsed: exit 130 soon after
  bigfile    (--heavy) a 60 MB file with a raised size limit: peak memory
  damaged    random page damage, a zero-byte file, a dropped table, schema_version=999: exit 4 with
             "repoctx index --rebuild", the file left as it was; `index --rebuild` then rebuilds. Pages that
             only the damage check reads, overwritten in an index stamped as checked: `retrieve` (which
             refreshes first), `index` and `retrieve --no-refresh` exit 4 and leave the stamp as it was
  shell      a repository folder named x';touch MARKER;'y (bench-agent-tools) and test files whose
             names hold shell syntax, spaces and quotes (make-tasks --validate): no command runs,
             the test runner receives each path as one argument
  llm        an OpenAI-compatible stub server on 127.0.0.1: wrong-shaped JSON, an empty answer (never
             cached), a 100 MB body (capped), a hung request (SIGINT), a 302, a config file without
             endpoints next to --endpoint
  small      an unreadable folder, a non-UTF-8 file name with `files --json`, a folder symlink to
             outside the repository with --follow-symlinks, check-bodies with findings
  treemem    an 11 MB one-line list literal (2.4 million elements): peak RSS within 64 MB + 36 x the file,
             the file indexed as text only and listed by `files --skipped` (its syntax tree would take ~80
             times its size); a 3 MB one (its tree under the limit's 256 MB floor) is parsed, within
             64 MB + 256 MB + 6 x the file
  diskfull   ENOSPC writing the query image, and (root only: a 4 MB tmpfs) SQLITE_FULL while re-indexing
             and when creating an index: exit 4 naming the index, the full disk and --db; the previous
             index keeps answering, nothing half-made is left, the next run with room completes
"""
import argparse
import http.server
import json
import os
import random
import re
import resource
import shutil
import signal
import socketserver
import sqlite3
import subprocess
import sys
import threading
import time

from _util import Checker, TempDir, main_wrapper, tail, wait_for_binary

OBS = []   # observations for --report


def observe(probe, bad_input, outcome):
    OBS.append({"probe": probe, "input": bad_input, "outcome": outcome})
    print(f"  [{probe}] {bad_input}: {outcome}", flush=True)


def run_cmd(binary, args, timeout, env=None, prefix=(), cwd=None):
    """(returncode or 'timeout', seconds, stdout, stderr, peak RSS MB of the child)."""
    wait_for_binary(binary)
    full_env = dict(os.environ, **(env or {}))
    t0 = time.time()
    # A wrapper process per command: RUSAGE_CHILDREN of the wrapper is the command's own peak RSS.
    wrapper = ("import resource, subprocess, sys\n"
               "p = subprocess.run(sys.argv[1:])\n"
               "sys.stderr.write('\\n@@rss_kb %d\\n' % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
               "sys.exit(p.returncode if p.returncode >= 0 else 128 - p.returncode)\n")
    argv = [sys.executable, "-c", wrapper] + list(prefix) + [binary] + list(args)
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace",
                            env=full_env, cwd=cwd, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)   # the wrapper and repoctx under it
        out, err = proc.communicate()
        return "timeout", time.time() - t0, out or "", err or "", None
    rss = None
    m = re.search(r"\n@@rss_kb (\d+)\n?$", err)
    if m:
        rss = int(m.group(1)) / 1024.0
        err = err[:m.start()]
    return proc.returncode, time.time() - t0, out, err, rss


def describe(code, seconds, err):
    if code == "timeout":
        return f"killed after {seconds:.0f} s (no answer)"
    names = {139: "SIGSEGV", 134: "SIGABRT", 137: "SIGKILL", 130: "interrupted"}
    last = ""
    for line in (err or "").strip().splitlines()[::-1]:
        if line.startswith("error:") or "warn" in line.lower():
            last = line.strip()
            break
    if not last and (err or "").strip():
        last = err.strip().splitlines()[-1].strip()
    extra = f" ({names[code]})" if code in names else ""
    msg = f'; "{last[:160]}"' if last else ""
    return f"exit {code}{extra} in {seconds:.1f} s{msg}"


def skipped_list(binary, repo, db, timeout):
    code, _, out, _, _ = run_cmd(binary, ["files", repo, "--db", db, "--skipped", "--json", "--no-refresh"],
                                 timeout)
    if code != 0:
        return None
    try:
        return json.loads(out)
    except json.JSONDecodeError:
        return None


def write(path, text, mode="w"):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, mode) as f:
        f.write(text)


GOOD_PY = "def good_function(x):\n    return x + 1\n\n\nclass Kept:\n    def method(self):\n        return 2\n"


# ------------------------------------------------------------------------------------------ 1. depth
def deep_sources():
    yield "python-sum-11k", "deep.py", "python `w=1+1+...+1`, 11,000 terms", "w=" + "+".join(["1"] * 11000) + "\n"
    yield "python-sum-50k", "deep.py", "python `w=1+1+...+1`, 50,000 terms", "w=" + "+".join(["1"] * 50000) + "\n"
    yield ("python-parens-50k", "deep.py", "python 50,000 nested parentheses",
           "x = " + "(" * 50000 + "1" + ")" * 50000 + "\n")
    yield ("python-lists-50k", "deep.py", "python 50,000 nested lists",
           "x = " + "[" * 50000 + "1" + "]" * 50000 + "\n")
    yield ("python-attr-50k", "deep.py", "python a 50,000-long attribute chain in a function",
           "def f(a):\n    return a" + ".b" * 50000 + "\n")
    yield ("python-defs-1k", "deep.py", "python 1,000 nested functions",
           "".join(" " * i + f"def f{i}():\n" for i in range(1000)) + " " * 1000 + "pass\n")
    yield ("java-sum-20k", "Deep.java", "java `return 1+1+...` with 20,000 terms",
           "class Deep { int f() { return " + "+".join(["1"] * 20000) + "; } }\n")
    yield ("java-sum-50k", "Deep.java", "java `return 1+1+...` with 50,000 terms",
           "class Deep { int f() { return " + "+".join(["1"] * 50000) + "; } }\n")
    yield ("java-classes-20k", "Deep.java", "java 20,000 nested classes",
           "".join(f"class C{i} {{ " for i in range(20000)) + "}" * 20000 + "\n")
    yield ("java-calls-50k", "Deep.java", "java a.b().b().b()... 50,000 calls",
           "class Deep { void f() { a" + ".b()" * 50000 + "; } }\n")


def probe_deep(ck, binary, tmp, timeout):
    print("\n1. deeply nested files", flush=True)
    for key, name, what, text in deep_sources():
        repo = os.path.join(tmp, "deep-" + key)
        write(os.path.join(repo, "good.py"), GOOD_PY)
        write(os.path.join(repo, name), text)
        db = os.path.join(tmp, "deep-" + key + ".db")
        outcomes = []
        all_ok = True
        for argv in (["index", repo, "--db", db], ["symbols", repo, "--db", db, "--json"],
                     ["files", repo, "--db", db], ["retrieve", repo, "--db", db, "--query", "good function"]):
            code, secs, out, err, _ = run_cmd(binary, argv, timeout)
            outcomes.append(f"{argv[0]}: {describe(code, secs, err)}")
            ok = ck.check(code == 0, f"{what}: `{argv[0]}` exits 0", describe(code, secs, err))
            all_ok = all_ok and ok
            if argv[0] == "symbols" and code == 0:
                names = {e["qualname"] for e in json.loads(out)}
                ck.check({"good_function", "Kept.method"} <= names, f"{what}: the rest is indexed",
                         f"symbols: {sorted(names)[:10]}")
        sk = skipped_list(binary, repo, db, timeout) or []
        reason = next((r for p, r in sk if p == name), None)
        if key != "python-attr-50k":  # one reference, read iteratively: nothing is left out
            ck.check(reason is not None and "nest" in reason, f"{what}: `files --skipped` names the file and why",
                     f"skipped: {sk}")
        observe("deep", what, "; ".join(outcomes[:1]) + (f"; skipped: {reason}" if reason else
                                                         "; not in files --skipped"))


# ---------------------------------------------------------------------------------------- 2. one line
def doc_lengths(db, path):
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as c:
        row = c.execute("SELECT count(*), coalesce(sum(e.doc_len), 0) FROM entities e JOIN files f "
                        "ON f.id = e.file_id WHERE f.path = ?", (path,)).fetchone()
    return row


def probe_oneline(ck, binary, tmp, timeout):
    print("\n2. many statements on one line", flush=True)
    for n in (20000, 100000):
        repo = os.path.join(tmp, f"oneline-{n}")
        write(os.path.join(repo, "good.py"), GOOD_PY)
        write(os.path.join(repo, "flat.py"), ";".join(f"value_{i}=compute" for i in range(n)) + "\n")
        db = os.path.join(tmp, f"oneline-{n}.db")
        code, secs, out, err, rss = run_cmd(binary, ["index", repo, "--db", db, "--json", "-q"], timeout)
        desc = describe(code, secs, err)
        if code == 0:
            ents, total = doc_lengths(db, "flat.py")
            # Each `value_I=compute` statement is 2 tokens (value, compute: digit-only subwords are dropped); the
            # bound is generous: 8 tokens per entity. Whole-line documents would hold 2n tokens each.
            desc += f", {ents} entities, entity documents {total} tokens in all, peak RSS {rss:.0f} MB"
            ck.check(ents == n, f"{n} statements on one line: {n} variables indexed", f"{ents}")
            ck.check(total <= 8 * n, f"{n} statements on one line: documents linear in the file "
                                     f"({total} tokens <= {8 * n})", f"{total}")
        ck.check(code == 0, f"{n} statements on one line: index exits 0", desc)
        observe("oneline", f"{n:,} statements on one line", desc)


def probe_sigint(ck, binary, tmp, timeout):
    print("\n3. SIGINT while a huge file is parsed", flush=True)
    repo = os.path.join(tmp, "sigint")
    write(os.path.join(repo, "good.py"), GOOD_PY)
    n = 1000000
    write(os.path.join(repo, "huge.py"), ";".join(f"value_{i} = compute(arg_{i})" for i in range(n)) + "\n")
    size_mb = os.path.getsize(os.path.join(repo, "huge.py")) / 1048576
    db = os.path.join(tmp, "sigint.db")
    wait_for_binary(binary)
    proc = subprocess.Popen([binary, "index", repo, "--db", db, "--max-file-mb", "200", "-q", "--threads", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace")
    time.sleep(2.0)
    if proc.poll() is not None:
        out, err = proc.communicate()
        desc = f"finished before the signal: exit {proc.returncode}"
        ck.fail("SIGINT reaches a run still parsing", desc)
        observe("sigint", f"SIGINT 2 s into a {size_mb:.0f} MB one-line file", desc)
        return
    t0 = time.time()
    proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=timeout)
        code, secs = proc.returncode, time.time() - t0
        desc = f"exit {code} {secs:.1f} s after SIGINT"
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        code, secs = "timeout", time.time() - t0
        desc = f"still running {secs:.0f} s after SIGINT (killed)"
    ck.check(code == 130, "SIGINT during the parse of one huge file: exit 130", desc)
    ck.check(code != "timeout" and secs < 30, "it stops within 30 s of the signal", desc)
    observe("sigint", f"SIGINT 2 s into a {size_mb:.0f} MB one-line file ({n:,} statements)", desc)


def probe_bigfile(ck, binary, tmp, timeout):
    print("\n4. a 60 MB source file with a raised size limit", flush=True)
    repo = os.path.join(tmp, "big")
    os.makedirs(repo)
    stdlib = "/usr/lib/python3.11"
    parts, size = [], 0
    names = sorted(f for f in os.listdir(stdlib) if f.endswith(".py"))
    while size < 60 * 1048576:
        for f in names:
            with open(os.path.join(stdlib, f), encoding="utf-8", errors="replace") as fh:
                t = fh.read()
            parts.append(t if t.endswith("\n") else t + "\n")
            size += len(t)
            if size >= 60 * 1048576:
                break
    write(os.path.join(repo, "big.py"), "".join(parts))
    mb = os.path.getsize(os.path.join(repo, "big.py")) / 1048576
    db = os.path.join(tmp, "big.db")
    code, secs, out, err, rss = run_cmd(binary, ["index", repo, "--db", db, "--max-file-mb", "100", "--json", "-q"],
                                        timeout)
    desc = describe(code, secs, err) + (f", peak RSS {rss:.0f} MB" if rss else "")
    ck.check(code == 0, f"a {mb:.0f} MB file indexes (exit 0)", desc)
    if rss is not None:
        ck.check(rss < 40 * mb + 500, f"peak memory bounded per file (< 40x the file + 500 MB)", desc)
    observe("bigfile", f"a {mb:.0f} MB file (stdlib sources concatenated), --max-file-mb 100", desc)


# ------------------------------------------------------------------------------------- 5. damaged index
def probe_damaged(ck, binary, tmp, timeout):
    print("\n5. damaged index files", flush=True)
    repo = "/usr/lib/python3/dist-packages/flask"
    clean = os.path.join(tmp, "clean.db")
    code, secs, _, err, _ = run_cmd(binary, ["index", repo, "--db", clean, "-q"], timeout)
    if not ck.check(code == 0, "clean index of flask", describe(code, secs, err)):
        return
    size = os.path.getsize(clean)

    def damage_pages(path):
        rng = random.Random(21)
        with open(path, "r+b") as f:
            page = 4096
            pages = size // page
            for p in sorted(rng.sample(range(1, pages), min(8, pages - 1))):
                f.seek(p * page)
                f.write(bytes(rng.randrange(256) for _ in range(page)))

    def zero(path):
        open(path, "wb").close()

    def edit(path, statement):
        c = sqlite3.connect(path)   # closed here: the change is checkpointed into the file before it is read
        c.execute(statement)
        c.commit()
        c.close()

    def drop_table(path):
        edit(path, "DROP TABLE entities")

    def newer(path):
        edit(path, "UPDATE meta SET value='999' WHERE key='schema_version'")

    cases = (("random page damage (8 pages overwritten)", damage_pages, r"index --rebuild", "damaged|corrupt|malformed"),
             ("a zero-byte index file", zero, r"index --rebuild", "empty|damaged|not a repoctx"),
             ("a dropped table (entities)", drop_table, r"index --rebuild", "entities|damaged|missing"),
             ("schema_version=999", newer, r"newer", "newer"))
    for what, damage, fix, why in cases:
        db = os.path.join(tmp, "damaged-" + re.sub(r"\W+", "-", what) + ".db")
        shutil.copy(clean, db)
        for suf in ("-wal", "-shm"):
            if os.path.exists(db + suf):
                os.remove(db + suf)
        damage(db)
        with open(db, "rb") as f:
            before = f.read()
        outcomes = []
        for argv in (["index", repo, "--db", db], ["symbols", repo, "--db", db],
                     ["symbols", repo, "--db", db, "--no-refresh"],
                     ["retrieve", repo, "--db", db, "--no-refresh", "--query", "route"]):
            code, secs, out, err, _ = run_cmd(binary, argv, timeout)
            label = " ".join(a for a in argv[:1] + argv[4:] if a != "--db")
            outcomes.append(f"{label}: {describe(code, secs, err)}" +
                            (f", {len(out.splitlines())} lines printed" if code == 0 else ""))
            ck.check(code == 4 and re.search(fix, err) and re.search(why, err, re.I),
                     f"{what}: `{label}` exits 4 and says {fix!r}", describe(code, secs, err))
        with open(db, "rb") as f:
            ck.check(f.read() == before, f"{what}: the index file is left as it was")
        if what.startswith("schema"):
            code, secs, _, err, _ = run_cmd(binary, ["index", repo, "--db", db, "--rebuild", "-q"], timeout)
            ck.check(code == 0, f"{what}: `index --rebuild` replaces it", describe(code, secs, err))
        observe("damaged", what, " | ".join(outcomes))
    probe_damaged_stamped(ck, binary, tmp, timeout, repo)
    db = os.path.join(tmp, "rebuild.db")
    shutil.copy(clean, db)
    damage_pages(db)
    code, secs, _, err, _ = run_cmd(binary, ["index", repo, "--db", db, "--rebuild", "-q"], timeout)
    ck.check(code == 0, "`index --rebuild` rebuilds a damaged index", describe(code, secs, err))
    code, secs, out, err, _ = run_cmd(binary, ["symbols", repo, "--db", db, "--no-refresh"], timeout)
    ck.check(code == 0 and len(out.splitlines()) > 100, "the rebuilt index answers", describe(code, secs, err))
    foreign = os.path.join(tmp, "foreign.sqlite")
    with sqlite3.connect(foreign) as c:
        c.execute("CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT)")
    code, secs, _, err, _ = run_cmd(binary, ["index", repo, "--db", foreign, "--rebuild"], timeout)
    ck.check(code == 4 and os.path.exists(foreign), "`index --rebuild` refuses to delete a foreign database",
             describe(code, secs, err))


def probe_damaged_stamped(ck, binary, tmp, timeout, repo):
    """An index stamped by a complete run (<db>-verified), then pages in the middle of the file overwritten:
    the leaf pages of the snippets table, which neither a refresh with nothing to re-index nor a query
    answered from the query image reads. Only the damage check finds them, and every command that opens the
    index must run it: `retrieve` (which refreshes first) and then `index` exit 4 with the fix, and the stamp
    is not rewritten (a rewritten stamp would let the next `index` skip the check and call the file up to
    date)."""
    db = os.path.join(tmp, "stamped.db")
    code, secs, _, err, _ = run_cmd(binary, ["index", repo, "--db", db, "-q"], timeout)
    if not ck.check(code == 0 and os.path.exists(db + "-verified"), "a complete run stamps the index",
                    describe(code, secs, err)):
        return
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as c:
        page_size = c.execute("PRAGMA page_size").fetchone()[0]
        pages = [r[0] for r in c.execute("SELECT pageno FROM dbstat WHERE name='snippets' AND pagetype='leaf' "
                                         "ORDER BY pageno")]
    c.close()
    chosen = pages[len(pages) // 2:len(pages) // 2 + 4]
    rng = random.Random(5)
    with open(db, "r+b") as f:
        for p in chosen:
            f.seek((p - 1) * page_size)
            f.write(bytes(rng.randrange(256) for _ in range(page_size)))
    with open(db + "-verified", "rb") as f:
        stamp = f.read()
    with open(db, "rb") as f:
        damaged = f.read()
    outcomes = []
    for argv in (["retrieve", repo, "--db", db, "--query", "register a url rule", "-k", "3"],
                 ["index", repo, "--db", db],
                 ["retrieve", repo, "--db", db, "--no-refresh", "--query", "route"]):
        code, secs, out, err, _ = run_cmd(binary, argv, timeout)
        label = " ".join(a for a in [argv[0]] + [a for a in argv[4:] if a == "--no-refresh"])
        outcomes.append(f"{label}: {describe(code, secs, err)}")
        ck.check(code == 4 and re.search(r"damaged", err) and re.search(r"repoctx index --rebuild", err),
                 f"{len(chosen)} snippet pages overwritten in a stamped index: `{label}` exits 4, says it is "
                 f"damaged and names `repoctx index --rebuild`", describe(code, secs, err))
        with open(db + "-verified", "rb") as f:
            ck.check(f.read() == stamp, f"`{label}` leaves the stamp of the undamaged file as it was")
        with open(db, "rb") as f:
            ck.check(f.read() == damaged, f"`{label}` writes nothing into the damaged file")
    observe("damaged", f"{len(chosen)} snippet pages in the middle of a stamped index overwritten",
            " | ".join(outcomes))


# ------------------------------------------------------------------------------------------- 6. shell
# The tests run on a scratch copy in a sandbox: the runner's argv goes to the test log (stdout).
RUN_TESTS = '''import runpy, sys, json
print("ARGV " + json.dumps(sys.argv[1:]), flush=True)
for p in sys.argv[1:]:
    runpy.run_path(p, run_name="__main__")
'''


def probe_shell(ck, binary, tmp, timeout):
    print("\n6. shell syntax in paths", flush=True)
    marker = os.path.join(tmp, "PWNED")
    parent = os.path.join(tmp, "shell")
    repo = os.path.join(parent, f"x';touch {marker};'y")
    write(os.path.join(repo, "mod.py"), "def add(a, b):\n    total = a + b\n    total = total * 1\n"
                                        "    return total\n\n\ndef other(x):\n    return add(x, 1)\n")
    db = os.path.join(tmp, "shell.db")
    code, secs, out, err, _ = run_cmd(binary, ["bench-agent-tools", repo, "--db", db, "--calls", "3"], timeout)
    created = os.path.exists(marker)
    ck.check(not created, "bench-agent-tools on a folder named x';touch MARKER;'y runs no command",
             "the marker file was created")
    ck.check(code == 0, "bench-agent-tools exits 0", describe(code, secs, err))
    observe("shell", "bench-agent-tools on a folder named `x';touch MARKER;'y`",
            f"{describe(code, secs, err)}; marker {'CREATED' if created else 'not created'}")
    if created:
        os.remove(marker)

    # make-tasks: test files whose names hold shell syntax, a space and a quote.
    repo2 = os.path.join(parent, "tasks repo")
    write(os.path.join(repo2, "pkg/__init__.py"), "")
    write(os.path.join(repo2, "pkg/mod.py"), "def add(a, b):\n    total = a + b\n    total = total * 1\n"
                                             "    return total\n")
    marker2 = "PWNED2"
    names = [f"tests/test_a;touch {marker2};.py", "tests/test it's.py"]
    for n in names:
        write(os.path.join(repo2, n), "import sys\nsys.path.insert(0, '.')\nfrom pkg.mod import add\n\n\n"
                                      "def test_add():\n    assert add(1, 2) == 3\n\n\ntest_add()\n")
    write(os.path.join(repo2, "run_tests.py"), RUN_TESTS)
    out_jsonl = os.path.join(tmp, "tasks.jsonl")
    val = os.path.join(tmp, "validate")
    code, secs, out, err, _ = run_cmd(binary, ["make-tasks", repo2, "--db", os.path.join(tmp, "tasks.db"), "--out",
                                               out_jsonl, "--validate", val, "--test-template",
                                               "python3 run_tests.py {tests}"], timeout)
    created = os.path.exists(os.path.join(repo2, marker2))
    ck.check(not created, "make-tasks --validate with a test file named `test_a;touch M;.py` runs no command",
             "the marker file was created")
    seen = []
    for root, _, files in os.walk(val):
        for fn in files:
            if fn.endswith(".log"):
                with open(os.path.join(root, fn), errors="replace") as f:
                    seen += [json.loads(line[5:]) for line in f if line.startswith("ARGV ")]
    flat = {a for argv in seen for a in argv}
    ck.check(code == 0, "make-tasks --validate exits 0", describe(code, secs, err))
    ck.check(set(names) <= flat, "the test runner received each test path as one argument",
             f"argv seen: {seen[:4]}")
    kept = 0
    if os.path.exists(out_jsonl):
        with open(out_jsonl) as f:
            kept = sum(1 for line in f if line.strip())
    ck.check(kept == 1, "the task is kept (gold passes, stub fails)", f"{kept} tasks kept")
    observe("shell", "make-tasks --validate, test files `test_a;touch M;.py` and `test it's.py`",
            f"{describe(code, secs, err)}; marker {'CREATED' if created else 'not created'}; "
            f"runner argv {'whole paths' if set(names) <= flat else seen[:2]}; {kept} tasks kept")


# --------------------------------------------------------------------------------------------- 7. LLM
class StubHandler(http.server.BaseHTTPRequestHandler):
    mode = "ok"
    calls = 0
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_GET(self):
        self.do_POST()

    def do_POST(self):
        StubHandler.calls += 1
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            self.rfile.read(n)
        mode = StubHandler.mode
        good = {"choices": [{"message": {"role": "assistant", "content": "fine"}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 3, "completion_tokens": 1}}
        if mode == "hang":
            time.sleep(3600)
            return
        if mode == "redirect":
            self.send_response(302)
            self.send_header("Location", "http://127.0.0.1:9/elsewhere")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if mode == "huge":
            chunk = b"a" * (1 << 20)
            total = 100
            head = b'{"choices":[{"message":{"role":"assistant","content":"'
            tail_ = b'"},"finish_reason":"stop"}]}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(head) + total * len(chunk) + len(tail_)))
            self.end_headers()
            try:
                self.wfile.write(head)
                for _ in range(total):
                    self.wfile.write(chunk)
                self.wfile.write(tail_)
            except (BrokenPipeError, ConnectionResetError):
                pass
            return
        body = {"ok": good,
                "null-content": {"choices": [{"message": {"role": "assistant", "content": None}}]},
                "choices-object": {"choices": {"message": "x"}},
                "text-number": {"choices": [{"message": {"role": "assistant", "content": 42}}]},
                "no-choices": {"id": "x", "object": "chat.completion"}}[mode]
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class ThreadingServer(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


def probe_llm(ck, binary, tmp, timeout):
    print("\n7. an OpenAI-compatible server that misbehaves", flush=True)
    srv = ThreadingServer(("127.0.0.1", 0), StubHandler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{srv.server_address[1]}/v1"
    cache = os.path.join(tmp, "llm-cache.db")
    base = ["llm", "generate", "--endpoint", url, "--model", "m", "--cache", cache]
    try:
        for mode, what in (("null-content", "an answer with \"content\": null"),
                           ("text-number", "an answer whose content is a number"),
                           ("choices-object", "\"choices\" an object, not an array"),
                           ("no-choices", "valid JSON without \"choices\"")):
            StubHandler.mode = mode
            StubHandler.calls = 0
            code, secs, out, err, _ = run_cmd(binary, base + ["--message", "user:" + mode], timeout)
            first_calls = StubHandler.calls
            code2, _, out2, _, _ = run_cmd(binary, base + ["--message", "user:" + mode], timeout)
            again = StubHandler.calls - first_calls
            desc = describe(code, secs, err) + (f"; stdout {out.strip()[:80]!r}" if code == 0 else "")
            desc += f"; repeated call {'served from the cache' if again == 0 else 'asked the server again'}"
            ck.check(code == 5 and "json.exception" not in err, f"{what}: exit 5 with a clear message", desc)
            ck.check(again > 0, f"{what}: nothing cached", desc)
            observe("llm", what, desc)
        StubHandler.mode = "huge"
        code, secs, out, err, rss = run_cmd(binary, base + ["--message", "user:huge"], timeout)
        desc = describe(code, secs, err) + (f", peak RSS {rss:.0f} MB" if rss else "")
        ck.check(code == 5 and re.search(r"MiB|larger|limit", err), "a 100 MB body is refused past the cap", desc)
        ck.check(rss is not None and rss < 200, "memory stays bounded (< 200 MB)", desc)
        observe("llm", "a 100 MB response body", desc)
        StubHandler.mode = "redirect"
        code, secs, out, err, _ = run_cmd(binary, base + ["--message", "user:redirect"], timeout)
        desc = describe(code, secs, err)
        ck.check(code == 5 and "redirect" in err.lower(), "a 302 is reported as a redirect", desc)
        observe("llm", "HTTP 302 to another host", desc)
        StubHandler.mode = "hang"
        wait_for_binary(binary)
        proc = subprocess.Popen([binary] + base + ["--message", "user:hang"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, errors="replace")
        time.sleep(1.5)
        t0 = time.time()
        proc.send_signal(signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=min(timeout, 60))
            secs = time.time() - t0
            desc = f"exit {proc.returncode} {secs:.1f} s after SIGINT"
            ck.check(proc.returncode == 130 and secs < 10, "a hung request stops on SIGINT (exit 130)", desc)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            desc = "still waiting 60 s after SIGINT (killed)"
            ck.fail("a hung request stops on SIGINT", desc)
        observe("llm", "SIGINT during a request the server never answers", desc)
        StubHandler.mode = "ok"
        cfg = os.path.join(tmp, "cfg.json")
        write(cfg, json.dumps({"llm": {"backend": "openai", "model": "m"}}))
        code, secs, out, err, _ = run_cmd(binary, ["llm", "generate", "--config", cfg, "--endpoint", url,
                                                   "--cache", cache, "--message", "user:cfg"], timeout)
        desc = describe(code, secs, err)
        ck.check(code == 0 and "fine" in out, "--config without endpoints is accepted with --endpoint", desc)
        observe("llm", "--config naming no endpoints, with --endpoint", desc)
    finally:
        StubHandler.mode = "ok"
        srv.shutdown()


# ------------------------------------------------------------------------------------------ 8. smaller
def as_nobody_prefix(binary, db_dir):
    for prefix in (["runuser", "-u", "nobody", "--"],
                   ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"]):
        if shutil.which(prefix[0]) and run_cmd(binary, ["--version"], 30, prefix=prefix)[0] == 0:
            os.chown(db_dir, 65534, 65534)
            return prefix
    caps = "-dac_override,-dac_read_search"
    prefix = ["setpriv", f"--inh-caps={caps}", f"--bounding-set={caps}", "--"]
    if shutil.which("setpriv") and run_cmd(binary, ["--version"], 30, prefix=prefix)[0] == 0:
        return prefix
    return None


def probe_small(ck, binary, tmp, timeout):
    print("\n8. smaller cases", flush=True)
    # An unreadable folder.
    repo = os.path.join(tmp, "locked-repo")
    write(os.path.join(repo, "good.py"), GOOD_PY)
    write(os.path.join(repo, "locked/hidden.py"), "def hidden():\n    return 1\n")
    os.chmod(tmp, 0o755)
    os.chmod(repo, 0o755)
    os.chmod(os.path.join(repo, "good.py"), 0o644)
    os.chmod(os.path.join(repo, "locked"), 0o000)
    db_dir = os.path.join(tmp, "locked-db")
    os.makedirs(db_dir)
    prefix = as_nobody_prefix(binary, db_dir) if os.geteuid() == 0 else ()
    if prefix is None:
        ck.fail("found a way to run without read access to everything (running as root)")
    else:
        db = os.path.join(db_dir, "i.db")
        code, secs, out, err, _ = run_cmd(binary, ["index", repo, "--db", db], timeout, prefix=prefix)
        warned = any(re.search(r"'locked'|\blocked/", line) for line in err.splitlines())
        code2, _, out2, _, _ = run_cmd(binary, ["files", repo, "--db", db, "--skipped", "--no-refresh"], timeout,
                                       prefix=prefix)
        listed = [line for line in out2.splitlines() if "locked" in line]
        ck.check(code == 0 and warned, "an unreadable folder: exit 0 and a warning naming it",
                 describe(code, secs, err))
        ck.check(bool(listed) and re.search(r"unreadable|permission", listed[0], re.I),
                 "`files --skipped` lists the unreadable folder with the reason", out2)
        observe("small", "an unreadable folder (mode 000, run as nobody)",
                f"{describe(code, secs, err)}; warning {'yes' if warned else 'none'}; files --skipped: "
                f"{listed[0] if listed else 'not listed'}")
    os.chmod(os.path.join(repo, "locked"), 0o755)

    # A non-UTF-8 file name.
    repo = os.path.join(tmp, "latin1-name")
    os.makedirs(repo)
    with open(os.path.join(repo.encode(), b"caf\xe9.py"), "w") as f:
        f.write("def cafe():\n    return 1\n")
    write(os.path.join(repo, "good.py"), GOOD_PY)
    db = os.path.join(tmp, "latin1.db")
    code, secs, out, err, _ = run_cmd(binary, ["files", repo, "--db", db, "--json"], timeout)
    parsed = None
    if code == 0:
        try:
            parsed = json.loads(out)
        except json.JSONDecodeError:
            parsed = None
    ck.check(code == 0 and parsed is not None and len(parsed) == 2,
             "`files --json` with a non-UTF-8 file name: exit 0, valid JSON, both files",
             describe(code, secs, err))
    observe("small", "`files --json` with a file named caf\\xe9.py (latin-1 byte)",
            describe(code, secs, err) + ("; valid JSON" if parsed is not None else ""))

    # A folder symlink to outside the repository.
    outside = os.path.join(tmp, "outside")
    write(os.path.join(outside, "secret_module.py"), "def outside_secret():\n    return 1\n")
    repo = os.path.join(tmp, "symlink-repo")
    write(os.path.join(repo, "good.py"), GOOD_PY)
    os.symlink(outside, os.path.join(repo, "link"))
    db = os.path.join(tmp, "symlink.db")
    code, secs, out, err, _ = run_cmd(binary, ["symbols", repo, "--db", db, "--follow-symlinks", "--json"], timeout)
    files = {e["file"] for e in json.loads(out)} if code == 0 else set()
    leaked = any(f.startswith("link/") for f in files)
    ck.check(code == 0 and not leaked, "--follow-symlinks never indexes files outside the repository",
             f"files: {sorted(files)}")
    ck.check("good.py" in files, "the rest of the repository is indexed", f"files: {sorted(files)}")
    sk = skipped_list(binary, repo, db, timeout) or []
    ck.check(any(p.startswith("link") and "outside" in r for p, r in sk),
             "`files --skipped` says the symlink points outside", f"{sk}")
    observe("small", "--follow-symlinks with link -> a folder outside the repository",
            describe(code, secs, err) + ("; indexed link/secret_module.py" if leaked else "; link/ skipped"))

    # check-bodies with findings.
    repo = os.path.join(tmp, "findings")
    write(os.path.join(repo, "m.py"), "def f(a):\n    return a\n\n\ndef g():\n    x = f(1, 2, 3)\n    return x\n")
    db = os.path.join(tmp, "findings.db")
    code, secs, out, err, _ = run_cmd(binary, ["check-bodies", repo, "--db", db], timeout)
    ck.check(code == 0 and re.search(r"\b1 findings", out), "check-bodies with a finding: exit 0, the finding reported",
             describe(code, secs, err) + f"; {out.strip()[-200:]}")
    observe("small", "check-bodies on a repository with a finding", describe(code, secs, err))


# ------------------------------------------------------------------------------ 10. syntax tree memory
# The documented bound (docs/BENCHMARKS.md, "Memory of pathological files") for a repository whose other files
# are small: a base, the syntax tree's limit (src/repo/parser.h: 30 times the file or 256 MB, whichever is
# larger) and a few copies of the file (its content, SQLite's copy of it, term vectors, allocator slack).
RSS_BASE_MB, TREE_PER_BYTE, TREE_FLOOR_MB, OTHER_PER_BYTE = 64, 30, 256, 6


def rss_bound_mb(file_mb):
    return RSS_BASE_MB + max(TREE_PER_BYTE * file_mb, TREE_FLOOR_MB) + OTHER_PER_BYTE * file_mb


def probe_treemem(ck, binary, tmp, timeout):
    print("\n10. a one-line list literal of millions of elements", flush=True)
    # tree-sitter needs ~80 bytes of syntax tree per byte of `x = [0, 1, 2, ...]`: over the limit (30 times
    # the file, at least 256 MB) the file is indexed as text only, and the memory stays within the bound.
    for n, parsed in ((2_400_000, False), (600_000, True)):
        repo = os.path.join(tmp, f"biglist-{n}")
        write(os.path.join(repo, "good.py"), GOOD_PY)
        write(os.path.join(repo, "data.py"), "x = [" + ", ".join(str(i % 1000) for i in range(n)) + "]\n")
        mb = os.path.getsize(os.path.join(repo, "data.py")) / 1048576
        db = os.path.join(tmp, f"biglist-{n}.db")
        code, secs, out, err, rss = run_cmd(binary, ["index", repo, "--db", db, "--max-file-mb", "30", "-q"], timeout)
        desc = describe(code, secs, err) + (f", peak RSS {rss:.0f} MB" if rss else "")
        ck.check(code == 0, f"a {mb:.1f} MB list literal: index exits 0", desc)
        bound = rss_bound_mb(mb)
        ck.check(rss is not None and rss <= bound,
                 f"a {mb:.1f} MB list literal: peak RSS <= {RSS_BASE_MB} MB + max({TREE_PER_BYTE} x the file, "
                 f"{TREE_FLOOR_MB} MB) + {OTHER_PER_BYTE} x the file ({bound:.0f} MB)", desc)
        sk = skipped_list(binary, repo, db, timeout) or []
        reason = next((r for p, r in sk if p == "data.py"), None)
        code2, _, out2, _, _ = run_cmd(binary, ["symbols", repo, "--db", db, "--no-refresh", "--json"], timeout)
        names = {(e["file"], e["qualname"]) for e in json.loads(out2)} if code2 == 0 else set()
        ck.check(("good.py", "good_function") in names, f"a {mb:.1f} MB list literal: the rest is indexed")
        if parsed:
            ck.check(("data.py", "x") in names and reason is None,
                     f"a {mb:.1f} MB list literal (its tree under the 256 MB floor) is parsed", f"{reason}")
        else:
            ck.check(reason is not None and "not parsed" in reason and "memory" in reason,
                     f"a {mb:.1f} MB list literal: `files --skipped` says it was not parsed for its memory",
                     f"{reason}")
        observe("treemem", f"a {mb:.1f} MB one-line list literal ({n:,} elements), --max-file-mb 30",
                desc + (f"; skipped: {reason}" if reason else "; parsed"))


# ------------------------------------------------------------------------------------------ 9. disk full
def probe_diskfull(ck, binary, tmp, timeout):
    print("\n9. a full disk while indexing", flush=True)
    repo = "/usr/lib/python3/dist-packages/flask"
    full_msg = (r"no space left on the disk", r"--db PATH")

    def symbol_count(db):
        code, secs, out, err, _ = run_cmd(binary, ["symbols", repo, "--db", db, "--no-refresh"], timeout)
        return len(out.splitlines()) if code == 0 else f"symbols: {describe(code, secs, err)}"

    def expect_full(argv, db, what, also=()):
        code, secs, _, err, _ = run_cmd(binary, argv, timeout)
        ok = code == 4 and all(re.search(x, err) for x in full_msg + also) and f"'{db}'" in err
        ck.check(ok, f"{what}: exit 4 naming {os.path.basename(db)}, the full disk and --db{' (' if also else ''}"
                 f"{', '.join(also)}{')' if also else ''}", describe(code, secs, err))
        return describe(code, secs, err)

    # The query image: its temporary file is a symlink to /dev/full, where every write fails with ENOSPC as on
    # a full disk. The database itself is complete; the image's absence only slows queries, but the user must
    # hear that the disk is full.
    db = os.path.join(tmp, "image-full.db")
    code, secs, _, err, _ = run_cmd(binary, ["index", repo, "--db", db, "-q"], timeout)
    if ck.check(code == 0, "clean index of flask", describe(code, secs, err)):
        before = symbol_count(db)
        os.symlink("/dev/full", db + "-image.tmp")
        desc = expect_full(["index", repo, "--db", db, "--force"], db, "ENOSPC writing the query image")
        ck.check(not os.path.lexists(db + "-image.tmp"), "no partial image is left behind")
        ck.check(symbol_count(db) == before, "the index answers as before (through SQL)", f"{symbol_count(db)}")
        code, secs, _, err, _ = run_cmd(binary, ["index", repo, "--db", db, "-q"], timeout)
        ck.check(code == 0 and os.path.exists(db + "-image"), "once writes succeed, `index` writes the image",
                 describe(code, secs, err))
        observe("diskfull", "ENOSPC writing the query image (its temporary file -> /dev/full)", desc)

    # SQLite's own writes: a small tmpfs, filled up (mounting needs root; CI runs as root).
    if os.geteuid() != 0:
        print("  SKIP the tmpfs case: mounting a tmpfs needs root")
        return
    mnt = os.path.join(tmp, "small-disk")
    os.makedirs(mnt)
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", mnt], capture_output=True, text=True)
    if p.returncode != 0:
        print(f"  SKIP the tmpfs case: mount failed: {p.stderr.strip()}")
        return
    try:
        def fill(leave_kb):
            st = os.statvfs(mnt)
            free = st.f_bavail * st.f_frsize - leave_kb * 1024
            with open(os.path.join(mnt, "filler"), "ab") as f:
                f.write(b"\0" * max(0, free))

        db = os.path.join(mnt, "index.db")
        code, secs, _, err, _ = run_cmd(binary, ["index", repo, "--db", db, "-q"], timeout)
        if not ck.check(code == 0, "index of flask on a 4 MB tmpfs", describe(code, secs, err)):
            return
        before = symbol_count(db)
        fill(100)
        desc = expect_full(["index", repo, "--db", db, "--force"], db, "SQLITE_FULL re-indexing on a full tmpfs",
                           (r"stays usable",))
        ck.check(symbol_count(db) == before, "the previous index still answers", f"{symbol_count(db)} vs {before}")
        os.remove(os.path.join(mnt, "filler"))
        code, secs, _, err, _ = run_cmd(binary, ["index", repo, "--db", db, "-q"], timeout)
        ck.check(code == 0 and symbol_count(db) == before, "with room again, `index` completes it",
                 describe(code, secs, err))
        observe("diskfull", "`index --force` of flask on a full 4 MB tmpfs (100 KB left)", desc)

        # A new index on a disk with no room at all: refused whole, no half-made file left.
        for name in os.listdir(mnt):
            os.remove(os.path.join(mnt, name))
        fill(0)
        new = os.path.join(mnt, "new.db")
        desc = expect_full(["index", repo, "--db", new], new, "a new index on a full tmpfs", (r"nothing was created",))
        ck.check(sorted(os.listdir(mnt)) == ["filler"], "nothing is left behind on the full disk",
                 f"{sorted(os.listdir(mnt))}")
        observe("diskfull", "a new index on a full 4 MB tmpfs", desc)
    finally:
        subprocess.run(["umount", mnt], capture_output=True)


PROBES = {"deep": probe_deep, "oneline": probe_oneline, "sigint": probe_sigint, "bigfile": probe_bigfile,
          "damaged": probe_damaged, "shell": probe_shell, "llm": probe_llm, "small": probe_small,
          "diskfull": probe_diskfull, "treemem": probe_treemem}
DEFAULT = ["deep", "oneline", "sigint", "damaged", "shell", "llm", "small", "diskfull", "treemem"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repoctx", required=True)
    ap.add_argument("--report", help="write the observations here (JSON)")
    ap.add_argument("--only", help="comma-separated probes: " + ", ".join(PROBES))
    ap.add_argument("--heavy", action="store_true", help="also the 60 MB file")
    ap.add_argument("--timeout", type=float, default=120, help="seconds per command")
    args = ap.parse_args()
    binary = os.path.abspath(args.repoctx)
    names = args.only.split(",") if args.only else DEFAULT + (["bigfile"] if args.heavy else [])
    ck = Checker()
    with TempDir("repoctx-hardening-") as tmp:
        env_index_dir = os.path.join(tmp, "indexes")
        os.environ["REPOCTX_INDEX_DIR"] = env_index_dir
        for n in names:
            PROBES[n](ck, binary, tmp, args.timeout)
    if args.report:
        with open(args.report, "w") as f:
            json.dump({"binary": binary, "observations": OBS, "failures": ck.failures}, f, indent=2)
    return ck.finish("hardening")


if __name__ == "__main__":
    sys.exit(main_wrapper("hardening", main))
