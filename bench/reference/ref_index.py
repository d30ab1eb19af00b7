#!/usr/bin/env python3
"""Plain-Python reference indexer: the work repoctx's indexer does, written straightforwardly, so
that repoctx's speed can be reported as a ratio measured in the same run (stdlib only).

    ref_index.py ROOT --db OUT.sqlite [--queries Q.jsonl] [--k 20] [--json] [--dump-scores FILE]
                 [--corpus entities|snippets]

Pipeline: walk ROOT for *.py -> read bytes, blake2b-128 hash -> ast.parse -> entities (same rules as
tests/oracle/ast_entities.py) with signature / docstring / source text, imports, references ->
split-aggregate snippets -> tokenize -> BM25 inverted indexes (entity corpus, snippet corpus) ->
SQLite (one transaction per batch of files).  Then queries against the in-memory entity index (or,
with --corpus snippets, the snippet index).

Conventions the C++ side must share for scores to be cross-checkable (see --dump-scores):
  * files in sorted relative-path order; entity doc ids in file order, entities in source pre-order
    (a class before its members, targets of one statement left to right); snippet ids likewise.
  * entity document = source lines from the first decorator line to end_lineno (def/class), or the
    exact source segment of the Assign/AnnAssign statement (variable/attribute).
  * lines are split at \\r\\n, \\r and \\n only (like the CPython tokenizer); text is decoded
    with the file's PEP 263 / BOM encoding (UTF-8 by default), undecodable bytes replaced.
  * a query returns at most k docs among those sharing >= 1 term with it, by score desc, doc id asc.
Files ast cannot parse still get a files row and snippets, but no entities/imports/refs.
"""
import argparse
import ast
import hashlib
import heapq
import io
import json
import math
import os
import re
import resource
import sqlite3
import sys
import time
import tokenize as pytokenize
import warnings
from collections import Counter
from functools import lru_cache

SKIP_DIRS = {"__pycache__", ".git", "node_modules", "site-packages", "dist-packages"}
SNIPPET_MAX_LINES = 15       # L of split-aggregate
K1, B = 1.5, 0.75            # BM25
BATCH_FILES = 100            # files per SQLite transaction
N_AUTO_QUERIES = 200
MB = 1 << 20                 # MB means MiB throughout (also for ru_maxrss KB -> MB)


