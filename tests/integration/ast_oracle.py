#!/usr/bin/env python3
"""Entity extraction vs. each language's own parser, on whole source trees.

    ast_oracle.py --repoctx BIN [--language python|go|javascript|rust|c|cpp|csharp] [--min-agreement F] ROOT [ROOT...]

For each ROOT: the language's oracle -> oracle JSONL (python: tests/oracle/ast_entities.py, CPython's ast;
go: tests/oracle/go_entities.go, go/ast, built with the Go toolchain into a temporary folder; javascript
(JavaScript and TypeScript): tests/oracle/ts_entities.js, the TypeScript compiler's parser under node; rust:
tests/oracle/rust_entities, syn's parser, built offline with cargo against Debian's crates in
/usr/share/cargo/registry; c, cpp: tests/oracle/c_entities.py, universal-ctags' C and C++ parsers; csharp: tests/oracle/cs_entities.py,
universal-ctags' C# parser);
`repoctx symbols ROOT --db TMP --keep-vendored --keep-generated --jsonl -q` -> repoctx JSONL;
tests/oracle/compare_entities.py ORACLE REPOCTX (python: exit 0 iff every file the oracle parsed agrees;
go, javascript, rust: iff >= 99% of the entities agree both ways, the disagreements listed; c, cpp: iff the
agreement reaches --min-agreement, default 99%; csharp likewise).
Prints each comparison's summary; exits 1 if any root disagrees.
"""
import argparse
import os
import shutil
import subprocess
import sys

from _util import REPO_ROOT, Checker, TempDir, cmdline, main_wrapper, run, tail

ORACLE = os.path.join(REPO_ROOT, "tests", "oracle", "ast_entities.py")
GO_ORACLE = os.path.join(REPO_ROOT, "tests", "oracle", "go_entities.go")
GO_KINDS = "class,interface,function,method,variable,field"
TS_ORACLE = os.path.join(REPO_ROOT, "tests", "oracle", "ts_entities.js")
TS_KINDS = "class,interface,function,method,constructor,variable,field"
RUST_ORACLE = os.path.join(REPO_ROOT, "tests", "oracle", "rust_entities")
C_ORACLE = os.path.join(REPO_ROOT, "tests", "oracle", "c_entities.py")
CS_ORACLE = os.path.join(REPO_ROOT, "tests", "oracle", "cs_entities.py")
CS_KINDS = "class,interface,method,field"
C_KINDS = "class,function,variable,field"
RUST_KINDS = "class,interface,function,method,variable,field"
CPP_KINDS = "class,function,method,variable,field"
DEBIAN_CRATES = "/usr/share/cargo/registry"
COMPARE = os.path.join(REPO_ROOT, "tests", "oracle", "compare_entities.py")


def build_go_oracle(tmp, ck):
    """The Go oracle's binary, built offline with the system Go toolchain (None when that fails)."""
    exe = os.path.join(tmp, "go_entities")
    env = dict(os.environ, GOCACHE=os.path.join(tmp, "gocache"), GOPATH=os.path.join(tmp, "gopath"),
               GOFLAGS="-mod=mod", GOTOOLCHAIN="local", GOPROXY="off", GO111MODULE="off")
    try:
        p = subprocess.run(["go", "build", "-o", exe, GO_ORACLE], capture_output=True, text=True,
                           timeout=600, env=env, cwd=tmp)
    except FileNotFoundError:
        ck.fail("the Go toolchain (`go`) is not installed: run scripts/setup.sh --test-tools")
        return None
    if not ck.check(p.returncode == 0, "the go/ast oracle builds", tail(p.stderr)):
        return None
    return exe


