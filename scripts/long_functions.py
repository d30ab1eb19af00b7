#!/usr/bin/env python3
"""Lists C++ functions longer than a limit (default 80 lines) under src/.

    scripts/long_functions.py [--max 80] [--allow docs/ARCHITECTURE.md] [SRC]

A function starts at a line holding its signature and the `{` that opens its body (a definition at any
depth: free functions, methods in class bodies); it ends at the matching `}`. Strings, character literals
and comments are blanked first so that braces inside them do not count. With --allow FILE, functions
named in FILE's "Long functions" table (as `name`) are reported but do not fail the check.
Exit 0: none over the limit (or all allowed); 1: some; 2: usage.
"""
import argparse
import pathlib
import re
import sys

NOT_FUNCTION = re.compile(r"^\s*(if|for|while|switch|catch|do|else|try|return|namespace|struct|class|enum|union)\b")
SIGNATURE = re.compile(r"([A-Za-z_~][A-Za-z0-9_:<>~]*)\s*\([^;]*\)\s*(const)?\s*(noexcept)?\s*(override)?\s*(->[^{]*)?"
                       r"(:[^{;]*)?\{\s*$")


def blank(text: str) -> str:
    """Strings, chars and comments replaced by spaces (newlines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i)); i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j])); i = j
        elif text.startswith('R"', i):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if m:
                end = text.find(")" + m.group(1) + '"', i)
                end = n if end < 0 else end + len(m.group(1)) + 2
                out.append(re.sub(r"[^\n]", " ", text[i:end])); i = end
            else:
                out.append(c); i += 1
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(" " * (min(j + 1, n) - i)); i = min(j + 1, n)
        else:
            out.append(c); i += 1
    return "".join(out)


def functions(path: pathlib.Path):
    lines = blank(path.read_text(encoding="utf-8", errors="replace")).split("\n")
    depth, open_fns = 0, []  # (name, start line, depth at start)
    for no, line in enumerate(lines, 1):
        stripped = line.strip()
        # a signature may span lines: join with the previous lines until a ';', '{' or '}' boundary
        joined = stripped
        k = no - 2
        while k >= 0 and not re.search(r"[;{}]\s*$", lines[k].strip()) and lines[k].strip() and len(joined) < 600:
            joined = lines[k].strip() + " " + joined
            k -= 1
        closing = len(stripped) - len(stripped.lstrip("}"))  # `} else if (...) {` closes before it opens
        head = re.sub(r"^[}\s]*", "", joined)
        if stripped.endswith("{") and not NOT_FUNCTION.match(head) and "=" not in head.split("(")[0]:
            m = SIGNATURE.search(head)
            if m and not re.search(r"\[[^\]]*\]\s*\(", head):  # lambdas belong to their function
                open_fns.append((m.group(1), no, depth - closing))
        for ch in line:
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                while open_fns and open_fns[-1][2] == depth:
                    name, start, _ = open_fns.pop()
                    yield name, start, no
                    break


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("src", nargs="?", default=str(pathlib.Path(__file__).parent.parent / "src"))
    ap.add_argument("--max", type=int, default=80)
    ap.add_argument("--allow", help="Markdown file whose 'Long functions' table names allowed functions")
    a = ap.parse_args()
    allowed = set()
    if a.allow:
        text = pathlib.Path(a.allow).read_text()
        sec = text.split("## Long functions", 1)
        if len(sec) == 2:
            allowed = set(re.findall(r"^\|\s*`([^`]+)`", sec[1].split("\n## ", 1)[0], re.M))
    failing = 0
    for f in sorted(pathlib.Path(a.src).rglob("*.cpp")) + sorted(pathlib.Path(a.src).rglob("*.h")):
        for name, start, end in functions(f):
            n = end - start + 1
            if n > a.max:
                ok = name in allowed
                failing += not ok
                print(f"{f}:{start}: {name} {n} lines{' (allowed: docs/ARCHITECTURE.md)' if ok else ''}")
    print(f"long_functions: {failing} function(s) over {a.max} lines not allowed")
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())
