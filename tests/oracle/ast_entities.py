#!/usr/bin/env python3
"""Oracle for repoctx's Python entity extraction, built on CPython's own `ast`.

    ast_entities.py ROOT [--out FILE]

Writes JSON Lines, one object per *.py file under ROOT, in sorted relative-path order:
    {"file": "pkg/mod.py", "ok": true,  "entities": [[qualname, kind, start_line, end_line], ...]}
    {"file": "pkg/bad.py", "ok": false, "error": "SyntaxError: invalid syntax line 3"}

Entity contract (the C++ extractor implements the same rules):
  * Scopes are the module body, class bodies and function bodies.  Compound statements that do
    not open a scope (if/for/while/try/with/match, sync and async) are descended into, every branch.
    Lambdas and comprehensions produce nothing.
  * ClassDef -> "class"; (Async)FunctionDef -> "method" when the directly enclosing scope is a class
    body, else "function".  qualname follows __qualname__ ("C.m", "f.<locals>.g").
    Lines: start = the def/class line (not the decorator), end = end_lineno.
  * Assign targets that are Names (also Names nested in Tuple/List/Starred targets) and AnnAssign
    with a Name target give "variable" (module scope, qualname = name) or "attribute" (class scope,
    qualname = "ClassQual.name"), lines = the statement's.  Nothing for AugAssign, for/with targets,
    imports or walrus; no variables at all in function scopes.
  * Duplicates are kept; entities are listed in source pre-order.
Walk: files named *.py; directories named __pycache__, .git, node_modules, site-packages,
dist-packages (below ROOT) and symlinked directories are skipped.  Symlinked *files* are read
(the contract only excludes symlinked directories).  Python 3.11 grammar.
"""
import argparse
import ast
import json
import os
import sys
import warnings

SKIP_DIRS = {"__pycache__", ".git", "node_modules", "site-packages", "dist-packages"}


def walk_py_files(root):
    """Yield relative '/'-separated paths of *.py files under root, sorted."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = [d for d in dirnames
                       if d not in SKIP_DIRS and not os.path.islink(os.path.join(dirpath, d))]
        rel_dir = os.path.relpath(dirpath, root)
        for name in filenames:
            if name.endswith(".py") and os.path.isfile(os.path.join(dirpath, name)):
                rel = name if rel_dir == "." else os.path.join(rel_dir, name)
                found.append(rel.replace(os.sep, "/"))
    return sorted(found)


def parse_bytes(data):
    """ast.parse on bytes (honours PEP 263 cookies, BOMs) -> (tree, None) or (None, error)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarning / DeprecationWarning on odd escapes
            return ast.parse(data), None
    except SyntaxError as e:
        return None, f"{type(e).__name__}: {e.msg} line {e.lineno}"
    except (ValueError, UnicodeDecodeError, RecursionError, MemoryError) as e:
        return None, f"{type(e).__name__}: {e}"


def target_names(target):
    """Names bound by an assignment target: a Name, or Names in Tuple/List/Starred, recursively."""
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, (ast.Tuple, ast.List)):
        for elt in target.elts:
            yield from target_names(elt)
    elif isinstance(target, ast.Starred):
        yield from target_names(target.value)
    # Attribute / Subscript targets bind no name in this scope.


def child_blocks(stmt):
    """Nested statement lists of a compound statement that opens no scope, in source order
    (empty for simple statements and for def/class, which the caller handles)."""
    if isinstance(stmt, (ast.If, ast.For, ast.AsyncFor, ast.While)):
        return [stmt.body, stmt.orelse]
    if isinstance(stmt, (ast.Try, ast.TryStar)):
        return [stmt.body] + [h.body for h in stmt.handlers] + [stmt.orelse, stmt.finalbody]
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return [stmt.body]
    if isinstance(stmt, ast.Match):
        return [case.body for case in stmt.cases]
    return []


def extract(body, scope_kind="module", qual_prefix="", out=None):
    """Entities of a statement list. scope_kind: 'module' | 'class' | 'function'.
    qual_prefix: '' at module level, 'C.' in class C, 'f.<locals>.' in function f."""
    if out is None:
        out = []
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            qual = qual_prefix + stmt.name
            kind = "method" if scope_kind == "class" else "function"
            out.append([qual, kind, stmt.lineno, stmt.end_lineno])
            extract(stmt.body, "function", qual + ".<locals>.", out)
        elif isinstance(stmt, ast.ClassDef):
            qual = qual_prefix + stmt.name
            out.append([qual, "class", stmt.lineno, stmt.end_lineno])
            extract(stmt.body, "class", qual + ".", out)
        elif scope_kind != "function" and isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            kind = "variable" if scope_kind == "module" else "attribute"
            if isinstance(stmt, ast.Assign):
                names = [n for t in stmt.targets for n in target_names(t)]
            else:
                names = [stmt.target.id] if isinstance(stmt.target, ast.Name) else []
            for name in names:
                out.append([qual_prefix + name, kind, stmt.lineno, stmt.end_lineno])
        else:
            for block in child_blocks(stmt):
                extract(block, scope_kind, qual_prefix, out)
    return out


def file_record(root, rel):
    try:
        with open(os.path.join(root, rel), "rb") as f:
            data = f.read()
    except OSError as e:
        return {"file": rel, "ok": False, "error": f"{type(e).__name__}: {e.strerror}"}
    tree, error = parse_bytes(data)
    if tree is None:
        return {"file": rel, "ok": False, "error": error}
    try:
        return {"file": rel, "ok": True, "entities": extract(tree.body)}
    except RecursionError:
        return {"file": rel, "ok": False, "error": "RecursionError: nesting too deep"}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("root")
    ap.add_argument("--out", help="output JSONL file (default: stdout)")
    args = ap.parse_args(argv)
    if not os.path.isdir(args.root):
        ap.error(f"not a directory: {args.root}")
    out = open(args.out, "w", encoding="utf-8") if args.out else sys.stdout
    try:
        for rel in walk_py_files(args.root):
            out.write(json.dumps(file_record(args.root, rel)) + "\n")
    finally:
        if out is not sys.stdout:
            out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