# ----------------------------------------------------------------------------------------- walk
def walk_py_files(root):
    """Relative '/'-separated *.py paths under root, sorted (same walk as the oracle)."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = [d for d in dirnames
                       if d not in SKIP_DIRS and not os.path.islink(os.path.join(dirpath, d))]
        rel_dir = os.path.relpath(dirpath, root)
        for name in filenames:
            if name.endswith(".py") and os.path.isfile(os.path.join(dirpath, name)):
                rel = name if rel_dir == "." else os.path.join(rel_dir, name)
                found.append(rel.replace(os.sep, "/"))
    return sorted(found)


# ------------------------------------------------------------------------------------ tokenizer
WORD_RE = re.compile(r"[A-Za-z0-9_]+")
SUBWORD_RE = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


@lru_cache(maxsize=None)
def word_terms(word):
    """Terms of one [A-Za-z0-9_]+ match: lowercased subwords (split on '_', then camel case / digit
    runs) of length >= 2 that are not all digits; plus the whole match lowercased when more than
    one subword was emitted.  get_item -> get, item, get_item; HTTPServer -> http, server,
    httpserver; x -> (); utf8 -> utf."""
    terms = tuple(sub.lower() for part in word.split("_") if part
                  for sub in SUBWORD_RE.findall(part) if len(sub) >= 2 and not sub.isdigit())
    return terms + (word.lower(),) if len(terms) > 1 else terms


def tokenize(text):
    """Term list of a text, in order."""
    return [t for w in WORD_RE.findall(text) for t in word_terms(w)]


def term_freqs(text):
    """Counter term -> tf (same multiset as tokenize(text); counts words first, then expands)."""
    tf = Counter()
    for word, n in Counter(WORD_RE.findall(text)).items():
        for t in word_terms(word):
            tf[t] += n
    return tf


# ------------------------------------------------------------------------------- source helpers
LINE_SPLIT = re.compile(r"(?<=\n)|(?<=\r)(?!\n)")   # after \n, or after a \r not followed by \n


def decode_source(data):
    try:
        encoding = pytokenize.detect_encoding(io.BytesIO(data).readline)[0]
    except SyntaxError:              # bad cookie: ast fails too; decode as UTF-8 for snippets
        encoding = "utf-8"
    try:
        return data.decode(encoding, errors="replace")
    except LookupError:
        return data.decode("utf-8", errors="replace")


def split_lines(text):
    """Lines with their line ends, split like the CPython tokenizer does (\\r\\n, \\r, \\n)."""
    lines = LINE_SPLIT.split(text)
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def segment(lines, row0, col0, row1, col1):
    """Source text between 1-based rows / UTF-8 byte columns (ast's convention), end exclusive."""
    if row0 == row1:
        return lines[row0 - 1].encode()[col0:col1].decode()
    return (lines[row0 - 1].encode()[col0:].decode() + "".join(lines[row0:row1 - 1])
            + lines[row1 - 1].encode()[:col1].decode())


def header_colon(lines, node):
    """(row, byte col) of the ':' that ends a def/class header.  Scanning starts after the last
    header sub-node (arg, default, return annotation, base, keyword), or at the keyword if there is
    none; from there on only ')', ',', '/', whitespace, comments and line continuations can precede
    the colon, so skipping '#' comments is enough."""
    row, col = node.lineno, node.col_offset
    if isinstance(node, ast.ClassDef):
        subs = node.bases + node.keywords
    else:
        a = node.args
        subs = a.posonlyargs + a.args + a.kwonlyargs + a.defaults + [d for d in a.kw_defaults if d]
        subs += [x for x in (a.vararg, a.kwarg, node.returns) if x]
    if subs:
        row, col = max((s.end_lineno, s.end_col_offset) for s in subs)
    while True:
        line = lines[row - 1].encode()
        for i in range(col, len(line)):
            if line[i] == 0x3A:      # ':'
                return row, i
            if line[i] == 0x23:      # '#': rest of the line is a comment
                break
        row, col = row + 1, 0


# ------------------------------------------------------------------------------------ extraction
def target_names(target):
    """Names bound by an assignment target: a Name, or Names in Tuple/List/Starred, recursively."""
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, (ast.Tuple, ast.List)):
        for elt in target.elts:
            yield from target_names(elt)
    elif isinstance(target, ast.Starred):
        yield from target_names(target.value)


def child_blocks(stmt):
    """Statement lists of a compound statement that opens no scope, in source order."""
    if isinstance(stmt, (ast.If, ast.For, ast.AsyncFor, ast.While)):
        return [stmt.body, stmt.orelse]
    if isinstance(stmt, (ast.Try, ast.TryStar)):
        return [stmt.body] + [h.body for h in stmt.handlers] + [stmt.orelse, stmt.finalbody]
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return [stmt.body]
    if isinstance(stmt, ast.Match):
        return [case.body for case in stmt.cases]
    return []


def entity_nodes(body, scope="module", prefix="", out=None):
    """[(qualname, kind, node)] in source pre-order -- the oracle's rules exactly."""
    if out is None:
        out = []
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            qual = prefix + stmt.name
            out.append((qual, "method" if scope == "class" else "function", stmt))
            entity_nodes(stmt.body, "function", qual + ".<locals>.", out)
        elif isinstance(stmt, ast.ClassDef):
            qual = prefix + stmt.name
            out.append((qual, "class", stmt))
            entity_nodes(stmt.body, "class", qual + ".", out)
        elif scope != "function" and isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            kind = "variable" if scope == "module" else "attribute"
            if isinstance(stmt, ast.Assign):
                names = [n for t in stmt.targets for n in target_names(t)]
            else:
                names = [stmt.target.id] if isinstance(stmt.target, ast.Name) else []
            out.extend((prefix + n, kind, stmt) for n in names)
        else:
            for block in child_blocks(stmt):
                entity_nodes(block, scope, prefix, out)
    return out


