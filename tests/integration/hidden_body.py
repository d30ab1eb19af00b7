#!/usr/bin/env python3
"""Retrieval for a target treats the target's body as absent.

    hidden_body.py --repoctx BIN REPO --targets N

For N documented functions/methods of REPO (chosen deterministically from `repoctx symbols`), the
repository is copied and, in the copy, the target's body is hidden by rewriting its file (the rule
below, computed with Python's ast on the ORIGINAL file).  For every strategy, `repoctx retrieve
--target T` must answer exactly the same on the original (where repoctx hides the body itself) as
on the copy (where the body is really gone): same (type, file, qualname, kind, start_line,
end_line, label, score) rows, scores bit-identical.  The target itself must never be a result.

Masking rule (the engine's mask_body, see src/repo/model.h): node = the (Async)FunctionDef with the
target's qualname and start line; body = node.body minus a leading docstring statement; first =
body[0].lineno, last = node.end_lineno, first_col = body[0].col_offset (UTF-8 byte offset).  For each
line L in [first, last]: L == first == last: line[:first_col] + '...'; L == last: indent + '...'
(indent = the def line's indentation + 4 spaces when the body starts on the header line, else the
first body line's leading whitespace); L == first: line[:first_col] + '#'; blank lines are kept;
any other line: its leading whitespace + '#'.  Each line keeps its newline.  Lines are split at
b'\\n' only (the engine's convention; '\\r' stays part of the line's text).
"""
import argparse
import ast
import json
import os
import shutil
import sys
import time
import warnings

from _util import (REPO_ROOT, Checker, Failure, TempDir, cmdline, main_wrapper, run, run_jsonl,
                   run_ok, tail)

sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "oracle"))
from ast_entities import child_blocks  # noqa: E402  (the oracle's scope rules)

# (label, strategy, extra retrieve args)
STRATEGIES = [
    ("sparse/entities", "sparse", ["--corpus", "entities"]),
    ("sparse/snippets", "sparse", ["--corpus", "snippets"]),
    ("same-file", "same-file", []),
    ("imports", "imports", []),
    ("aligncoder-snippets", "aligncoder-snippets", []),
    ("structural", "structural", []),
]
FIELDS = ("type", "file", "qualname", "kind", "start_line", "end_line", "label", "score")
TOP_K = 30


# ------------------------------------------------------------------------------- ast helpers
def callables(body, scope="module", prefix="", out=None):
    """[(qualname, node)] of every (Async)FunctionDef, qualnames computed like the oracle."""
    if out is None:
        out = []
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            qual = prefix + stmt.name
            out.append((qual, stmt))
            callables(stmt.body, "function", qual + ".<locals>.", out)
        elif isinstance(stmt, ast.ClassDef):
            callables(stmt.body, "class", prefix + stmt.name + ".", out)
        else:
            for block in child_blocks(stmt):
                callables(block, scope, prefix, out)
    return out


def is_docstring(stmt):
    return (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
            and isinstance(stmt.value.value, str))


def body_after_docstring(node):
    body = list(node.body)
    if body and is_docstring(body[0]):
        body = body[1:]
    return body


