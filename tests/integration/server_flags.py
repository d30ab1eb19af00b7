#!/usr/bin/env python3
"""The llama-server commands of docs/LLM.md ("Running a server"), started exactly as documented.

    server_flags.py --repoctx BIN --llama-server BIN --docs docs/LLM.md REPO

The two `llama-server` lines of the section are read from the document (so the document and this test
cannot drift); `MODEL.gguf` and `PORT` are filled in and `-c 2048` is added (a small context; the
physical batch stays at its default of 512 tokens). Against them, with the tiny random-weight model:
  1. `llm embed` of a real 1,055-token text (colorama's ansitowin32.py) and a short one: exit 0, both
     vectors unit length, one warning that an input was cut; the long text's vector is the server's own
     embedding of its first 508 tokens (the batch less the special tokens); the re-run is a cache hit
     (no warning, no request);
  2. `generate --method dense` on REPO with the default budget (12,000) and output (4,096 tokens) against
     the 2,048-token servers: exit 0 (the dense strategy embeds every entity, some longer than 512 tokens),
     the trace's context_fit shows the budget fitted to 2,048 tokens, and one warning says so.
Before the fit and the truncation, (1) failed with HTTP 500 ("input (1650 tokens) is too large to
process") and (2) with it or with HTTP 400 ("request (... tokens) exceeds the available context size").
"""
import argparse
import json
import math
import os
import re
import shlex
import sys
import time
import urllib.request

from _util import Checker, Failure, LlamaServer, TempDir, free_port, main_wrapper, run, tail

CONTEXT = "2048"
TARGET = "ansitowin32.py::AnsiToWin32.write_and_convert"



def documented_commands(doc):
    """The generation and the embedding llama-server command of docs/LLM.md's "Running a server"."""
    text = open(doc, encoding="utf-8").read()
    if "## Running a server" not in text:
        raise Failure(f"{doc} has no section 'Running a server'")
    section = text[text.index("## Running a server"):]
    section = section[:section.index("\n## ", 1)]
    llama = section[section.index("### llama-server"):section.index("### vLLM")]
    lines = [line.strip() for block in re.findall(r"```sh\n(.*?)```", llama, re.S) for line in block.splitlines()
             if line.strip().startswith("llama-server ")]
    gen = [shlex.split(x) for x in lines if "--embeddings" not in x]
    emb = [shlex.split(x) for x in lines if "--embeddings" in x]
    if len(gen) != 1 or len(emb) != 1:
        raise Failure(f"expected one generation and one embedding llama-server command in {doc}, found {lines}")
    return gen[0], emb[0]


