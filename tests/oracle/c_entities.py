#!/usr/bin/env python3
"""C or C++ entities of a source tree by universal-ctags (its own C and C++ parsers, independent of
tree-sitter), written as ast_entities.py's JSONL so that compare_entities.py checks repoctx's extraction.

    c_entities.py ROOT [--out FILE] [--ctags PATH] [--language c|cpp]

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

--language cpp reads *.cc, *.cpp, *.cxx, *.hh, *.hpp, *.hxx and *.h with ctags' C++ parser; names are qualified by
their namespaces and classes ("ns.Outer.name", anonymous namespaces and structs adding nothing):
  class / struct / union / enum  -> class, [line, end]
  function                       -> method inside a class, struct or union (ctags' scope), else function
  member                         -> field "Scope.name"; enumerator -> variable "Scope.Enum.name", [line, line]
  typedef (and `using T = U`)    -> class, [line, line]; namespaces are no entities
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
from collections import defaultdict

TAGGED = ("struct", "union", "enum")


EXTENSIONS = {"c": (".c", ".h"), "cpp": (".cc", ".cpp", ".cxx", ".hh", ".hpp", ".hxx", ".h"), "csharp": (".cs",)}
CTAGS_LANGUAGE = {"c": ["--languages=C", "--langmap=C:.c.h"],
                  "cpp": ["--languages=C++", "--langmap=C++:.cc.cpp.cxx.hh.hpp.hxx.h"],
                  "csharp": ["--languages=C#", "--langmap=C#:.cs"]}


def walk_c_files(root, language="c"):
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not os.path.islink(os.path.join(dirpath, d)))
        for name in sorted(filenames):
            full = os.path.join(dirpath, name)
            if name.endswith(EXTENSIONS[language]) and not os.path.islink(full) and os.path.isfile(full):
                yield os.path.relpath(full, root).replace(os.sep, "/")


def ctags_tags(ctags, root, files, language="c"):
    """The tags of `files` (relative to root), grouped by file. ctags reads the list from stdin (-L -)."""
    cmd = [ctags, *CTAGS_LANGUAGE[language], "--output-format=json", "--fields=+neZSK",
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


def cpp_entities(tags):
    anon_typedef = {}  # "__anon..." -> the typedef that names an untagged struct
    for t in tags:
        ref = t.get("typeref", "")
        if t["kind"] == "typedef" and ref.split(":", 1)[0] in TAGGED + ("class",):
            target = ref.split(":", 1)[1].rsplit("::", 1)[-1]
            if "__anon" in target:
                anon_typedef.setdefault(target, t["name"])

    def qualify(scope, name):
        parts = []
        for part in scope.split("::") if scope else []:
            if part.startswith("__anon"):
                if part in anon_typedef:
                    parts.append(anon_typedef[part])
                continue
            parts.append(part)
        return ".".join(parts + [name])

    out = []
    for t in tags:
        k, name, line = t["kind"], t["name"], t["line"]
        end = t.get("end", line)
        scope = t.get("scope", "")
        if "operator" in name:  # `operator ()`, `operator Matcher<T>`: compared without spaces (repoctx's too)
            name = name.replace(" ", "")
        if name.startswith("__anon"):  # a lambda: no entity
            continue
        if k == "function":
            method = t.get("scopeKind") in ("class", "struct", "union")
            out.append([qualify(scope, name), "method" if method else "function", line, end])
        elif k == "macro":
            out.append([name, "function" if "signature" in t else "variable", line, end])
        elif k in TAGGED + ("class",):
            if name.startswith("__anon"):
                if name in anon_typedef:
                    out.append([qualify(scope, anon_typedef[name]), "class", line, end])
            else:
                out.append([qualify(scope, name), "class", line, end])
        elif k == "typedef":
            ref = t.get("typeref", "")
            target = ref.split(":", 1)[1].rsplit("::", 1)[-1] if ":" in ref else ""
            if not (target.startswith("__anon") and anon_typedef.get(target) == name):
                out.append([qualify(scope, name), "class", line, line])
        elif k == "member":
            out.append([qualify(scope, name), "field", line, end])
        elif k == "enumerator":
            out.append([qualify(scope, name), "variable", line, line])
        elif k == "variable":
            out.append([qualify(scope, name), "variable", line, end])
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("root")
    ap.add_argument("--out", help="output JSONL file (default: stdout)")
    ap.add_argument("--ctags", default=shutil.which("ctags") or "ctags", help="universal-ctags binary")
    ap.add_argument("--language", choices=["c", "cpp"], default="c")
    args = ap.parse_args(argv)
    if not os.path.isdir(args.root):
        ap.error(f"not a directory: {args.root}")
    files = list(walk_c_files(args.root, args.language))
    tags = ctags_tags(args.ctags, args.root, files, args.language)
    convert = cpp_entities if args.language == "cpp" else entities
    out = open(args.out, "w", encoding="utf-8") if args.out else sys.stdout
    try:
        for rel in files:
            out.write(json.dumps({"file": rel, "ok": True, "entities": convert(tags.get(rel, []))}) + "\n")
    finally:
        if out is not sys.stdout:
            out.close()


if __name__ == "__main__":
    sys.exit(main())