def build_rust_oracle(tmp, ck):
    """The Rust oracle's binary, built offline by cargo from the crates Debian installs (None when that fails)."""
    src = os.path.join(tmp, "rust_entities")
    shutil.copytree(RUST_ORACLE, src, ignore=shutil.ignore_patterns("target"))
    os.makedirs(os.path.join(src, ".cargo"), exist_ok=True)
    with open(os.path.join(src, ".cargo", "config.toml"), "w", encoding="utf-8") as f:
        f.write('[source.crates-io]\nreplace-with = "debian"\n'
                f'[source.debian]\ndirectory = "{DEBIAN_CRATES}"\n[net]\noffline = true\n')
    # Debian's cargo (scripts/apt.lock) when installed: the crates in the registry are the ones it builds.
    cargo = "/usr/bin/cargo" if os.path.exists("/usr/bin/cargo") else shutil.which("cargo")
    if cargo is None:
        ck.fail("cargo is not installed: run scripts/setup.sh --test-tools")
        return None
    env = dict(os.environ, CARGO_TARGET_DIR=os.path.join(tmp, "cargo-target"))
    p = subprocess.run([cargo, "build", "--release", "--offline", "--quiet"], capture_output=True, text=True,
                       timeout=900, env=env, cwd=src)
    if not ck.check(p.returncode == 0, "the syn oracle builds", tail(p.stderr)):
        return None
    return os.path.join(tmp, "cargo-target", "release", "rust_entities")


def oracle_command(language, oracle_exe, root, out):
    if language in ("c", "cpp"):
        return [sys.executable, C_ORACLE, root, "--out", out, "--language", language]
    if language == "csharp":
        return [sys.executable, CS_ORACLE, root, "--out", out]
    if language in ("go", "rust"):
        return [oracle_exe, "--out", out, root]
    if language == "javascript":
        return ["node", TS_ORACLE, root, "--out", out]
    return [sys.executable, ORACLE, root, "--out", out]


def check_root(binary, root, tmp, ck, idx, language="python", oracle_exe=None, min_agreement=None):
    print(f"=== {root}", flush=True)
    if not os.path.isdir(root):
        ck.fail(f"{root}: not a directory")
        return
    oracle_out = os.path.join(tmp, f"oracle{idx}.jsonl")
    ours_out = os.path.join(tmp, f"repoctx{idx}.jsonl")
    db = os.path.join(tmp, f"index{idx}.db")

    p = subprocess.run(oracle_command(language, oracle_exe, root, oracle_out),
                       capture_output=True, text=True, timeout=1200)
    if not ck.check(p.returncode == 0, f"oracle ran on {root}",
                    f"exit {p.returncode}: {tail(p.stderr)}"):
        return

    args = ["symbols", root, "--db", db, "--keep-vendored", "--keep-generated", "--jsonl", "-q"]
    if language == "javascript":  # bundled libraries (typescript.js: 9 MB) are sources the oracle reads too
        args += ["--max-file-mb", "64"]
    p = run(binary, args, timeout=1200)
    if not ck.check(p.returncode == 0, f"`{cmdline(binary, args)}` exits 0",
                    f"exit {p.returncode}: {tail(p.stderr)}"):
        return
    if p.stderr.strip():
        print("  repoctx warnings (stderr):")
        for line in p.stderr.strip().splitlines()[:20]:
            print(f"    {line}")
    with open(ours_out, "w", encoding="utf-8") as f:
        if language in ("c", "cpp"):
            # Prototypes (a header's, a class's member declarations: signature ending in ';'): ctags lists none
            # by default. C++ constructors are methods to ctags; C files of a C++ tree are the C oracle's.
            import json
            for line in p.stdout.splitlines():
                e = json.loads(line) if line.strip() else None
                if not e or (e.get("kind") in ("function", "method", "constructor") and
                             (e.get("signature", "").endswith(";") or "declaration" in e.get("decorators", []))):
                    continue
                if language == "cpp" and e["file"].endswith(".c"):
                    continue
                if e.get("kind") == "constructor":
                    e["kind"] = "method"
                if language == "cpp" and "operator" in e["qualname"]:  # `operator ()` as ctags spaces it
                    e["qualname"] = e["qualname"].replace(" ", "")
                f.write(json.dumps(e) + "\n")
        elif language == "csharp":
            # ctags' C# parser lists no indexers, and a delegate as a method; constructors are methods to it.
            import json
            for line in p.stdout.splitlines():
                e = json.loads(line) if line.strip() else None
                if not e or not e["file"].endswith(".cs") or e["qualname"].endswith(".this"):
                    continue
                if e.get("kind") == "constructor":
                    e["kind"] = "method"
                if e.get("kind") == "class" and " delegate " in f' {e.get("signature", "")} ':
                    e["kind"] = "method"
                f.write(json.dumps(e) + "\n")
        else:
            f.write(p.stdout)

    compare = [sys.executable, COMPARE, oracle_out, ours_out]
    if language == "go":
        compare += ["--kinds", GO_KINDS, "--min-agreement", "0.99"]
    if language == "javascript":
        compare += ["--kinds", TS_KINDS, "--min-agreement", "0.99"]
    if language == "rust":
        compare += ["--kinds", RUST_KINDS, "--min-agreement", "0.99"]
    if language == "c":  # the measured agreement on the kernel (docs/EVAL.md), not the 99% target: a regression guard
        compare += ["--kinds", C_KINDS, "--min-agreement", str(min_agreement or 0.99)]
    if language == "cpp":
        compare += ["--kinds", CPP_KINDS, "--min-agreement", str(min_agreement or 0.99)]
    if language == "csharp":
        compare += ["--kinds", CS_KINDS, "--min-agreement", str(min_agreement or 0.99)]
    c = subprocess.run(compare, capture_output=True, text=True, timeout=600)
    print("\n".join("  " + line for line in c.stdout.rstrip().splitlines()))
    if c.stderr.strip():
        print(tail(c.stderr))
    ck.check(c.returncode == 0, f"repoctx agrees with the {language} oracle on {root}",
             f"compare_entities.py exited {c.returncode}")