def post(url, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    return json.loads(urllib.request.urlopen(req, timeout=120).read())


class Server(LlamaServer):
    """llama-server started with the flags docs/LLM.md documents (placeholders filled in) plus a context size."""

    def __init__(self, server_bin, documented, model, work, name):
        port = free_port()
        subst = {"llama-server": server_bin, "MODEL.gguf": model, "PORT": str(port)}
        super().__init__([subst.get(a, a) for a in documented] + ["-c", CONTEXT], port,
                         os.path.join(work, f"{name}.log"))


def unit(v):
    n = math.sqrt(sum(x * x for x in v))
    return [x / n for x in v], n


def check_embed(ck, a, emb, work, long_text):
    n_tokens = len(post(f"{emb.root}/tokenize", {"content": long_text})["tokens"])
    ck.check(n_tokens > 900, f"the long text has more than 900 tokens ({n_tokens})")
    cache = os.path.join(work, "cache.db")
    args = ["llm", "embed", "--backend", "openai", "--endpoint", f"{emb.root}/v1", "--model", "tiny",
            "--cache", cache, long_text, "def short(): pass"]
    p = run(a.repoctx, args)
    ck.check(p.returncode == 0, "llm embed of a 1,055-token text on the documented embedding server: exit 0",
             f"exit {p.returncode}: {tail(p.stderr)}")
    if p.returncode != 0:
        return
    vectors = json.loads(p.stdout)
    ck.check(len(vectors) == 2 and all(abs(unit(v)[1] - 1) < 1e-4 for v in vectors), "two unit vectors")
    ck.check("1 of 2 embedding inputs are longer than" in p.stderr and "(512 tokens)" in p.stderr,
             "one warning counts the input cut to the server's 512 tokens", tail(p.stderr))
    # The vector is the server's embedding of the text's first 508 tokens (512 less the special tokens).
    toks = post(f"{emb.root}/tokenize", {"content": long_text, "add_special": False})["tokens"]
    prefix = post(f"{emb.root}/detokenize", {"tokens": toks[:508]})["content"]
    ref = unit(post(f"{emb.root}/v1/embeddings", {"input": [prefix]})["data"][0]["embedding"])[0]
    cos = sum(x * y for x, y in zip(vectors[0], ref))
    ck.check(cos > 0.9999, f"the long text's vector is the embedding of its first 508 tokens (cosine {cos:.6f})")
    p2 = run(a.repoctx, args)
    ck.check(p2.returncode == 0 and json.loads(p2.stdout) == vectors and "embedding inputs" not in p2.stderr,
             "the re-run is served by the cache (same vectors, no truncation warning)", tail(p2.stderr))


def check_generate(ck, a, gen, emb, work):
    db = os.path.join(work, "index.db")
    p = run(a.repoctx, ["index", a.repo, "--db", db])
    if p.returncode != 0:
        raise Failure(f"index failed: {tail(p.stderr)}")
    trace = os.path.join(work, "trace.json")
    args = ["generate", a.repo, "--db", db, "--target", TARGET, "--method", "dense", "--backend", "openai",
            "--endpoint", f"{gen.root}/v1", "--model", "tiny", "--embed-endpoint", f"{emb.root}/v1",
            "--embed-model", "tiny", "--cache", os.path.join(work, "gen-cache.db"), "--trace", trace,
            "--python", "none"]
    t0 = time.time()
    p = run(a.repoctx, args)
    ck.check(p.returncode == 0,
             f"generate --method dense with the default budget on 2,048-token servers: exit 0 ({time.time() - t0:.0f} s)",
             f"exit {p.returncode}: {tail(p.stderr)}")
    if p.returncode != 0:
        return
    t = json.load(open(trace))
    fit = t.get("context_fit", {})
    ck.check(fit.get("context_length") == 2048 and fit.get("max_tokens") == 512 and
             0 < fit.get("prompt_budget_tokens", 0) < 12000,
             f"the trace's context_fit: budget 12000 -> {fit.get('prompt_budget_tokens')}, output 4096 -> "
             f"{fit.get('max_tokens')} for a 2048-token context", json.dumps(fit))
    ck.check(p.stderr.count("the LLM's context holds 2048 tokens") == 1, "one warning says so", tail(p.stderr))
    used = sum(c.get("tokens", 0) for c in t.get("prompt_contexts", []))
    ck.check(used <= fit.get("prompt_budget_tokens", 0), f"the prompt's contexts ({used} estimated tokens) fit it")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repoctx", required=True)
    ap.add_argument("--llama-server", required=True)
    ap.add_argument("--docs", required=True)
    ap.add_argument("repo")
    a = ap.parse_args()
    ck = Checker()
    gen_cmd, emb_cmd = documented_commands(a.docs)
    print(f"  documented: {' '.join(gen_cmd)} | {' '.join(emb_cmd)}")
    long_text = open(os.path.join(a.repo, "ansitowin32.py"), encoding="utf-8").read()[:4500]
    with TempDir("repoctx-server-flags-") as work:
        model = os.path.join(work, "tiny.gguf")
        p = run(a.repoctx, ["make-test-model", "--out", model, "--ascii-only"])
        if p.returncode != 0:
            raise Failure(f"make-test-model failed: {tail(p.stderr)}")
        gen = Server(a.llama_server, gen_cmd, model, work, "gen")
        try:
            emb = Server(a.llama_server, emb_cmd, model, work, "emb")
            try:
                check_embed(ck, a, emb, work, long_text)
                check_generate(ck, a, gen, emb, work)
            finally:
                emb.stop()
        finally:
            gen.stop()
    return ck.finish("server_flags")


if __name__ == "__main__":
    sys.exit(main_wrapper("server_flags", main))