def split_nl(data):
    """Lines split at b'\\n', each keeping its b'\\n' (the last one may have none)."""
    parts = data.split(b"\n")
    lines = [p + b"\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def leading_ws(line):
    """Leading spaces and tabs (the engine's indent_of)."""
    n = len(line) - len(line.lstrip(b" \t"))
    return line[:n]


def mask_body(data, node):
    """The file's bytes with node's body (after the docstring) hidden; None if that body is empty."""
    body = body_after_docstring(node)
    if not body:
        return None
    first, last, first_col = body[0].lineno, node.end_lineno, body[0].col_offset
    lines = split_nl(data)
    out = list(lines)

    def content_nl(line):
        return (line[:-1], b"\n") if line.endswith(b"\n") else (line, b"")

    first_content, _ = content_nl(lines[first - 1])
    inline = first_content[:first_col].strip() != b""
    if inline:
        indent = leading_ws(content_nl(lines[node.lineno - 1])[0]) + b"    "
    else:
        indent = leading_ws(first_content)
    for L in range(first, last + 1):
        content, nl = content_nl(lines[L - 1])
        if L == first and L == last:
            new = content[:first_col] + b"..."
        elif L == last:
            new = indent + b"..."
        elif L == first:
            new = content[:first_col] + b"#"
        elif content.strip() == b"":
            new = content
        else:
            new = leading_ws(content) + b"#"
        out[L - 1] = new + nl
    return b"".join(out)


def parse_file(path):
    with open(path, "rb") as f:
        data = f.read()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return data, ast.parse(data)
        except (SyntaxError, ValueError, RecursionError):
            return data, None


# -------------------------------------------------------------------------- target selection
def choose_targets(repo, symbols, n):
    """N targets spread over the files: (file, qualname, start_line, end_line, node, data)."""
    by_file = {}
    for e in symbols:
        by_file.setdefault(e["file"], []).append(e)
    cands = []
    for path in sorted(by_file):
        ents = by_file[path]
        # `--target file::Q` resolves to the LAST callable named Q in the file (property setters,
        # if/else variants): only such entities can be targets.
        last_line = {}
        for e in ents:
            if e["kind"] in ("function", "method"):
                last_line[e["qualname"]] = max(last_line.get(e["qualname"], 0), e["start_line"])
        wanted = [e for e in ents if e["kind"] in ("function", "method")
                  and "<locals>" not in e["qualname"]
                  and e["start_line"] == last_line[e["qualname"]]]
        if not wanted:
            continue
        data, tree = parse_file(os.path.join(repo, path))
        if tree is None:
            continue
        # col_offset is a byte offset into the UTF-8 text ast decoded, and ast counts a lone '\r'
        # as a line end: only files whose bytes are UTF-8 with '\n' line ends map 1:1.
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        if b"\r" in data.replace(b"\r\n", b""):
            continue
        nodes = {(q, nd.lineno): nd for q, nd in callables(tree.body)}
        for e in wanted:
            node = nodes.get((e["qualname"], e["start_line"]))
            if node is None or not node.body or not is_docstring(node.body[0]):
                continue
            if not body_after_docstring(node):
                continue
            cands.append((path, e["qualname"], e["start_line"], e["end_line"], node, data))
    cands.sort(key=lambda c: (c[0], c[1], c[2]))
    if not cands:
        return [], 0
    step = max(1, len(cands) // n)
    return cands[::step][:n], len(cands)


# ------------------------------------------------------------------------------- retrieval
class RetrieveCaller:
    """`repoctx retrieve --target T --json`.  Works around (and reports once) a CLI failure of
    --json without --with-text by retrying with --with-text."""

    def __init__(self, binary, ck):
        self.binary, self.ck = binary, ck
        self.need_with_text = None    # None = not probed yet

    def __call__(self, repo, db, target, strategy, extra, refresh, with_text=False):
        args = ["retrieve", repo, "--db", db, "--target", target, "--strategy", strategy,
                "-k", str(TOP_K), "--json", "-q"] + extra
        if not refresh:
            args.append("--no-refresh")
        if with_text or self.need_with_text:
            args.append("--with-text")
            return args, run(self.binary, args)
        p = run(self.binary, args)
        if self.need_with_text is None and p.returncode == 2 and "needs --target" in p.stderr:
            self.ck.fail("`retrieve --target T --json` works without --with-text",
                         f"`{cmdline(self.binary, args)}` exited 2: {p.stderr.strip()} "
                         "(continuing with --with-text)")
            self.need_with_text = True
            args.append("--with-text")
            p = run(self.binary, args)
        elif self.need_with_text is None and p.returncode == 0:
            self.need_with_text = False
        return args, p


def row(r):
    return tuple(r.get(f) for f in FIELDS)


def fmt_row(r):
    return "{" + ", ".join(f"{f}={r.get(f)!r}" for f in FIELDS) + "}"


def compare_results(label, target, orig, copy):
    """None if equal, else a message naming the first mismatch."""
    a, b = orig.get("results", []), copy.get("results", [])
    for i in range(max(len(a), len(b))):
        ra = a[i] if i < len(a) else None
        rb = b[i] if i < len(b) else None
        if ra is None or rb is None:
            return (f"{label} {target}: {len(a)} results on the original, {len(b)} on the copy; "
                    f"first unmatched rank {i + 1}: original {fmt_row(ra) if ra else '-'}, "
                    f"copy {fmt_row(rb) if rb else '-'}")
        same = row(ra)[:-1] == row(rb)[:-1] and \
            float(ra["score"]).hex() == float(rb["score"]).hex()
        if not same:
            return (f"{label} {target}: rank {i + 1} differs:\n"
                    f"          original {fmt_row(ra)}\n"
                    f"          copy     {fmt_row(rb)}")
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repoctx", required=True, help="path to the repoctx binary")
    ap.add_argument("repo")
    ap.add_argument("--targets", type=int, required=True, metavar="N")
    args = ap.parse_args()
    binary = os.path.abspath(args.repoctx)
    repo = os.path.abspath(args.repo)
    if not os.path.isdir(repo):
        raise Failure(f"not a directory: {repo}")
    ck = Checker()
    caller = RetrieveCaller(binary, ck)
    compared = skipped_structural = 0
    t0 = time.time()

    with TempDir("repoctx-hidden-") as tmp:
        orig_db = os.path.join(tmp, "orig.db")
        print(f"indexing {repo}", flush=True)
        run_ok(binary, ["index", repo, "--db", orig_db, "-q"])
        symbols = run_jsonl(binary, ["symbols", repo, "--db", orig_db, "--jsonl", "--no-refresh"])
        targets, n_cands = choose_targets(repo, symbols, args.targets)
        print(f"{len(symbols)} entities, {n_cands} candidate targets, {len(targets)} chosen",
              flush=True)
        if not ck.check(len(targets) > 0, "at least one target with a documented, non-empty body"):
            return ck.finish("hidden_body")
        structural_ok = True

        for ti, (path, qual, start, end, node, data) in enumerate(targets, 1):
            target = f"{path}::{qual}"
            masked = mask_body(data, node)
            if end != node.end_lineno:
                ck.fail(f"{target}: repoctx's end_line equals ast's end_lineno",
                        f"repoctx {start}-{end}, ast {node.lineno}-{node.end_lineno} (an entity "
                        "extraction error: the engine hides a different line range)")
            print(f"--- [{ti}/{len(targets)}] {target} (lines {start}-{end}, body "
                  f"{body_after_docstring(node)[0].lineno}-{node.end_lineno})", flush=True)
            # same basename: module names derive from the root folder's name (sympy/... -> sympy.*)
            copy = os.path.join(tmp, "copy", os.path.basename(repo))
            copy_db = os.path.join(tmp, "copy.db")
            remove_copy(copy, copy_db)
            shutil.copytree(repo, copy, symlinks=True)
            with open(os.path.join(copy, path), "wb") as f:
                f.write(masked)
            run_ok(binary, ["index", copy, "--db", copy_db, "-q"])
            # the copy still defines the target (with its body hidden), at the same lines
            cs = [e for e in run_jsonl(binary, ["symbols", copy, "--db", copy_db, "--jsonl",
                                                "--no-refresh", "--file", path])
                  if e["qualname"] == qual and e["kind"] in ("function", "method")]
            ck.check(any(e["start_line"] == start and e["end_line"] == end for e in cs),
                     f"{target}: the copy's masked file still defines it at {start}-{end}",
                     f"copy has {[(e['start_line'], e['end_line']) for e in cs]}")
            for label, strategy, extra in STRATEGIES:
                if strategy == "structural" and not structural_ok:
                    continue
                # same-file: with the texts, so that the engine's masked file is compared too
                wt = strategy == "same-file"
                a_args, pa = caller(repo, orig_db, target, strategy, extra, refresh=False,
                                    with_text=wt)
                if (strategy == "structural" and pa.returncode == 3
                        and "no built-in structural model" in pa.stderr):
                    print("  (structural: no built-in structural model in this build; skipped)")
                    structural_ok = False
                    skipped_structural = 1
                    continue
                b_args, pb = caller(copy, copy_db, target, strategy, extra, refresh=False,
                                    with_text=wt)
                bad = [(x, p) for x, p in ((a_args, pa), (b_args, pb)) if p.returncode != 0]
                if bad:
                    for x, p in bad:
                        ck.fail(f"{label} {target}: retrieve exits 0",
                                f"`{cmdline(binary, x)}` exited {p.returncode}: {tail(p.stderr, 500)}")
                    continue
                ra, rb = json.loads(pa.stdout), json.loads(pb.stdout)
                compared += 1
                msg = compare_results(label, target, ra, rb)
                ck.check(msg is None,
                         f"{label:20} {target}: original == copy ({len(ra['results'])} results)",
                         msg or "")
                selfhits = [r for side, res in (("original", ra), ("copy", rb))
                            for r in res["results"]
                            if r.get("type") == "entity" and r.get("file") == path
                            and r.get("qualname") == qual and r.get("start_line") == start]
                if selfhits:
                    ck.fail(f"{label} {target}: the target is not among the results",
                            f"found {fmt_row(selfhits[0])}")
                # text (present with --with-text): the original's must be the copy's
                if "text" in (ra["results"][:1] or [{}])[0]:
                    ta = [r.get("text") for r in ra["results"]]
                    tb = [r.get("text") for r in rb["results"]]
                    if ta != tb:
                        ck.fail(f"{label} {target}: result texts identical",
                                first_text_difference(ta, tb))
            remove_copy(copy, copy_db)

    n_strat = len(STRATEGIES) - skipped_structural
    print(f"\ncompared {compared} (target, strategy) pairs: {len(targets)} targets x "
          f"{n_strat} strategies{' (structural skipped: no model)' if skipped_structural else ''}"
          f" in {time.time() - t0:.0f} s")
    return ck.finish("hidden_body")


def first_text_difference(ta, tb):
    for i, (x, y) in enumerate(zip(ta, tb)):
        if x != y:
            lx, ly = (x or "").split("\n"), (y or "").split("\n")
            for n, (u, v) in enumerate(zip(lx, ly), 1):
                if u != v:
                    return f"rank {i + 1}, text line {n}: original {u!r} vs copy {v!r}"
            return f"rank {i + 1}: {len(lx)} text lines on the original, {len(ly)} on the copy"
    return f"{len(ta)} texts on the original, {len(tb)} on the copy"


def remove_copy(copy, copy_db):
    if os.path.isdir(copy):
        shutil.rmtree(os.path.dirname(copy))
    for suffix in ("", "-wal", "-shm", "-journal"):
        if os.path.exists(copy_db + suffix):
            os.remove(copy_db + suffix)


if __name__ == "__main__":
    sys.exit(main_wrapper("hidden_body", main))
