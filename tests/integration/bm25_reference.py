#!/usr/bin/env python3
"""repoctx's BM25 on the snippet corpus vs. the plain-Python reference (bench/reference/ref_index.py).

    bm25_reference.py --repoctx BIN --reference bench/reference/ref_index.py REPO [--queries N]

Both sides build split-aggregate snippets (L = 15) of every *.py file, tokenize them with the same
code-aware tokenizer and score with the same BM25 (k1 = 1.5, b = 0.75).  Queries: the signature +
the first docstring line of N-8 documented functions (one per file, files spread over the
repository), plus 8 free-text queries.  For each query the top-20 (file, start_line, end_line)
lists must agree and the scores must agree within 1e-9 relative.  repoctx indexes with --keep-vendored --keep-generated and a
size limit above every file, so that both sides see the same files; the file sets are compared
first.
"""
import argparse
import ast
import importlib.util
import json
import os
import subprocess
import sys
import time
import warnings

from _util import Checker, Failure, TempDir, main_wrapper, run, run_json, run_jsonl, tail

TOP_K = 20
REL_TOL = 1e-9
FREE_TEXT = [
    "parse the configuration file and return a dictionary of options",
    "raise ValueError if the argument is not a positive integer",
    "HTTPServer getItem utf8 x86_64 __init__ self",           # camel case, digits, dunder
    "matrix matrix matrix determinant",                         # repeated query terms
    "import os\nimport sys\n\ndef main(argv=None):\n    return 0",
    "cache timeout expired; invalidate the entry",
    "zzqqxxnotaword qqzzyyneither",                             # no term in the corpus
    "self",                                                     # a very common term
]