def dotted(node):
    """'a.b.c' for an Attribute chain rooted at a Name (or a bare Name), else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def references(fn):
    """[(line, text, kind, nargs)] for the maximal dotted chains in a function's body: kind 'call'
    (nargs = positional + keyword arguments, starred ones included) or 'name'.  Nested def/class
    bodies belong to their own entity; their decorators, defaults and bases are evaluated here.
    Iterative, since expression trees can be very deep."""
    found = []
    stack = list(fn.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            stack += node.decorator_list
            if isinstance(node, ast.ClassDef):
                stack += node.bases + node.keywords
            else:
                stack += node.args.defaults + [d for d in node.args.kw_defaults if d]
            continue
        if isinstance(node, ast.Call):
            chain = dotted(node.func)
            if chain:
                found.append((node.lineno, node.col_offset, chain, "call",
                              len(node.args) + len(node.keywords)))
                stack += node.args + node.keywords
                continue
        elif isinstance(node, (ast.Name, ast.Attribute)):
            chain = dotted(node)
            if chain:   # maximal chain: its inner Attribute/Name nodes are not reported again
                found.append((node.lineno, node.col_offset, chain, "name", None))
                continue
        stack.extend(ast.iter_child_nodes(node))
    found.sort(key=lambda r: (r[0], r[1]))
    return [(line, text, kind, nargs) for line, _, text, kind, nargs in found]


def walk_stmts(body):
    """Every statement, at any depth (def/class bodies included)."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield from walk_stmts(stmt.body)
        else:
            for block in child_blocks(stmt):
                yield from walk_stmts(block)


def imports_of(tree):
    """[(line, module, name, alias, level)]; `import a.b as c` -> ('a.b', None, 'c', 0)."""
    rows = []
    for stmt in walk_stmts(tree.body):
        if isinstance(stmt, ast.Import):
            rows += [(stmt.lineno, a.name, None, a.asname, 0) for a in stmt.names]
        elif isinstance(stmt, ast.ImportFrom):
            rows += [(stmt.lineno, stmt.module or "", a.name, a.asname, stmt.level)
                     for a in stmt.names]
    return rows


def extract_entities(tree, lines):
    """Entity dicts: qualname, kind, start, end, signature, docstring, text, refs."""
    ents = []
    for qual, kind, node in entity_nodes(tree.body):
        e = {"qualname": qual, "kind": kind, "start": node.lineno, "end": node.end_lineno,
             "signature": None, "docstring": None, "refs": []}
        if kind in ("variable", "attribute"):
            e["text"] = segment(lines, node.lineno, node.col_offset,
                                node.end_lineno, node.end_col_offset)
        else:
            first = min([d.lineno for d in node.decorator_list] + [node.lineno])
            e["text"] = "".join(lines[first - 1:node.end_lineno])
            row, col = header_colon(lines, node)
            e["signature"] = segment(lines, node.lineno, node.col_offset, row, col).rstrip()
            e["docstring"] = ast.get_docstring(node)
            if kind != "class":
                e["refs"] = references(node)
        ents.append(e)
    return ents


def make_snippets(lines, limit=SNIPPET_MAX_LINES):
    """Split-aggregate (AlignCoder eq. 14-16): mini-blocks of consecutive non-blank lines (blank = only
    ASCII whitespace); a mini-block longer than limit is first cut into limit-line chunks, which are
    mini-blocks like any other; then consecutive mini-blocks are merged greedily while their line total
    stays <= limit. Returns [(start, end)] 1-based inclusive (blank lines between merged blocks lie inside)."""
    blocks, start = [], None
    for i, line in enumerate(lines):
        blank = not line.strip(" \t\f\v\r\n")
        if not blank and start is None:
            start = i
        elif blank and start is not None:
            blocks.append((start, i - 1))
            start = None
    if start is not None:
        blocks.append((start, len(lines) - 1))
    chunks = []
    for s, e in blocks:
        chunks += [(c, min(c + limit - 1, e)) for c in range(s, e + 1, limit)]

    out, cur = [], None                 # cur = [start, end, non-blank line count]
    for s, e in chunks:
        n = e - s + 1
        if cur and cur[2] + n <= limit:
            cur[1], cur[2] = e, cur[2] + n
            continue
        if cur:
            out.append((cur[0], cur[1]))
        cur = [s, e, n]
    if cur:
        out.append((cur[0], cur[1]))
    return [(s + 1, e + 1) for s, e in out]


