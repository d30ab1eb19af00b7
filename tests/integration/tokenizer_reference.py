#!/usr/bin/env python3
"""repoctx's cl100k_base tokenizer vs. tiktoken's own implementation, token id for token id.

    tokenizer_reference.py --repoctx BIN --tiktoken DIR --node NODE [--corpus DIR ...]

DIR is the pinned npm package `tiktoken` that scripts/setup.sh unpacks (its Rust core compiled to
WebAssembly, run here by Node.js: the reference the study's GPT-3.5 counts come from).  Inputs: every
UTF-8 file of the corpus folders (Python's standard library by default), plus generated texts that mix
the Unicode classes the pre-tokenizer tells apart (letters of many scripts, combining marks, digits of
several systems, every white-space character, punctuation, emoji, contractions).  Each input's ids from
`repoctx count-tokens --ids` must equal the reference's `encode_ordinary` ids.
"""
import argparse
import json
import os
import random
import subprocess
import sys

from _util import Checker, Failure, TempDir, main_wrapper, run_jsonl

REFERENCE_JS = r"""
const {get_encoding} = require(process.argv[1] + "/tiktoken.cjs");
const fs = require("fs");
const enc = get_encoding("cl100k_base");
const files = JSON.parse(fs.readFileSync(0, "utf8"));
const out = {};
for (const f of files) out[f] = Array.from(enc.encode_ordinary(fs.readFileSync(f, "utf8")));
enc.free();
process.stdout.write(JSON.stringify(out));
"""

# Characters of every class the pattern distinguishes, and a few that sit on the class boundaries.
ALPHABET = (
    list("abcxyzABCXYZ") + list("éüßøñ") + list("中文字日本語") + list("αβγΔΩ") + list("абвЖЯ") +
    list("אבגعربي") + list("हिन्दी") + ["\u0301", "\u0308", "\u200d"] +          # combining marks, ZWJ
    list("0123456789") + list("٠١٢٣") + list("１２３") + ["Ⅻ", "½", "²"] +     # other digits, numbers
    [" ", " ", " ", "\t", "\n", "\r", "\v", "\f", "\u00a0", "\u2003", "\u3000", "\u0085", "\u2028",
     "\u1680", "\x1c"] +                                                         # white space and not
    list("'''\"#$%&()*+,-./:;<=>?@[\\]^_`{|}~") + ["—", "…", "«", "»"] +
    ["🎉", "👍🏽", "🇩🇪"] + ["'s", "'T", "'re", "'VE", "'m", "'Ll", "'d", "n't"]
)


def generated_texts(n, seed=7):
    rng = random.Random(seed)
    texts = []
    for i in range(n):
        length = rng.choice([5, 40, 200, 2000])
        texts.append("".join(rng.choice(ALPHABET) for _ in range(length)))
    # Long runs the merge loop meets: one repeated character, repeated white space, one long identifier.
    texts += ["=" * 5000, " " * 3000 + "x", "\n" * 500, "a" * 4000, "x_" * 2500, "ab12" * 1000]
    return texts


def corpus_files(folders, limit):
    files = []
    for folder in folders:
        for root, dirs, names in os.walk(folder):
            dirs[:] = sorted(d for d in dirs if d not in ("__pycache__", "site-packages", "dist-packages"))
            for name in sorted(names):
                if not name.endswith((".py", ".txt", ".rst", ".md", ".json", ".html", ".cfg")):
                    continue
                path = os.path.join(root, name)
                try:
                    with open(path, "rb") as f:
                        f.read().decode("utf-8")   # the reference reads text: invalid UTF-8 is not comparable
                except (OSError, UnicodeDecodeError):
                    continue
                files.append(path)
                if len(files) >= limit:
                    return files
    return files


def reference_ids(node, tiktoken_dir, files):
    p = subprocess.run([node, "-e", REFERENCE_JS, tiktoken_dir], input=json.dumps(files), capture_output=True,
                       text=True, timeout=900)
    if p.returncode != 0:
        raise Failure(f"the reference (node + tiktoken) failed: {p.stderr[-2000:]}")
    return json.loads(p.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repoctx", required=True)
    ap.add_argument("--tiktoken", required=True, help="the npm package tiktoken, unpacked (scripts/setup.sh)")
    ap.add_argument("--node", default="node")
    ap.add_argument("--corpus", action="append", default=None)
    ap.add_argument("--max-files", type=int, default=400)
    a = ap.parse_args()
    if not os.path.isfile(os.path.join(a.tiktoken, "tiktoken.cjs")):
        raise Failure(f"{a.tiktoken} holds no tiktoken.cjs: run scripts/setup.sh")
    corpus = a.corpus or [os.path.dirname(os.__file__)]
    ck = Checker()
    with TempDir("tokref") as tmp:
        files = corpus_files(corpus, a.max_files)
        for i, text in enumerate(generated_texts(120)):
            path = os.path.join(tmp, f"generated-{i:03d}.txt")
            with open(path, "w", encoding="utf-8", newline="") as f:
                f.write(text)
            files.append(path)
        ck.check(len(files) >= 200, f"{len(files)} inputs to compare")
        ref = reference_ids(a.node, a.tiktoken, files)
        ours = {}
        for start in range(0, len(files), 100):
            for row in run_jsonl(a.repoctx, ["count-tokens", "--ids", *files[start:start + 100]]):
                ours[row["file"]] = row
        mismatched, tokens, size = [], 0, 0
        for f in files:
            r, o = ref[f], ours.get(f, {})
            tokens += len(r)
            size += os.path.getsize(f)
            if o.get("ids") != r or o.get("tokens") != len(r):
                first = next((k for k, (x, y) in enumerate(zip(o.get("ids", []), r)) if x != y),
                             min(len(o.get("ids", [])), len(r)))
                mismatched.append(f"{f}: {o.get('tokens')} vs {len(r)} tokens, first difference at token {first}")
        ck.check(not mismatched, f"every input's ids equal the reference's ({len(files)} inputs, {size} bytes, "
                 f"{tokens} tokens)", "\n".join(mismatched[:10]))
        est = run_jsonl(a.repoctx, ["count-tokens", "--tokenizer", "estimate", files[0]])[0]
        ck.check(est["tokenizer"] == "estimate" and est["tokens"] > 0, "the estimate says it is the estimate")
    return ck.finish("tokenizer_reference")


if __name__ == "__main__":
    sys.exit(main_wrapper("tokenizer_reference", main))