def load_reference(path):
    spec = importlib.util.spec_from_file_location("ref_index", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def make_queries(repo, symbols, n):
    """signature + '\n' + first docstring line of n documented functions: one per file from n
    files spread over the sorted file list (only those files are parsed), round robin when there
    are fewer files."""
    by_file = {}
    for e in symbols:
        if e["kind"] in ("function", "method") and e.get("signature"):
            by_file.setdefault(e["file"], []).append(e)
    files = sorted(by_file)
    if not files or n <= 0:
        return []
    step = max(1, len(files) // n)
    order = files[::step] + [f for i, f in enumerate(files) if i % step]   # spread, then the rest
    per_file = []          # [[query, ...] per parsed file], in `order`
    for path in order:
        if len(per_file) >= n:
            break
        try:
            with open(os.path.join(repo, path), "rb") as f:
                data = f.read()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tree = ast.parse(data)
        except (OSError, SyntaxError, ValueError, RecursionError):
            continue
        docs = {}
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node)
                if doc and doc.strip():
                    docs[node.lineno] = doc.strip().splitlines()[0]
        qs = [e["signature"] + "\n" + docs[e["start_line"]]
              for e in sorted(by_file[path], key=lambda e: (e["qualname"], e["start_line"]))
              if e["start_line"] in docs]
        if qs:
            per_file.append(qs)
    queries = []           # round robin: one per file, then a second one per file, ...
    for i in range(max((len(q) for q in per_file), default=0)):
        queries += [q[i] for q in per_file if i < len(q)]
    return queries[:n]


def repoctx_rule_snippets(lines, limit=15):
    """Split-aggregate as src/repo/documents.cpp does it: long mini-blocks are pre-cut into
    limit-line chunks and the chunks take part in the aggregation like any other block (so the
    last, shorter chunk of a long block can merge with the blocks that follow).  Used only for a
    diagnostic: the reference with this one rule changed."""
    blocks, start = [], None
    for i, line in enumerate(lines + ["\n"]):
        blank = not line.strip(" \t\f\v\r\n")
        if not blank and start is None:
            start = i
        elif blank and start is not None:
            for a in range(start, i, limit):
                blocks.append([a, min(i, a + limit) - 1, min(i, a + limit) - a])
            start = None
    out, i = [], 0
    while i < len(blocks):
        s, e, n = blocks[i]
        j = i + 1
        while j < len(blocks) and n + blocks[j][2] <= limit:
            e, n = blocks[j][1], n + blocks[j][2]
            j += 1
        out.append((s + 1, e + 1))
        i = j
    return out


def snippet_index(ref, repo, make_snippets):
    """The reference's snippet BM25 (its walk, decoding, line split, tokenizer and BM25Index),
    with another split-aggregate function.  Returns (BM25Index, [(file, start, end)])."""
    index, meta = ref.BM25Index(), []
    for rel in ref.walk_py_files(repo):
        try:
            with open(os.path.join(repo, rel), "rb") as f:
                data = f.read()
        except OSError:
            continue
        lines = ref.split_lines(ref.decode_source(data))
        for s, e in make_snippets(lines):
            index.add(ref.term_freqs("".join(lines[s - 1:e])))
            meta.append((rel, s, e))
    index.finalize()
    return index, meta


def rel_close(a, b):
    return abs(a - b) <= REL_TOL * max(abs(a), abs(b), 1e-300)


def compare(ref_rows, our_rows):
    """None if the lists agree, else a description.  Rows: (file, start, end, score)."""
    if len(ref_rows) != len(our_rows):
        first = next((i for i in range(min(len(ref_rows), len(our_rows)))
                      if ref_rows[i][:3] != our_rows[i][:3]), min(len(ref_rows), len(our_rows)))
        return (f"{len(ref_rows)} results in the reference, {len(our_rows)} in repoctx; first "
                f"difference at rank {first + 1}: reference "
                f"{ref_rows[first] if first < len(ref_rows) else '-'}, repoctx "
                f"{our_rows[first] if first < len(our_rows) else '-'}")
    for i, (r, o) in enumerate(zip(ref_rows, our_rows)):
        if r[:3] != o[:3]:
            return f"rank {i + 1}: reference {r}, repoctx {o}"
        if not rel_close(r[3], o[3]):
            return (f"rank {i + 1} {r[0]}:{r[1]}-{r[2]}: score {r[3]!r} (reference) vs {o[3]!r} "
                    f"(repoctx), relative difference {abs(r[3] - o[3]) / max(abs(r[3]), 1e-300):.3g}")
    return None


def near_tie_explained(ref_rows, our_rows):
    """True when the two lists differ only by the order of documents whose scores are equal within
    REL_TOL (floating-point summation order), including membership at the top-k cut."""
    if len(ref_rows) != len(our_rows):
        return False
    for i, (r, o) in enumerate(zip(ref_rows, our_rows)):
        if not rel_close(r[3], o[3]):
            return False
    # group ranks by near-equal score; each group's documents must agree, except the last group
    # (it may be cut at k), whose documents must be near-tied anyway
    i = 0
    while i < len(ref_rows):
        j = i + 1
        while j < len(ref_rows) and rel_close(ref_rows[j][3], ref_rows[i][3]):
            j += 1
        if j < len(ref_rows) and {r[:3] for r in ref_rows[i:j]} != {o[:3] for o in our_rows[i:j]}:
            return False
        i = j
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repoctx", required=True, help="path to the repoctx binary")
    ap.add_argument("--reference", required=True, help="bench/reference/ref_index.py")
    ap.add_argument("repo")
    ap.add_argument("--queries", type=int, default=40, metavar="N",
                    help="number of queries in all (default 40)")
    args = ap.parse_args()
    binary, repo = os.path.abspath(args.repoctx), os.path.abspath(args.repo)
    if not os.path.isdir(repo):
        raise Failure(f"not a directory: {repo}")
    ref = load_reference(args.reference)
    ck = Checker()

    with TempDir("repoctx-bm25-") as tmp:
        db = os.path.join(tmp, "repoctx.db")
        walk_flags = ["--keep-vendored", "--keep-generated", "--max-file-mb", "100000"]
        print(f"indexing {repo} with repoctx", flush=True)
        st = run_json(binary, ["index", repo, "--db", db, "--json", "-q"] + walk_flags)

        # 1. same file set
        ours = {f["path"] for f in run_json(binary, ["files", repo, "--db", db, "--json",
                                                     "--no-refresh"])}
        theirs = set(ref.walk_py_files(repo))
        only_ours, only_ref = sorted(ours - theirs), sorted(theirs - ours)
        ck.check(not only_ours and not only_ref,
                 f"same file set on both sides ({len(ours)} files in repoctx, {len(theirs)} in the "
                 "reference)",
                 f"only in repoctx: {only_ours[:10]}{' ...' if len(only_ours) > 10 else ''}; "
                 f"only in the reference: {only_ref[:10]}{' ...' if len(only_ref) > 10 else ''}")

        # 2. queries
        symbols = run_jsonl(binary, ["symbols", repo, "--db", db, "--jsonl", "--no-refresh"])
        queries = make_queries(repo, symbols, max(0, args.queries - len(FREE_TEXT))) + FREE_TEXT
        qfile = os.path.join(tmp, "queries.jsonl")
        with open(qfile, "w", encoding="utf-8") as f:
            for q in queries:
                f.write(json.dumps({"text": q}) + "\n")
        print(f"{len(queries)} queries ({len(queries) - len(FREE_TEXT)} from documented "
              f"functions, {len(FREE_TEXT)} free text)", flush=True)

        # 3. the reference
        dump = os.path.join(tmp, "ref_scores.jsonl")
        cmd = [sys.executable, os.path.abspath(args.reference), repo, "--db",
               os.path.join(tmp, "ref.sqlite"), "--queries", qfile, "--k", str(TOP_K),
               "--corpus", "snippets", "--dump-scores", dump, "--json"]
        print("running the reference: " + " ".join(cmd[1:]), flush=True)
        t_ref = time.time()
        ref_proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

        # 4a. meanwhile (the reference uses one core), repoctx's answers
        t_ours = time.time()
        our_answers = {}
        for q in queries:
            res = run_json(binary, ["retrieve", repo, "--db", db, "--query", q, "--strategy",
                                    "sparse", "--corpus", "snippets", "-k", str(TOP_K), "--json",
                                    "--no-refresh", "-q"])
            our_answers[q] = [(r["file"], r["start_line"], r["end_line"], float(r["score"]))
                              for r in res["results"]]
        print(f"repoctx answered {len(queries)} queries in {time.time() - t_ours:.0f} s",
              flush=True)
        try:
            out, err = ref_proc.communicate(timeout=1800)
        except subprocess.TimeoutExpired:
            ref_proc.kill()
            raise Failure("the reference took more than 30 minutes")
        if ref_proc.returncode != 0:
            raise Failure(f"reference exited {ref_proc.returncode}:\n{tail(err)}")
        print(f"the reference finished after {time.time() - t_ref:.0f} s", flush=True)
        rstats = json.loads(out)
        if rstats.get("corpus") != "snippets":
            raise Failure("the reference does not support --corpus snippets (its dump would be "
                          "entity scores)")
        with open(dump, encoding="utf-8") as f:
            ref_dump = [json.loads(line) for line in f if line.strip()]
        ck.check(len(ref_dump) == len(queries), f"reference answered {len(ref_dump)} queries")
        ck.check(st["snippets"] == rstats["snippets"],
                 f"same snippet count (repoctx {st['snippets']}, reference {rstats['snippets']})")

        # 4b. compare, query by query
        agree = near = 0
        bad_files = set()
        for qi, (q, rd) in enumerate(zip(queries, ref_dump), 1):
            if rd["text"] != q:
                ck.fail(f"query {qi}: reference dump is for another text")
                continue
            ours_rows = our_answers[q]
            ref_rows = [(f, s, e, float(sc)) for f, s, e, sc in rd["results"]]
            short = q.replace("\n", " | ")[:70]
            msg = compare(ref_rows, ours_rows)
            if msg is None:
                agree += 1
                ck.check(True, f"query {qi:2} ({len(ours_rows):2} hits) {short!r}")
            elif near_tie_explained(ref_rows, ours_rows):
                near += 1
                ck.check(True, f"query {qi:2} ({len(ours_rows):2} hits) {short!r} "
                               f"[order differs only among scores equal within {REL_TOL:g}: {msg}]")
            else:
                ck.fail(f"query {qi:2} {short!r}: top-{TOP_K} agree", msg)
                bad_files |= {r[0] for r in ref_rows + ours_rows}

        # 5. diagnostics: snippet spans of the files involved in disagreements
        for path in sorted(bad_files)[:10]:
            with open(os.path.join(repo, path), "rb") as f:
                lines = ref.split_lines(ref.decode_source(f.read()))
            spans_ref = ref.make_snippets(lines)
            pr = run(binary, ["snippets", repo, "--db", db, "--file", path, "--json",
                              "--no-refresh"])
            spans_ours = [(s["start_line"], s["end_line"]) for s in json.loads(pr.stdout)] \
                if pr.returncode == 0 else None
            detail = ""
            if spans_ours is None:
                detail = f"`repoctx snippets` exited {pr.returncode}: {pr.stderr.strip()}"
            elif spans_ref != spans_ours:
                i = next((i for i, (a, b) in enumerate(zip(spans_ref, spans_ours)) if a != b),
                         min(len(spans_ref), len(spans_ours)))
                detail = (f"{len(spans_ref)} snippets in the reference, {len(spans_ours)} in "
                          f"repoctx; from snippet {i + 1} on: reference {spans_ref[i:i + 3]}, "
                          f"repoctx {spans_ours[i:i + 3]}")
            ck.check(spans_ref == spans_ours, f"diagnostic: snippet spans of {path} agree", detail)
        print(f"\n{agree} of {len(queries)} queries agree exactly"
              + (f", {near} up to the order of near-tied scores" if near else ""))

        # 6. diagnostic: if the snippet spans differ, does everything else (tokenizer, BM25) agree
        # once the reference cuts long mini-blocks the way repoctx does?  The reference's own
        # functions, snippet corpus only, in this process; repoctx's answers from step 4.
        if any("snippet spans" in f for f in ck.failures):
            print("\ndiagnostic: the reference's snippet BM25 again, with repoctx's split-aggregate "
                  "rule for mini-blocks longer than L (the chunks aggregate with the following "
                  "blocks)", flush=True)
            t_diag = time.time()
            index, meta = snippet_index(ref, repo, repoctx_rule_snippets)
            agree2 = near2 = 0
            max_rel = 0.0
            first_bad = None
            for q in queries:
                ref_rows = [meta[d] + (sc,) for d, sc in index.search(q, TOP_K)]
                ours_rows = our_answers[q]
                for r, o in zip(ref_rows, ours_rows):
                    max_rel = max(max_rel, abs(r[3] - o[3]) / max(abs(r[3]), 1e-300))
                if compare(ref_rows, ours_rows) is None:
                    agree2 += 1
                elif near_tie_explained(ref_rows, ours_rows):
                    near2 += 1
                elif first_bad is None:
                    first_bad = (q, compare(ref_rows, ours_rows))
            print(f"  with that rule: {len(meta)} snippets (repoctx {st['snippets']}); "
                  f"{agree2} of {len(queries)} queries agree exactly, {near2} up to near-tie "
                  f"order; largest relative score difference at equal ranks {max_rel:.3g}"
                  + (f"; first disagreement: {first_bad[0][:60]!r}: {first_bad[1]}"
                     if first_bad else
                     " -> the split-aggregate rule explains every difference")
                  + f" ({time.time() - t_diag:.0f} s)")
    return ck.finish("bm25_reference")


if __name__ == "__main__":
    sys.exit(main_wrapper("bm25_reference", main))