# ------------------------------------------------------------------------------------------ BM25
class BM25Index:
    """Okapi BM25, idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5)); k1 = 1.5, b = 0.75."""

    def __init__(self):
        self.postings = {}          # term -> [(doc, tf)] in doc order
        self.doc_len = []           # doc id -> number of terms

    def add(self, tf):
        doc = len(self.doc_len)
        for term, n in tf.items():
            self.postings.setdefault(term, []).append((doc, n))
        self.doc_len.append(sum(tf.values()))
        return doc

    def finalize(self):
        n = len(self.doc_len)
        self.avgdl = sum(self.doc_len) / n if n else 0.0
        self.idf = {t: math.log(1.0 + (n - len(p) + 0.5) / (len(p) + 0.5))
                    for t, p in self.postings.items()}
        # per-doc length normalisation k1 * (1 - b + b * dl / avgdl)
        self.norm = [K1 * (1.0 - B + B * dl / self.avgdl) if self.avgdl else K1
                     for dl in self.doc_len]

    def search(self, text, k):
        """Top-k [(doc, score)]: score desc, doc id asc.  Each query term occurrence counts: the
        contribution of distinct term t (taken in first-occurrence order) is
        qtf * idf(t) * tf * (k1 + 1) / (tf + norm[doc])."""
        scores = {}
        for term, qtf in Counter(tokenize(text)).items():
            plist = self.postings.get(term)
            if not plist:
                continue
            w = qtf * self.idf[term] * (K1 + 1.0)
            norm = self.norm
            for doc, tf in plist:
                scores[doc] = scores.get(doc, 0.0) + w * tf / (tf + norm[doc])
        return heapq.nsmallest(k, scores.items(), key=lambda ds: (-ds[1], ds[0]))


# ---------------------------------------------------------------------------------------- SQLite
SCHEMA = """
CREATE TABLE files(id INTEGER PRIMARY KEY, path TEXT UNIQUE, hash BLOB, size INTEGER,
                   ok INTEGER, error TEXT);
CREATE TABLE entities(id INTEGER PRIMARY KEY, file_id INTEGER, qualname TEXT, kind TEXT,
                      start_line INTEGER, end_line INTEGER, signature TEXT, docstring TEXT,
                      text TEXT, ntokens INTEGER);
CREATE TABLE imports(file_id INTEGER, line INTEGER, module TEXT, name TEXT, alias TEXT,
                     level INTEGER);
CREATE TABLE refs(entity_id INTEGER, line INTEGER, text TEXT, kind TEXT, nargs INTEGER);
CREATE TABLE snippets(id INTEGER PRIMARY KEY, file_id INTEGER, start_line INTEGER,
                      end_line INTEGER, text TEXT, ntokens INTEGER);
-- corpus 0 = entities, 1 = snippets; doc = entities.id / snippets.id
CREATE TABLE postings(corpus INTEGER, term TEXT, doc INTEGER, tf INTEGER);
CREATE TABLE terms(corpus INTEGER, term TEXT, df INTEGER, idf REAL, PRIMARY KEY(corpus, term));
CREATE TABLE corpus_stats(corpus INTEGER PRIMARY KEY, n_docs INTEGER, avgdl REAL,
                          k1 REAL, b REAL);
"""


def open_db(path):
    for p in (path, path + "-wal", path + "-shm", path + "-journal"):
        if os.path.exists(p):
            os.remove(p)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.executescript(SCHEMA)
    return conn


