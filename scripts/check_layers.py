#!/usr/bin/env python3
"""Fails when a source file includes a later pipeline stage.

The folders of src/ are the stages of the pipeline, in the order data flows; a stage may include its own
headers and those of earlier stages only (docs/ARCHITECTURE.md). This check runs in CI (.ci/run) and in
ctest (layer_check), where a deliberately upward include in a scratch copy must make it fail.

    scripts/check_layers.py [SRC_DIR]     exit 0: clean; 1: violations (listed); 2: usage
"""
import pathlib
import re
import sys

# The pipeline, earliest first. Every folder of src/ must be listed (a new stage is placed on purpose).
STAGES = ["util", "repo", "index", "llm", "projection", "retrieve", "generate", "eval", "api", "bench", "server", "cli"]
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"/]+)/[^"]*"', re.M)


def check(src: pathlib.Path) -> list[str]:
    problems = []
    rank = {s: i for i, s in enumerate(STAGES)}
    for d in sorted(p for p in src.iterdir() if p.is_dir()):
        if d.name not in rank:
            problems.append(f"{d}: folder is not a known stage (add it to STAGES in {__file__})")
    for f in sorted(src.rglob("*")):
        if f.suffix not in (".h", ".cpp", ".inc", ".hpp", ".cc"):
            continue
        stage = f.relative_to(src).parts[0]
        if stage not in rank:
            continue
        text = f.read_text(encoding="utf-8", errors="replace")
        for m in INCLUDE.finditer(text):
            inc = m.group(1)
            if inc in rank and rank[inc] > rank[stage]:
                line = text.count("\n", 0, m.start()) + 1
                problems.append(f"{f}:{line}: stage '{stage}' includes later stage '{inc}' ({m.group(0).strip()})")
    return problems


def main() -> int:
    if len(sys.argv) > 2:
        print(__doc__, file=sys.stderr)
        return 2
    src = pathlib.Path(sys.argv[1] if len(sys.argv) == 2 else pathlib.Path(__file__).parent.parent / "src")
    if not src.is_dir():
        print(f"check_layers: no folder {src}", file=sys.stderr)
        return 2
    problems = check(src)
    for p in problems:
        print(p)
    if problems:
        print(f"check_layers: {len(problems)} upward include(s); stages in order: {' < '.join(STAGES)}")
        return 1
    print(f"check_layers: ok ({' < '.join(STAGES)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
