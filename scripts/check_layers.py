#!/usr/bin/env python3
"""Fails when the code's dependencies leave the declared graph of stages.

The folders of src/ are the stages of the pipeline. GRAPH below declares, for each stage, the stages it may
use directly; a stage may include the headers of any stage it reaches through GRAPH (its transitive
closure), and nothing else. Three checks, run in CI (.ci/run) and in ctest (layer_check):
  1. includes: every `#include "stage/..."` in a stage's files is reachable from that stage in GRAPH;
  2. links: each stage's library in src/CMakeLists.txt (`repoctx_stage(NAME ... DEPENDS ...)`) links exactly
     the repoctx_ libraries of its GRAPH edges, so a library links only what its code may include (the
     servers and the Python module do not link the evaluation or the benchmarks);
  3. no idle edge: every GRAPH edge is used by at least one include of the stage (drop an edge nobody uses).

    scripts/check_layers.py [SRC_DIR]     exit 0: clean; 1: violations (listed); 2: usage
"""
import pathlib
import re
import sys

# The allowed direct edges, by stage. The engine (util .. api, server) never reaches the research lab
# (eval, bench); the program (cli) joins both.
GRAPH = {
    "util": [],
    "repo": ["util"],
    "index": ["repo"],
    "llm": ["util"],
    "projection": ["llm"],
    "retrieve": ["index", "projection"],
    "generate": ["retrieve"],
    "api": ["generate"],
    "server": ["api"],
    "eval": ["generate"],
    "bench": ["eval", "api"],
    "cli": ["server", "bench"],
}
# include/repoctx/ is the public header of the api stage.
ALIASES = {"repoctx": "api"}
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"/]+)/[^"]*"', re.M)
STAGE_DECL = re.compile(r"repoctx_stage\(\s*(\w+)(.*?)\)\s*$", re.S | re.M)


def reach(stage: str) -> set[str]:
    seen, todo = set(), list(GRAPH.get(stage, []))
    while todo:
        s = todo.pop()
        if s not in seen:
            seen.add(s)
            todo.extend(GRAPH.get(s, []))
    return seen


def include_edges(src: pathlib.Path, problems: list[str]) -> dict[str, set[str]]:
    used: dict[str, set[str]] = {s: set() for s in GRAPH}
    for f in sorted(src.rglob("*")):
        if f.suffix not in (".h", ".cpp", ".inc", ".hpp", ".cc"):
            continue
        stage = f.relative_to(src).parts[0]
        if stage not in GRAPH:
            continue
        allowed = reach(stage)
        text = f.read_text(encoding="utf-8", errors="replace")
        for m in INCLUDE.finditer(text):
            inc = ALIASES.get(m.group(1), m.group(1))
            if inc not in GRAPH or inc == stage:
                continue
            used[stage].add(inc)
            if inc not in allowed:
                line = text.count("\n", 0, m.start()) + 1
                problems.append(f"{f}:{line}: stage '{stage}' includes '{inc}', which it does not reach "
                                f"({m.group(0).strip()}); allowed: {', '.join(sorted(allowed)) or 'none'}")
    return used


def link_edges(cmake: pathlib.Path, problems: list[str]) -> None:
    if not cmake.is_file():
        return  # a scratch copy of the sources alone: the include checks still run
    text = re.sub(r"#.*", "", cmake.read_text(encoding="utf-8"))
    declared = {}
    for m in STAGE_DECL.finditer(text):
        body = m.group(2)
        deps = re.search(r"\bDEPENDS\b(.*)", body, re.S)
        libs = re.findall(r"\brepoctx_(\w+)", deps.group(1)) if deps else []
        declared[m.group(1)] = {l for l in libs if l in GRAPH}
    for stage, edges in GRAPH.items():
        if stage == "cli":
            continue  # the executable, not a repoctx_stage (its links are its GRAPH edges by construction)
        if stage not in declared:
            problems.append(f"{cmake}: no repoctx_stage({stage} ...)")
        elif declared[stage] != set(edges):
            problems.append(f"{cmake}: repoctx_{stage} links {sorted(declared[stage])}, the graph allows "
                            f"{sorted(edges)} (edit GRAPH in {__file__} or the DEPENDS)")


def check(src: pathlib.Path) -> list[str]:
    problems = []
    for d in sorted(p for p in src.iterdir() if p.is_dir()):
        if d.name not in GRAPH:
            problems.append(f"{d}: folder is not a known stage (add it to GRAPH in {__file__})")
    used = include_edges(src, problems)
    for stage, edges in GRAPH.items():
        for e in edges:
            if e not in used[stage] and any(p.is_dir() for p in [src / stage]):
                problems.append(f"{src / stage}: graph edge {stage} -> {e} is used by no include (remove it)")
    link_edges(src / "CMakeLists.txt", problems)
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
    edges = "; ".join(f"{s} -> {', '.join(e)}" for s, e in GRAPH.items() if e)
    if problems:
        print(f"check_layers: {len(problems)} problem(s); declared graph: {edges}")
        return 1
    print(f"check_layers: ok ({edges})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