class Batch:
    """Rows of one batch of files, written in one transaction."""

    TABLES = {"files": 6, "entities": 10, "imports": 6, "refs": 5, "snippets": 6, "postings": 4}

    def __init__(self):
        self.rows = {t: [] for t in self.TABLES}
        self.nfiles = 0

    def flush(self, conn):
        with conn:  # one transaction
            for table, ncols in self.TABLES.items():
                if self.rows[table]:
                    conn.executemany(f"INSERT INTO {table} VALUES ({','.join('?' * ncols)})",
                                     self.rows[table])
        self.__init__()


# ------------------------------------------------------------------------------------------ main
def parse(data):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(data), None
    except SyntaxError as e:
        return None, f"{type(e).__name__}: {e.msg} line {e.lineno}"
    except (ValueError, UnicodeDecodeError, RecursionError, MemoryError) as e:
        return None, f"{type(e).__name__}: {e}"


def build_index(root, db_path):
    """Index ROOT into db_path; returns (entity BM25, entity meta, auto queries, stats, snippet BM25,
    snippet meta)."""
    t0 = time.perf_counter()
    stage = Counter()                       # seconds per stage
    paths = walk_py_files(root)
    stage["walk"] = time.perf_counter() - t0
    conn = open_db(db_path)
    ent_index, snip_index = BM25Index(), BM25Index()
    meta = []                               # entity doc id -> (file, qualname, start_line)
    snip_meta = []                          # snippet doc id -> (file, start_line, end_line)
    auto_queries = []
    n = Counter()
    batch = Batch()
    for file_id, rel in enumerate(paths):
        t = time.perf_counter()
        try:
            with open(os.path.join(root, rel), "rb") as f:
                data = f.read()
        except OSError as e:
            batch.rows["files"].append((file_id, rel, None, None, 0, f"OSError: {e.strerror}"))
            continue
        digest = hashlib.blake2b(data, digest_size=16).digest()
        n["bytes"] += len(data)
        t1 = time.perf_counter()
        tree, error = parse(data)
        t2 = time.perf_counter()
        lines = split_lines(decode_source(data))
        ents = extract_entities(tree, lines) if tree else []
        imps = imports_of(tree) if tree else []
        snips = make_snippets(lines)
        t3 = time.perf_counter()
        stage["read+hash"] += t1 - t
        stage["parse"] += t2 - t1
        stage["extract"] += t3 - t2

        rows = batch.rows
        rows["files"].append((file_id, rel, digest, len(data), int(tree is not None), error))
        n["files_failed"] += tree is None
        rows["imports"] += [(file_id,) + imp for imp in imps]
        for e in ents:
            tf = term_freqs(e["text"])
            doc = ent_index.add(tf)
            meta.append((rel, e["qualname"], e["start"]))
            rows["entities"].append((doc, file_id, e["qualname"], e["kind"], e["start"], e["end"],
                                     e["signature"], e["docstring"], e["text"],
                                     ent_index.doc_len[doc]))
            rows["postings"] += [(0, term, doc, c) for term, c in tf.items()]
            n["postings"] += len(tf)
            rows["refs"] += [(doc,) + r for r in e["refs"]]
            n["refs"] += len(e["refs"])
            if (e["kind"] in ("function", "method") and e["docstring"]
                    and len(auto_queries) < N_AUTO_QUERIES):
                auto_queries.append(e["signature"] + "\n" + e["docstring"])
        for s, end in snips:
            text = "".join(lines[s - 1:end])
            tf = term_freqs(text)
            doc = snip_index.add(tf)
            snip_meta.append((rel, s, end))
            rows["snippets"].append((doc, file_id, s, end, text, snip_index.doc_len[doc]))
            rows["postings"] += [(1, term, doc, c) for term, c in tf.items()]
            n["postings"] += len(tf)
        n["imports"] += len(imps)
        t4 = time.perf_counter()
        stage["tokenize+postings"] += t4 - t3
        batch.nfiles += 1
        if batch.nfiles >= BATCH_FILES:
            batch.flush(conn)
            stage["sqlite"] += time.perf_counter() - t4

    t = time.perf_counter()
    batch.flush(conn)
    stage["sqlite"] += time.perf_counter() - t
    t = time.perf_counter()
    ent_index.finalize()
    snip_index.finalize()
    stage["bm25"] += time.perf_counter() - t
    t = time.perf_counter()
    with conn:
        for corpus, idx in enumerate((ent_index, snip_index)):
            conn.executemany("INSERT INTO terms VALUES (?,?,?,?)",
                             ((corpus, term, len(p), idx.idf[term])
                              for term, p in idx.postings.items()))
            conn.execute("INSERT INTO corpus_stats VALUES (?,?,?,?,?)",
                         (corpus, len(idx.doc_len), idx.avgdl, K1, B))
        conn.execute("CREATE INDEX postings_term ON postings(corpus, term)")
        conn.execute("CREATE INDEX entities_file ON entities(file_id)")
        conn.execute("CREATE INDEX refs_entity ON refs(entity_id)")
    conn.close()
    stage["sqlite"] += time.perf_counter() - t
    seconds = time.perf_counter() - t0
    stats = {"files": len(paths), "files_failed": n["files_failed"], "bytes": n["bytes"],
             "index_seconds": seconds, "files_per_s": len(paths) / seconds,
             "mb_per_s": n["bytes"] / MB / seconds, "entities": len(meta),
             "references": n["refs"], "imports": n["imports"],
             "snippets": len(snip_index.doc_len), "postings": n["postings"],
             "terms_entities": len(ent_index.postings), "terms_snippets": len(snip_index.postings),
             "stage_seconds": {k: round(v, 3) for k, v in stage.items()}}
    return ent_index, meta, auto_queries, stats, snip_index, snip_meta