def extract_members(tarball, members, dest, ck):
    """The folders `members` of `tarball`, extracted under dest (regular files and folders only)."""
    import tarfile
    prefixes = tuple(m.rstrip("/") + "/" for m in members)
    with tarfile.open(tarball) as tf:
        def wanted():
            for ti in tf:
                parts = ti.name.split("/")
                # The same guard as Python 3.12's "data" filter, which Debian 12's 3.11.2 lacks: nothing outside
                # dest, no links or devices, no set-uid bits.
                if (ti.isfile() or ti.isdir()) and ti.name.startswith(prefixes) and ".." not in parts:
                    ti.mode &= 0o755
                    yield ti
        tf.extractall(dest, members=wanted())
    roots = [os.path.join(dest, m) for m in members]
    for r in roots:
        ck.check(os.path.isdir(r), f"{r} extracted from {tarball}", "no such folder in the tarball")
    return roots


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repoctx", required=True, help="path to the repoctx binary")
    ap.add_argument("--language", choices=["python", "go", "javascript", "rust", "c", "cpp", "csharp"], default="python")
    ap.add_argument("--min-agreement", type=float, default=None,
                    help="c: the entity agreement the run must reach (default 0.99)")
    ap.add_argument("--tarball", help="ROOTs are folders inside this .tar.xz (e.g. the kernel's "
                    "linux-source-6.1/kernel), extracted into a temporary folder first")
    ap.add_argument("roots", nargs="+", metavar="ROOT")
    args = ap.parse_args()
    binary = os.path.abspath(args.repoctx)
    ck = Checker()
    with TempDir("repoctx-oracle-") as tmp:
        builders = {"go": build_go_oracle, "rust": build_rust_oracle}
        oracle_exe = builders[args.language](tmp, ck) if args.language in builders else None
        if args.language in builders and oracle_exe is None:
            return ck.finish("ast_oracle")
        roots = args.roots
        if args.tarball:
            roots = extract_members(args.tarball, args.roots, os.path.join(tmp, "tree"), ck)
        for i, root in enumerate(roots):
            check_root(binary, os.path.abspath(root), tmp, ck, i, args.language, oracle_exe, args.min_agreement)
            # the index of a large tree is not needed any more
            for suffix in ("", "-wal", "-shm", "-journal"):
                p = os.path.join(tmp, f"index{i}.db{suffix}")
                if os.path.exists(p):
                    os.remove(p)
    return ck.finish("ast_oracle")


if __name__ == "__main__":
    sys.exit(main_wrapper("ast_oracle", main))
