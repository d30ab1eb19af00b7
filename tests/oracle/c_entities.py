#!/usr/bin/env python3
"""C entities of a source tree by universal-ctags (its own C parser, independent of tree-sitter), written as
ast_entities.py's JSONL so that compare_entities.py checks repoctx's C extraction against it.

    c_entities.py ROOT [--out FILE] [--ctags PATH]

Every *.c and *.h file under ROOT (links not followed) is one record:
    {"file": "kernel/fork.c", "ok": true, "entities": [[qualname, kind, start_line, end_line], ...]}
ctags' tags map onto repoctx's C model (src/repo/c/extract.cpp):
  function                       -> function, [line, end]
  macro                          -> function when it takes parameters, else variable, [line, end]
  struct / union / enum (tagged) -> class by its tag, [line, end] (a tag declared inside a struct is file-scope)
  untagged struct / union / enum -> class by the typedef that names it, [line, end]; else not an entity
  typedef (any other)            -> class, [line, line] (ctags gives a typedef no end)
  member                         -> field "Owner.name", [line, end]: Owner is the nearest named enclosing type
                                    (an untagged struct or union inside another lends its members to it)
  enumerator                     -> variable, [line, line]
  variable (definitions)         -> variable, [line, end]
Extern declarations, locals and labels are not entities (ctags' defaults agree); repoctx's header prototypes
(functions whose signature ends in ';') are left out of the comparison, as ctags lists no prototype by default.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
from collections import defaultdict

TAGGED = ("struct", "union", "enum")


def walk_c_files(root):
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not os.path.islink(os.path.join(dirpath, d)))
        for name in sorted(filenames):
            full = os.path.join(dirpath, name)
            if name.endswith((".c", ".h")) and not os.path.islink(full) and os.path.isfile(full):
                yield os.path.relpath(full, root).replace(os.sep, "/")


def ctags_tags(ctags, root, files):
    """The tags of `files` (relative to root), grouped by file. ctags reads the list from stdin (-L -)."""
    cmd = [ctags, "--languages=C", "--langmap=C:.c.h", "--output-format=json", "--fields=+neZS",
           "-L", "-", "-f", "-"]
    p = subprocess.run(cmd, input="\n".join(files) + "\n", capture_output=True, text=True, cwd=root,
                       errors="replace", check=False)
    if p.returncode != 0:
        sys.exit(f"ctags exited {p.returncode}: {p.stderr[-2000:]}")
    by_file = defaultdict(list)
    for line in p.stdout.splitlines():
        try:
            t = json.loads(line)
        except json.JSONDecodeError:
            continue  # ctags' own diagnostics
        if t.get("_type") == "tag":
            by_file[t["path"]].append(t)
    return by_file


def entities(tags):
    anon_typedef = {}  # "__anon..." -> the typedef name
    for t in tags:
        ref = t.get("typeref", "")
        if t["kind"] == "typedef" and ref.split(":", 1)[0] in TAGGED:
            target = ref.split(":", 1)[1]
            if "__anon" in target.rsplit("::", 1)[-1]:
                anon_typedef.setdefault(target.rsplit("::", 1)[-1], t["name"])

    def owner(scope):
        for part in reversed(scope.split("::")):
            if not part.startswith("__anon"):
                return part
            if part in anon_typedef:
                return anon_typedef[part]
        return None

    out = []
    for t in tags:
        k, name, line = t["kind"], t["name"], t["line"]
        end = t.get("end", line)
        if k == "function":
            out.append([name, "function", line, end])
        elif k == "macro":
            out.append([name, "function" if "signature" in t else "variable", line, end])
        elif k in TAGGED:
            if name.startswith("__anon"):
                if name in anon_typedef:
                    out.append([anon_typedef[name], "class", line, end])
            else:
                out.append([name, "class", line, end])
        elif k == "typedef":
            ref = t.get("typeref", "")
            target = ref.split(":", 1)[1].rsplit("::", 1)[-1] if ref.split(":", 1)[0] in TAGGED else ""
            if not (target.startswith("__anon") and anon_typedef.get(target) == name):
                out.append([name, "class", line, line])
        elif k == "member":
            o = owner(t.get("scope", ""))
            if o:
                out.append([f"{o}.{name}", "field", line, end])
        elif k == "enumerator":
            out.append([name, "variable", line, line])
        elif k == "variable":
            out.append([name, "variable", line, end])
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("root")
    ap.add_argument("--out", help="output JSONL file (default: stdout)")
    ap.add_argument("--ctags", default=shutil.which("ctags") or "ctags", help="universal-ctags binary")
    args = ap.parse_args(argv)
    if not os.path.isdir(args.root):
        ap.error(f"not a directory: {args.root}")
    files = list(walk_c_files(args.root))
    tags = ctags_tags(args.ctags, args.root, files)
    out = open(args.out, "w", encoding="utf-8") if args.out else sys.stdout
    try:
        for rel in files:
            out.write(json.dumps({"file": rel, "ok": True, "entities": entities(tags.get(rel, []))}) + "\n")
    finally:
        if out is not sys.stdout:
            out.close()


if __name__ == "__main__":
    sys.exit(main())
