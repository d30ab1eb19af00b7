#!/usr/bin/env python3
"""Bad input gets a clear message and a meaningful exit code, and the rest of the work goes on.

    cli_bad_input.py --repoctx BIN

A temporary repository holds a valid package next to a latin-1 file, a file with NUL bytes, an
empty file, a 50 MB file, a file with a syntax error, a directory symlink loop, a dangling symlink
and an unreadable file (checked as user `nobody` when running as root, since root reads anything).
`repoctx index` must exit 0, name every problem file on stderr with what it did about it, and
keep every valid definition.  Then: missing repository (exit 3, "does not exist"), unknown file in
--target (3), unknown qualname (3, closest names suggested), unknown strategy (2, valid names
listed), --target without '::' (2), a result count of 0 or -1 for every -k/--top-k and --top-files (2),
serve --poll-interval 0, negative, nan, inf or out of 0.05..3600 s (2, before anything is served),
damaged index (4, "re-index"), a foreign SQLite database
as --db (4, left untouched), a bare relative --db file name, and nothing indexed is lost when a
broken file is added.
"""
import argparse
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys

from _util import REPO_ROOT, Checker, Failure, TempDir, cmdline, main_wrapper, run, tail

sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "oracle"))
import ast_entities  # noqa: E402

VALID_FILES = {
    "pkg/__init__.py": "from .core import Engine, helper\n\n__all__ = ['Engine', 'helper']\n",
    "pkg/core.py": '''"""Core of the package."""
import os

CONST = 3


class Engine:
    """An engine."""
    speed = 1

    def run(self, n):
        """Run n times."""
        return helper(n) + CONST

    async def stop(self):
        return None


def helper(n):
    def inner(x):
        return x * 2
    return inner(n)
''',
    "pkg/util.py": '''from .core import helper


def slugify(text: str) -> str:
    """Lower-case text with dashes."""
    return "-".join(text.lower().split())


class Registry(dict):
    default = None
''',
}
SYNTAX_ERRORS = '''def good_before():
    return 1


def broken(:
    pass


class AfterBroken:
    def method(self):
        return 2
'''
BROKEN_RECOVERED = {("good_before", "function"), ("AfterBroken", "class"),
                    ("AfterBroken.method", "method")}
BIG_MB = 50


