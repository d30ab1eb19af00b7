#!/usr/bin/env python3
"""Reference for `repoctx bench-agent-tools`: the agent's grep tool in plain Python (re, line by line,
files held in memory as the engine holds them), on the same files and patterns, up to the same 50 shown
matches plus a count of the rest.

    ref_grep.py ROOT FILELIST PATTERNS_JSON  ->  {"ms": [per pattern], "matches": [per pattern]}
"""
import json
import os
import re
import sys
import time


def main():
    root, filelist, patterns = sys.argv[1], sys.argv[2], json.load(open(sys.argv[3]))
    files = []
    for rel in open(filelist).read().splitlines():
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            files.append((rel, f.read().splitlines()))
    ms, matches = [], []
    for p in patterns:
        t0 = time.perf_counter()
        rx = re.compile(re.escape(p["pattern"]) if p["fixed"] else p["pattern"])
        shown, total = [], 0
        for rel, lines in files:
            for n, line in enumerate(lines, 1):
                if rx.search(line):
                    total += 1
                    if len(shown) < 50:
                        shown.append(f"{rel}:{n}: {line[:300]}")
        "\n".join(shown)
        ms.append((time.perf_counter() - t0) * 1000)
        matches.append(total)
    print(json.dumps({"ms": ms, "matches": matches}))


if __name__ == "__main__":
    main()
