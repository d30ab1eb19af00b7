#!/usr/bin/env python3
"""C# entities of a source tree by universal-ctags (its own C# parser, independent of tree-sitter), written as
ast_entities.py's JSONL so that compare_entities.py checks repoctx's extraction.

    cs_entities.py ROOT [--out FILE] [--ctags PATH]

Every *.cs file under ROOT (links not followed) is one record:
    {"file": "A/B.cs", "ok": true, "entities": [[qualname, kind, start_line, end_line], ...]}
ctags' tags map onto repoctx's C# model (src/repo/csharp/extract.cpp):
  class / struct / enum   -> class, [line, end]
  interface               -> interface, [line, end]
  method                  -> method (constructors, destructors `~C`, operators `operator +` included), [line, end]
  property / field / event -> field, [line, end]
  enumerator              -> field "Enum.name", [line, line]
Names are qualified by their enclosing types, not by their namespace ("Outer.Inner.m"): the namespace is the
file's module. Namespaces and `using X = ...` aliases (ctags' typedef) are no entities. ctags lists no
indexers or local functions; compare_entities.py's --kinds leaves local functions out, and ast_oracle.py
leaves repoctx's indexers out.
"""
import argparse
import json
import os
import shutil
import sys

from c_entities import ctags_tags, walk_c_files

KINDS = {"class": "class", "struct": "class", "enum": "class", "interface": "interface", "method": "method",
         "property": "field", "field": "field", "event": "field", "enumerator": "field"}


def entities(tags):
    namespaces = sorted({t["name"] for t in tags if t["kind"] == "namespace"} |
                        {f'{t["scope"]}.{t["name"]}' for t in tags if t["kind"] == "namespace" and t.get("scope")},
                        key=len, reverse=True)

    def qualify(scope, name):
        for ns in namespaces:  # the longest namespace the scope starts with is the file's module
            if scope == ns:
                scope = ""
                break
            if scope.startswith(ns + "."):
                scope = scope[len(ns) + 1:]
                break
        return f"{scope}.{name}" if scope else name

    out = []
    for t in tags:
        kind = KINDS.get(t["kind"])
        if kind is None:
            continue
        scope = t.get("scope", "") if t.get("scopeKind") != "namespace" else ""
        end = t.get("end", t["line"])
        out.append([qualify(scope, t["name"]), kind, t["line"], t["line"] if t["kind"] == "enumerator" else end])
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("root")
    ap.add_argument("--out", help="output JSONL file (default: stdout)")
    ap.add_argument("--ctags", default=shutil.which("ctags") or "ctags", help="universal-ctags binary")
    args = ap.parse_args(argv)
    if not os.path.isdir(args.root):
        ap.error(f"not a directory: {args.root}")
    files = list(walk_c_files(args.root, "csharp"))
    tags = ctags_tags(args.ctags, args.root, files, "csharp")
    out = open(args.out, "w", encoding="utf-8") if args.out else sys.stdout
    try:
        for rel in files:
            out.write(json.dumps({"file": rel, "ok": True, "entities": entities(tags.get(rel, []))}) + "\n")
    finally:
        if out is not sys.stdout:
            out.close()


if __name__ == "__main__":
    sys.exit(main())