def build_repo(root):
    for rel, text in VALID_FILES.items():
        os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
        with open(os.path.join(root, rel), "w", encoding="utf-8") as f:
            f.write(text)
    with open(os.path.join(root, "latin1.py"), "wb") as f:       # no coding cookie: not UTF-8
        f.write("# caf\u00e9 au lait\ndef latin_func():\n    return '\u00e9t\u00e9'\n"
                .encode("latin-1"))
    with open(os.path.join(root, "binary.py"), "wb") as f:
        f.write(b"def looks_like_code():\n    return 1\n\x00\x00\x01\x02\xff" * 10)
    open(os.path.join(root, "empty.py"), "wb").close()
    with open(os.path.join(root, "big_generated.py"), "wb") as f:
        f.write(b"x = 1\n" * (BIG_MB * 1000 * 1000 // 6))     # 50 MB
    with open(os.path.join(root, "syntax_errors.py"), "w", encoding="utf-8") as f:
        f.write(SYNTAX_ERRORS)
    os.symlink("..", os.path.join(root, "pkg", "loop"))                # pkg/loop -> repo root
    os.symlink("does_not_exist.py", os.path.join(root, "gone.py"))     # dangling
    with open(os.path.join(root, "secret.py"), "w", encoding="utf-8") as f:
        f.write("def secret_func():\n    return 42\n")
    os.chmod(os.path.join(root, "secret.py"), 0)


def expected_valid(root):
    """(file, qualname, kind, start, end) of the valid package, from the ast oracle."""
    out = set()
    for rel in VALID_FILES:
        rec = ast_entities.file_record(root, rel)
        assert rec["ok"], rec
        out |= {(rel, q, k, s, e) for q, k, s, e in rec["entities"]}
    return out


def symbols(binary, repo, db, prefix=()):
    p = run(binary, ["symbols", repo, "--db", db, "--jsonl", "--no-refresh"], user_prefix=prefix)
    if p.returncode != 0:
        raise Failure(f"symbols exited {p.returncode}: {tail(p.stderr)}")
    return [json.loads(line) for line in p.stdout.splitlines() if line.strip()]


def warning_lines(stderr, name):
    return [line for line in stderr.splitlines() if name in line]


def check_warning(ck, stderr, name, patterns, what):
    lines = warning_lines(stderr, name)
    ok = bool(lines) and all(any(re.search(p, line, re.I) for line in lines) for p in patterns)
    ck.check(ok, f"stderr names {name} and says {what}",
             f"lines naming it: {lines or 'none'}; wanted patterns {patterns}")


def root_prefix(binary, db_dir):
    """We are root, who reads any file: a command prefix under which a mode-000 file is
    unreadable.  First choice: user nobody (db_dir is handed to nobody).  When nobody cannot run
    the binary (e.g. its RUNPATH points into /root), root without the DAC override capabilities.
    Returns (prefix or None, description)."""
    notes = []
    for prefix in (["runuser", "-u", "nobody", "--"],
                   ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"]):
        if not shutil.which(prefix[0]):
            continue
        probe = run(binary, ["--version"], user_prefix=prefix)
        if probe.returncode == 0:
            os.chown(db_dir, 65534, 65534)      # nobody:nogroup writes its index there
            return prefix, f"as user nobody via {prefix[0]}"
        notes.append(f"{prefix[0]}: exit {probe.returncode}: "
                     f"{probe.stderr.strip().splitlines()[-1] if probe.stderr.strip() else ''}")
    if notes:
        print(f"  NOTE: user nobody cannot run {binary}: {notes[0]}")
    caps = "-dac_override,-dac_read_search"
    prefix = ["setpriv", f"--inh-caps={caps}", f"--bounding-set={caps}", "--"]
    if shutil.which("setpriv"):
        probe = run(binary, ["--version"], user_prefix=prefix)
        if probe.returncode == 0:
            return prefix, "as root without CAP_DAC_OVERRIDE / CAP_DAC_READ_SEARCH (setpriv)"
        notes.append(f"setpriv without DAC capabilities: exit {probe.returncode}")
    return None, "; ".join(notes) or "neither runuser nor setpriv is available"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repoctx", required=True, help="path to the repoctx binary")
    args = ap.parse_args()
    binary = os.path.abspath(args.repoctx)
    ck = Checker()
    as_root = os.geteuid() == 0

    with TempDir("repoctx-badinput-") as tmp:
        os.chmod(tmp, 0o755)              # nobody must reach the repository
        repo = os.path.join(tmp, "repo")
        os.makedirs(repo)
        build_repo(repo)
        for d, _, files in os.walk(repo):
            os.chmod(d, 0o755)
            for f in files:
                p = os.path.join(d, f)
                if not os.path.islink(p) and f != "secret.py":
                    os.chmod(p, 0o644)
        want = expected_valid(repo)
        db = os.path.join(tmp, "index.db")

        # ---------------------------------------------------------------- 1. index a messy tree
        print("1. index the repository with bad files in it", flush=True)
        p = run(binary, ["index", repo, "--db", db])
        ck.check(p.returncode == 0, "index exits 0", f"exit {p.returncode}: {tail(p.stderr)}")
        err = p.stderr
        print("  stderr:\n" + "\n".join("    " + line for line in err.strip().splitlines()))
        check_warning(ck, err, "big_generated.py", [r"skip", r"limit|size"],
                      "it was skipped for its size")
        check_warning(ck, err, "binary.py", [r"skip", r"binary"], "it was skipped as binary")
        check_warning(ck, err, "gone.py", [r"skip", r"missing|dangling"],
                      "the dangling symlink was skipped")
        check_warning(ck, err, "syntax_errors.py", [r"syntax error", r"kept|recovered"],
                      "it has syntax errors and the recovered definitions were kept")
        check_warning(ck, err, "latin1.py", [r"utf-?8"], "it is not UTF-8 (and what was done)")
        ck.check(not warning_lines(err, "empty.py"), "no warning for the empty file")

        syms = symbols(binary, repo, db)
        got = {(e["file"], e["qualname"], e["kind"], e["start_line"], e["end_line"]) for e in syms}
        missing = sorted(want - got)
        ck.check(not missing, f"all {len(want)} valid definitions are in `symbols`",
                 f"missing {missing}")
        by_file = {}
        for e in syms:
            by_file.setdefault(e["file"], set()).add((e["qualname"], e["kind"]))
        ck.check(BROKEN_RECOVERED <= by_file.get("syntax_errors.py", set()),
                 "definitions around the syntax error are kept",
                 f"syntax_errors.py has {sorted(by_file.get('syntax_errors.py', set()))}")
        ck.check(("latin_func", "function") in by_file.get("latin1.py", set()),
                 "the latin-1 file's definition is kept",
                 f"latin1.py has {sorted(by_file.get('latin1.py', set()))}")
        for bad in ("binary.py", "big_generated.py", "gone.py"):
            ck.check(bad not in by_file, f"nothing indexed from {bad}")
        p = run(binary, ["files", repo, "--db", db, "--errors", "--no-refresh"])
        ck.check(p.returncode == 0 and "syntax_errors.py" in p.stdout
                 and len([line for line in p.stdout.splitlines() if line.strip()]) == 1,
                 "`files --errors` lists exactly syntax_errors.py", f"got: {p.stdout!r}")
        p = run(binary, ["files", repo, "--db", db, "--json", "--no-refresh"])
        ck.check(p.returncode == 0 and '"empty.py"' in p.stdout, "the empty file is indexed")
        p = run(binary, ["files", repo, "--db", db, "--skipped", "--no-refresh"])
        for name, reason in (("big_generated.py", "size"), ("binary.py", "binary"),
                             ("gone.py", "dangling"), ("pkg/loop", "symlink")):
            ck.check(any(name in line and reason in line for line in p.stdout.splitlines()),
                     f"`files --skipped` lists {name} ({reason})", f"got: {p.stdout!r}")

        # ------------------------------------------------------------ 2. the symlink loop, followed
        print("\n2. --follow-symlinks with a directory symlink loop", flush=True)
        db2 = os.path.join(tmp, "follow.db")
        p = run(binary, ["index", repo, "--db", db2, "--follow-symlinks"], timeout=120)
        ck.check(p.returncode == 0, "index --follow-symlinks terminates with exit 0",
                 f"exit {p.returncode}: {tail(p.stderr)}")
        check_warning(ck, p.stderr, "pkg/loop", [r"loop"], "the symlink loop was skipped")
        got2 = {(e["file"], e["qualname"], e["kind"], e["start_line"], e["end_line"])
                for e in symbols(binary, repo, db2)}
        ck.check(want <= got2 and not any(f.startswith("pkg/loop/") for f, *_ in got2),
                 "valid definitions kept, nothing indexed twice through the loop")

        # -------------------------------------------------------------------- 3. unreadable file
        print("\n3. an unreadable file", flush=True)
        prefix = ()
        db3_dir = os.path.join(tmp, "unreadable-db")
        os.makedirs(db3_dir)
        if as_root:
            prefix, how = root_prefix(binary, db3_dir)
            print(f"  (running as root: this check runs {how})")
            if prefix is None:
                ck.fail("running as root: found a way to run repoctx without read access to "
                        "everything", how)
        if prefix is not None:
            db3 = os.path.join(db3_dir, "index.db")
            p = run(binary, ["index", repo, "--db", db3], user_prefix=prefix)
            ck.check(p.returncode == 0, "index exits 0 with an unreadable file",
                     f"exit {p.returncode}: {tail(p.stderr)}")
            check_warning(ck, p.stderr, "secret.py",
                          [r"skip", r"cannot read|unreadable|permission"],
                          "it cannot be read and was skipped")
            syms3 = symbols(binary, repo, db3, prefix)
            got3 = {(e["file"], e["qualname"], e["kind"], e["start_line"], e["end_line"])
                    for e in syms3}
            ck.check(want <= got3, "valid definitions are all there",
                     f"missing {sorted(want - got3)}")
            ck.check(not any(e["file"] == "secret.py" for e in syms3),
                     "nothing indexed from the unreadable file")

        # ------------------------------------------------------------- 4. usage and lookup errors
        print("\n4. usage and lookup errors", flush=True)

        def expect(argv, code, patterns, what):
            p = run(binary, argv)
            msg = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ""
            ok = p.returncode == code and all(re.search(x, p.stderr, re.I) for x in patterns)
            ck.check(ok, f"{what}: exit {code}, message {patterns}",
                     f"`{cmdline(binary, argv)}` exited {p.returncode}; stderr: "
                     f"{tail(p.stderr, 600)!r}")
            if ok:
                print(f"        -> {msg}")
            return p

        missing_repo = os.path.join(tmp, "no", "such", "repo")
        expect(["index", missing_repo, "--db", os.path.join(tmp, "m.db")], 3, [r"does not exist"],
               "missing repository path (index)")
        expect(["symbols", missing_repo, "--db", os.path.join(tmp, "m.db")], 3,
               [r"does not exist"], "missing repository path (symbols)")
        ck.check(not os.path.exists(os.path.join(tmp, "m.db")),
                 "no index created for a missing repository")
        expect(["retrieve", repo, "--db", db, "--no-refresh", "--target", "nofile.py::f"], 3,
               [r"nofile\.py", r"not in the index|not found|no such|does not exist"],
               "--target in a file that does not exist")
        expect(["retrieve", repo, "--db", db, "--no-refresh", "--target",
                "pkg/core.py::Engine.runn"], 3, [r"Engine\.runn", r"Engine\.run\b"],
               "unknown qualname (closest name suggested)")
        p = expect(["retrieve", repo, "--db", db, "--no-refresh", "--target", "pkg/core.py::helper",
                    "--strategy", "bogus"], 2,
                   [r"bogus", r"sparse", r"same-file", r"imports", r"structural",
                    r"aligncoder-snippets"], "unknown strategy (valid names listed)")
        expect(["retrieve", repo, "--db", db, "--no-refresh", "--target", "pkg/core.py"], 2,
               [r"::"], "--target without '::'")
        # issue 19: the orders of imports and hybrid are checked before any work, in retrieve and eval.
        expect(["retrieve", repo, "--db", db, "--no-refresh", "--target", "pkg/core.py::helper",
                "--strategy", "imports", "--param", "imports_order=random"], 2,
               [r"imports_order", r"structural or bm25", r"random"], "unknown imports_order")
        expect(["eval", repo, "--strategies", "imports", "--param", "hybrid_fusion=max"], 2,
               [r"hybrid_fusion", r"structural-first, rrf or none", r"max"], "unknown hybrid_fusion (eval)")
        # A result count of 0 or less is a usage error in every command that takes one (not an empty
        # answer, nor a silent default); the checks run before any work (no index is touched).
        for k in ("0", "-1"):
            for argv in (["retrieve", repo, "--db", db, "--no-refresh", "--query", "engine", "-k", k],
                         ["retrieve", repo, "--db", db, "--no-refresh", "--query", "engine", "--top-k", k],
                         ["select-functions", repo, "--db", db, "--no-refresh", "--target",
                          "pkg/core.py::helper", "--top-files", k],
                         ["complete", repo, "--db", db, "--no-refresh", "--file", "pkg/core.py", "--line", "3",
                          "-k", k],
                         ["complete-eval", os.path.join(tmp, "none.jsonl"), "--out", os.path.join(tmp, "ce"),
                          "-k", k],
                         ["complete-retrieval-eval", os.path.join(tmp, "none.jsonl"), "-k", k]):
                expect(argv, 2, [r"--k\b|--top-k|--top-files", r"\b1\b.*10000"], f"{argv[0]} {argv[-2]} {k}")
        ck.check(not os.path.exists(os.path.join(tmp, "ce")), "complete-eval -k 0 created no results folder")
        # The watcher's polling interval: zero, negative, not a number or infinite would poll in a busy loop
        # or never; refused before any index is loaded.
        for value in ("0", "-1", "nan", "inf", "0.001", "1e9", "abc"):
            argv = ["serve", repo, "--db", db, "--no-refresh", "--port", "0", "--poll", "--poll-interval", value]
            try:
                p = run(binary, argv, timeout=30)   # an accepted interval would serve until killed
                ok = p.returncode == 2 and all(re.search(x, p.stderr) for x in (r"--poll-interval", r"0\.05",
                                                                                r"3600"))
                got = f"exit {p.returncode}; stderr: {tail(p.stderr, 600)!r}"
            except subprocess.TimeoutExpired:
                ok, got = False, "it started serving (killed after 30 s)"
            ck.check(ok, f"serve --poll-interval {value}: exit 2 naming --poll-interval and 0.05 .. 3600",
                     f"`{cmdline(binary, argv)}`: {got}")

        # --------------------------------------------------------------------- 5. damaged index
        print("\n5. damaged and foreign index files", flush=True)
        garbage = os.path.join(tmp, "garbage.db")
        blob = bytes((i * 7919 + 13) % 251 for i in range(64 * 1024))
        with open(garbage, "wb") as f:
            f.write(blob)
        for argv in (["symbols", repo, "--db", garbage, "--no-refresh"],
                     ["files", repo, "--db", garbage, "--no-refresh"],
                     ["retrieve", repo, "--db", garbage, "--no-refresh", "--target",
                      "pkg/core.py::helper"],
                     ["index", repo, "--db", garbage]):
            expect(argv, 4, [r"re-?index|re-run `?repoctx index|index --rebuild"],
                   f"damaged index ({argv[0]})")
        with open(garbage, "rb") as f:
            ck.check(f.read() == blob, "the damaged index file was left as it was")

        foreign = os.path.join(tmp, "foreign.sqlite")
        with sqlite3.connect(foreign) as c:
            c.execute("CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT)")
            c.execute("INSERT INTO users VALUES (1, 'alice')")
        c.close()

        def tables(path):
            with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as c2:
                return sorted(r[0] for r in c2.execute(
                    "SELECT name FROM sqlite_master WHERE type='table'"))
        expect(["symbols", repo, "--db", foreign, "--no-refresh"], 4,
               [r"not a repoctx index|foreign|re-?index|another"],
               "foreign SQLite database as --db (symbols --no-refresh)")
        expect(["index", repo, "--db", foreign], 4, [r"not a repoctx index|foreign|another"],
               "foreign SQLite database as --db (index)")
        ck.check(tables(foreign) == ["users"], "the foreign database was left as it was",
                 f"its tables are now {tables(foreign)}")

        # ---------------------------------------------------------- 6. a bare relative --db name
        print("\n6. --db with a bare relative file name", flush=True)
        cwd_db_dir = os.path.join(tmp, "cwd")
        os.makedirs(cwd_db_dir)
        q = subprocess.run([binary, "index", repo, "--db", "rel.db", "-q"], cwd=cwd_db_dir,
                           capture_output=True, text=True, timeout=300)
        ck.check(q.returncode == 0 and os.path.exists(os.path.join(cwd_db_dir, "rel.db")),
                 "`repoctx index REPO --db rel.db` (in the current folder) exits 0 and writes "
                 "./rel.db", f"exit {q.returncode}: {q.stderr.strip()}")

        # ------------------------------------------------------ 7. nothing indexed is lost
        print("\n7. adding a broken file keeps what was indexed", flush=True)
        before = {(e["file"], e["qualname"], e["kind"], e["start_line"], e["end_line"])
                  for e in symbols(binary, repo, db)}
        with open(os.path.join(repo, "pkg", "new_broken.py"), "w", encoding="utf-8") as f:
            f.write("def new_ok():\n    return 1\n\n\ndef new_bad(x:\n    return\n")
        p = run(binary, ["index", repo, "--db", db, "--json"])
        ck.check(p.returncode == 0, "re-index after adding a broken file exits 0",
                 f"exit {p.returncode}: {tail(p.stderr)}")
        check_warning(ck, p.stderr, "pkg/new_broken.py", [r"syntax error"],
                      "the new file has syntax errors")
        after = {(e["file"], e["qualname"], e["kind"], e["start_line"], e["end_line"])
                 for e in symbols(binary, repo, db)}
        ck.check(before <= after, f"all {len(before)} entities indexed before are still there",
                 f"lost {sorted(before - after)[:5]}")
        ck.check(any(f == "pkg/new_broken.py" and q == "new_ok" for f, q, *_ in after),
                 "the new file's valid definition is indexed")
        p = run(binary, ["files", repo, "--db", db, "--errors", "--no-refresh"])
        ck.check("pkg/new_broken.py" in p.stdout and "syntax_errors.py" in p.stdout,
                 "`files --errors` lists both broken files", f"got {p.stdout!r}")

        # ---------------------------------------------------------------- make-tasks / evaluate --jobs
        print("make-tasks and evaluate --jobs with bad arguments", flush=True)
        p = run(binary, ["make-tasks", repo, "--db", db, "--no-refresh", "--out", os.path.join(tmp, "t.jsonl")])
        ck.check(p.returncode == 3 and "no test files" in p.stderr,
                 "make-tasks on a repository without tests: exit 3, says what to do", tail(p.stderr))
        small = os.path.join(tmp, "small")
        os.makedirs(os.path.join(small, "pkg"))
        os.makedirs(os.path.join(small, "tests"))
        with open(os.path.join(small, "pkg", "mod.py"), "w") as f:
            f.write("def f(a):\n    x = a + 1\n    y = x * 2\n    return y\n")
        with open(os.path.join(small, "tests", "test_ok.py"), "w") as f:
            f.write("from pkg.mod import f\n\n\ndef test_it():\n    assert f(1) == 4\n")
        p = run(binary, ["make-tasks", small, "--db", os.path.join(tmp, "small.db"),
                         "--out", os.path.join(tmp, "no", "such", "dir", "t.jsonl")])
        ck.check(p.returncode == 4 and "cannot write" in p.stderr and "1 candidate" in p.stderr,
                 "make-tasks into a missing folder: exit 4, names the file and what to check", tail(p.stderr))
        ck.check(not os.path.exists(os.path.join(tmp, "no")), "make-tasks created nothing for the bad --out")
        tasks = os.path.join(tmp, "tasks.jsonl")
        with open(tasks, "w") as f:
            f.write('{"repo": "%s", "file": "pkg/mod.py", "function": "f", "test_command": "true"}\n' % repo)
        p = run(binary, ["evaluate", tasks, "--methods", "gold", "--out", os.path.join(tmp, "ev"), "--jobs", "0"])
        ck.check(p.returncode == 2 and "--jobs" in p.stderr, "evaluate --jobs 0: usage error naming --jobs", tail(p.stderr))
    return ck.finish("cli_bad_input")


if __name__ == "__main__":
    sys.exit(main_wrapper("cli_bad_input", main))
