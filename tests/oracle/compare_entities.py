#!/usr/bin/env python3
"""Compare repoctx's extracted entities against the `ast` oracle (ast_entities.py).

    compare_entities.py ORACLE.jsonl REPOCTX.jsonl [--max-report N] [--kinds K,K,...] [--min-agreement F]

ORACLE.jsonl : one object per file, as written by ast_entities.py.
REPOCTX.jsonl: one object per entity: {"file", "qualname", "kind", "start_line", "end_line", ...};
               extra fields are ignored, and so are kinds other than --kinds (default Python's:
               class/function/method/variable/attribute; the Go oracle adds interface and field).
For every file the oracle parsed (ok=true) the multisets of (qualname, kind, start, end) are
compared.
A file missing from REPOCTX.jsonl agrees only if the oracle found no entity in it.
Files that ast could not parse are listed, not compared.  Exit 0 iff every compared file agrees, or with
--min-agreement F iff both the entity recall and precision against the oracle are at least F (the
disagreements are still listed: they are the exceptions a language's documentation names).
"""
import argparse
import json
import sys
from collections import Counter

KINDS = {"class", "function", "method", "variable", "attribute"}
MAX_LINES_PER_FILE = 20  # entity lines shown per disagreeing file


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.strip():
                try:
                    yield json.loads(line)
                except json.JSONDecodeError as e:
                    sys.exit(f"{path}:{n}: bad JSON: {e}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("oracle")
    ap.add_argument("repoctx")
    ap.add_argument("--max-report", type=int, default=20, metavar="N",
                    help="show at most N disagreeing files (default 20)")
    ap.add_argument("--kinds", default=",".join(sorted(KINDS)), metavar="K,K,...",
                    help="entity kinds compared (default: %(default)s)")
    ap.add_argument("--min-agreement", type=float, default=None, metavar="F",
                    help="pass when entity recall and precision are both >= F (default: every file agrees)")
    args = ap.parse_args(argv)
    kinds = set(args.kinds.split(","))

    oracle, unparsed = {}, []
    for rec in read_jsonl(args.oracle):
        if rec.get("ok"):
            oracle[rec["file"]] = Counter(tuple(e) for e in rec["entities"])
        else:
            unparsed.append((rec["file"], rec.get("error", "")))

    ours = {}
    for e in read_jsonl(args.repoctx):
        if e.get("kind") in kinds:
            key = (e["qualname"], e["kind"], int(e["start_line"]), int(e["end_line"]))
            ours.setdefault(e["file"], Counter())[key] += 1

    n_oracle = n_ours = n_matched = 0
    bad = []  # (file, missing Counter, extra Counter, absent_from_repoctx)
    for path in sorted(oracle):
        want, got = oracle[path], ours.get(path, Counter())
        matched = want & got
        n_oracle += sum(want.values())
        n_ours += sum(got.values())
        n_matched += sum(matched.values())
        if want != got:
            bad.append((path, want - got, got - want, path not in ours))

    def fmt(t):
        return f"{t[1]:9} {t[0]}  [{t[2]}-{t[3]}]"

    for path, missing, extra, absent in bad[:args.max_report]:
        note = " (file absent from repoctx output)" if absent else ""
        print(f"--- {path}: {sum(missing.values())} missing, {sum(extra.values())} extra{note}")
        rows = sorted([(t[2], "-", t) for t in missing.elements()] +
                      [(t[2], "+", t) for t in extra.elements()])
        for _, sign, t in rows[:MAX_LINES_PER_FILE]:
            print(f"  {sign} {fmt(t)}")  # '-' = missing in repoctx, '+' = extra in repoctx
        if len(rows) > MAX_LINES_PER_FILE:
            print(f"  ... {len(rows) - MAX_LINES_PER_FILE} more")
    if len(bad) > args.max_report:
        print(f"... {len(bad) - args.max_report} more disagreeing files not shown")

    only_ours = sorted(set(ours) - set(oracle) - {p for p, _ in unparsed})
    n_files = len(oracle)
    pct = lambda a, b: 100.0 * a / b if b else 100.0
    print("=== summary")
    print(f"files compared:        {n_files}")
    print(f"files agreeing:        {n_files - len(bad)} ({pct(n_files - len(bad), n_files):.2f}%)")
    print(f"entities (oracle):     {n_oracle}")
    print(f"entities (repoctx):    {n_ours}")
    print(f"entities matched:      {n_matched}  (recall {pct(n_matched, n_oracle):.2f}%, "
          f"precision {pct(n_matched, n_ours):.2f}%)")
    print(f"missing in repoctx:    {n_oracle - n_matched}")
    print(f"extra in repoctx:      {n_ours - n_matched}")
    print(f"files ast could not parse: {len(unparsed)}")
    for path, err in unparsed:
        print(f"  {path}: {err}")
    if only_ours:  # not a failure: a walk difference worth knowing about
        print(f"files only in repoctx output (not walked by the oracle): {len(only_ours)}")
        for path in only_ours[:args.max_report]:
            print(f"  {path}")
    if args.min_agreement is not None:
        ok = n_oracle > 0 and min(n_matched / n_oracle, n_matched / max(n_ours, 1)) >= args.min_agreement
        print(f"agreement threshold {args.min_agreement:.4f}: {'met' if ok else 'MISSED'}")
        return 0 if ok else 1
    return 0 if not bad else 1


if __name__ == "__main__":
    sys.exit(main())