def percentile(sorted_values, q):
    """Nearest-rank percentile."""
    if not sorted_values:
        return None
    return sorted_values[max(0, math.ceil(q * len(sorted_values)) - 1)]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("root")
    ap.add_argument("--db", required=True, help="SQLite output (replaced if it exists)")
    ap.add_argument("--queries", help='JSONL of {"text": ...}; default: signature + docstring of '
                                      f"the first {N_AUTO_QUERIES} documented functions")
    ap.add_argument("--k", type=int, default=20)
    ap.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    ap.add_argument("--dump-scores", metavar="FILE",
                    help='JSONL per query: {"text", "results": [[file, qualname, start_line, '
                         'score], ...]} (usable again as --queries); with --corpus snippets the '
                         'results are [[file, start_line, end_line, score], ...]')
    ap.add_argument("--corpus", choices=("entities", "snippets"), default="entities",
                    help="index the queries run against (default: entities)")
    args = ap.parse_args(argv)
    if not os.path.isdir(args.root):
        ap.error(f"not a directory: {args.root}")

    index, meta, queries, stats, snip_index, snip_meta = build_index(args.root, args.db)
    if args.corpus == "snippets":
        index, meta = snip_index, snip_meta
    if args.queries:
        with open(args.queries, encoding="utf-8") as f:
            queries = [json.loads(line)["text"] for line in f if line.strip()]

    latencies, dumps = [], []
    for q in queries:
        t = time.perf_counter()
        top = index.search(q, args.k)
        latencies.append((time.perf_counter() - t) * 1000.0)
        if args.dump_scores:
            dumps.append({"text": q, "results": [list(meta[d]) + [s] for d, s in top]})
    if args.dump_scores:
        with open(args.dump_scores, "w", encoding="utf-8") as f:
            f.writelines(json.dumps(d) + "\n" for d in dumps)
    latencies.sort()
    stats.update({
        "root": os.path.abspath(args.root), "corpus": args.corpus, "queries": len(queries),
        "k": args.k,
        "query_p50_ms": percentile(latencies, 0.50), "query_p99_ms": percentile(latencies, 0.99),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        "python": sys.version.split()[0]})

    if args.json:
        print(json.dumps(stats))
    else:
        fmt = lambda v: f"{v:.3f}" if isinstance(v, float) else str(v)
        for key, value in stats.items():
            print(f"{key:18} {fmt(value) if not isinstance(value, dict) else json.dumps(value)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
