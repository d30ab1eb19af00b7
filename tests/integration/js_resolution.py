#!/usr/bin/env python3
"""JavaScript import resolution against Node's own resolver, on real installed packages.

The named packages of a Node library folder (Debian's /usr/share/nodejs) and the packages they depend on
(package.json `dependencies`, as far as the folder holds them) are copied into <tmp>/node_modules, laid out as
npm lays them out, and indexed as one repository. For every import of every JavaScript file, `repoctx imports`
says which indexed file it loads, and Node (tests/oracle/js_resolve.js: require.resolve from that file) says
which file it resolves to. An import Node resolves to an indexed file must load that file (recall); an import
repoctx resolves must be Node's answer (precision). Imports Node resolves outside the copy (a package the
folder does not hold: the system's copy), to a built-in, or not at all must load nothing.

  js_resolution.py --repoctx BIN [--from /usr/share/nodejs] [--min-agreement 0.99] PACKAGE [PACKAGE...]
  js_resolution.py --repoctx BIN --all            # every package of the folder
  ... --without-manifests  # repoctx indexes a copy without package.json/tsconfig.json/jsconfig.json (Node
                           # still reads them): what path rules alone resolve, for comparison
"""
import argparse
import collections
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _util import Checker, Failure, REPO_ROOT, TempDir, main_wrapper, run_jsonl, run_ok  # noqa: E402

ORACLE = os.path.join(REPO_ROOT, "tests", "oracle", "js_resolve.js")
# Files Node runs: TypeScript (.ts, .d.ts) resolves by TypeScript's rules ("./types" is types.d.ts), not Node's.
NODE_FILES = (".js", ".cjs", ".mjs")


def closure(src, names):
    """The packages `names` and, transitively, their dependencies that `src` holds."""
    seen, todo = [], list(names)
    while todo:
        name = todo.pop(0)
        if name in seen or not os.path.isfile(os.path.join(src, name, "package.json")):
            continue
        seen.append(name)
        try:
            with open(os.path.join(src, name, "package.json"), encoding="utf-8") as f:
                deps = json.load(f).get("dependencies") or {}
        except (OSError, ValueError):
            deps = {}
        todo.extend(sorted(deps))
    return seen


def node_answers(pairs):
    """{(abs file, spec): oracle record} from one node process."""
    lines = "".join(json.dumps({"file": f, "spec": s}) + "\n" for f, s in pairs)
    p = subprocess.run(["node", ORACLE], input=lines, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise Failure(f"the Node oracle exited {p.returncode}: {p.stderr[-2000:]}")
    out = {}
    for line in p.stdout.splitlines():
        r = json.loads(line)
        out[(r["file"], r["spec"])] = r
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repoctx", required=True)
    ap.add_argument("--from", dest="src", default="/usr/share/nodejs", help="the folder of installed packages")
    ap.add_argument("--min-agreement", type=float, default=0.99,
                    help="the recall and the precision the run must reach")
    ap.add_argument("--show", type=int, default=15, help="disagreements printed")
    ap.add_argument("--all", action="store_true", help="every package of --from")
    ap.add_argument("--without-manifests", action="store_true",
                    help="repoctx indexes a copy without the manifests (Node reads them): path rules alone")
    ap.add_argument("packages", nargs="*")
    args = ap.parse_args()
    ck = Checker()
    if shutil.which("node") is None:
        raise Failure("node is not installed (apt-get install nodejs): the oracle is Node's resolver")
    if args.all:
        args.packages = sorted(os.path.relpath(os.path.dirname(os.path.join(d, "package.json")), args.src)
                               for d in [os.path.join(args.src, n) for n in os.listdir(args.src)]
                               + [os.path.join(args.src, s, n) for s in os.listdir(args.src) if s.startswith("@")
                                  for n in os.listdir(os.path.join(args.src, s))]
                               if os.path.isfile(os.path.join(d, "package.json")))
    if not args.packages:
        raise Failure("name packages, or pass --all")
    names = closure(args.src, args.packages)
    ck.check(len(names) >= len(args.packages), f"{len(names)} packages to copy from {args.src}",
             f"missing: {sorted(set(args.packages) - set(names))}")
    with TempDir("repoctx-jsres-") as tmp:
        root = os.path.join(tmp, "node_modules")
        for name in names:  # symbolic links kept as they are (Node follows them; the walker does not)
            shutil.copytree(os.path.join(args.src, name), os.path.join(root, name), symlinks=True)
        db = os.path.join(tmp, "index.db")
        indexed_root = root
        if args.without_manifests:
            indexed_root = os.path.join(tmp, "bare", "node_modules")
            shutil.copytree(root, indexed_root, symlinks=True, ignore=shutil.ignore_patterns(
                "package.json", "tsconfig.json", "jsconfig.json"))
        run_ok(args.repoctx, ["index", indexed_root, "--db", db, "-q"], timeout=900)
        ours = collections.defaultdict(set)
        for r in run_jsonl(args.repoctx, ["imports", indexed_root, "--db", db, "--no-refresh", "--jsonl"], timeout=900):
            stem = os.path.splitext(os.path.basename(r["path"]))[0]
            if r["module"] == "./" + stem and r["files"] == [r["path"]]:
                continue  # a file's own exports (`export {a as default}`): the model's binding, not an import
            if r["path"].endswith(NODE_FILES) and r["module"] and r["level"] == 0:
                ours[(os.path.join(root, r["path"]), r["module"])].update(r["files"])
        files_out = json.loads(run_ok(args.repoctx, ["files", indexed_root, "--db", db, "--no-refresh", "--json"]).stdout)
        indexed = {f["path"] for f in files_out}
        oracle = node_answers(sorted(ours))
        counts = collections.Counter()
        shown = 0
        for key, loaded in sorted(ours.items()):
            r = oracle[key]
            resolved = r["resolved"]
            rel = os.path.relpath(resolved, root) if resolved and resolved.startswith(root + os.sep) else None
            expected = rel if rel in indexed else None
            if expected:
                counts["node"] += 1
            if loaded:
                counts["ours"] += 1
            if expected and loaded == {expected}:
                counts["agree"] += 1
                continue
            if not expected and not loaded:
                counts["both_none"] += 1
                continue
            why = ("builtin" if r["builtin"] else r["error"] or (rel and "not indexed: " + rel)
                   or (resolved and "outside: " + resolved) or "?")
            counts["disagree"] += 1
            if shown < args.show:
                shown += 1
                print(f"  {os.path.relpath(key[0], root)}: {key[1]!r}  repoctx {sorted(loaded) or '-'}  "
                      f"node {expected or why}")
        recall = counts["agree"] / counts["node"] if counts["node"] else 0.0
        precision = counts["agree"] / counts["ours"] if counts["ours"] else 0.0
        print(f"  imports compared: {len(ours)} ({len(indexed)} files, {len(names)} packages)")
        print(f"  node resolves into the copy: {counts['node']}; repoctx loads a file: {counts['ours']}; "
              f"agree: {counts['agree']}; neither: {counts['both_none']}; disagree: {counts['disagree']}")
        print(f"  recall {recall:.4f}  precision {precision:.4f}")
        ck.check(counts["node"] > 0, "Node resolves some imports into the copy", "nothing to compare")
        ck.check(recall >= args.min_agreement and precision >= args.min_agreement,
                 f"repoctx agrees with Node's resolver (recall and precision >= {args.min_agreement})",
                 f"recall {recall:.4f}, precision {precision:.4f}")
    return ck.finish("js_resolution")


if __name__ == "__main__":
    sys.exit(main_wrapper("js_resolution", main))
