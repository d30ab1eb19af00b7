#!/usr/bin/env python3
"""ProjAgent's procedural retrieval end to end on a Debian library with the real llama.cpp runtime.

    procedural_e2e.py --repoctx BIN --llama-server BIN REPO

The tiny random-weight model (written by `repoctx make-test-model`) answers gibberish, so the schemas are
bounded tightly (one or two short steps) to let constrained decoding finish and every stage run:
decomposition, validation, projections, mu/PC1, target decomposition, seeds, agent, plan confirmation.
Two configurations:
  1. llama in process for every role (`--model tiny.gguf`);
  2. an OpenAI-compatible llama-server on 127.0.0.1 for text, the in-process model for hidden states
     (`--backend openai --endpoint ... --hidden-model tiny.gguf`) and embeddings.
For each: exit 0, a trace with every stage and its LLM usage, hits that name indexed functions; then the
same command again must be served entirely by the cache (a re-run repeats no LLM work).
"""
import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

from _util import Checker, Failure, TempDir, main_wrapper, run, tail

PARAMS = ["max_context_functions=4", "max_steps=2", "description_chars=40", "snippet_chars=60",
          "decompose_tokens=200", "judge_tokens=160", "agent_tokens=160", "projection_tokens=8",
          "max_rounds=2", "agent_budget=2", "snippet_cosine=-1", "seed_threshold=-1"]
TARGET = "helpers.py::get_root_path"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def check_run(ck, binary, label, repo, args, work):
    trace = os.path.join(work, f"trace-{label}.json")
    cmd = ["retrieve", repo, "--target", TARGET, "--strategy", "procedural", "--json",
           "--cache", os.path.join(work, "llm.db"), "--trace", trace] + args
    for p in PARAMS:
        cmd += ["--param", p]
    t0 = time.time()
    p = run(binary, cmd, timeout=600)
    ck.check(p.returncode == 0, f"[{label}] procedural retrieval exits 0 ({time.time() - t0:.1f} s)",
             f"exit {p.returncode}: {tail(p.stderr)}")
    if p.returncode != 0:
        return
    t = json.load(open(trace))
    for key in ["function_selection", "subspace", "decompositions", "mu_pc1", "target_decomposition", "rounds",
                "llm_usage", "non_llm_seconds"]:
        ck.check(key in t, f"[{label}] trace has '{key}'")
    ck.check(len(t.get("decompositions", [])) == 4, f"[{label}] 4 context functions decomposed (the cap)",
             f"{len(t.get('decompositions', []))}")
    ck.check(all(d["function"] != "helpers.py::get_root_path" for d in t.get("decompositions", [])),
             f"[{label}] the target is not decomposed as context")
    usage = t.get("llm_usage", {})
    print(f"  [{label}] usage by stage: " + ", ".join(f"{k} {v['calls']} calls/{v['completion_tokens']} tok"
                                               for k, v in usage.items()) +
          f"; rounds {len(t.get('rounds', []))}; grounded steps {t.get('grounded_context_steps')}", flush=True)
    for stage in ["decompose_context", "decompose_target"]:
        ck.check(usage.get(stage, {}).get("calls", 0) >= 1, f"[{label}] usage counts stage {stage}",
                 json.dumps(usage)[:300])
    total = usage.get("total", {})
    ck.check(total.get("calls", 0) > 0 and total.get("prompt_tokens", 0) > 0, f"[{label}] calls and tokens counted")
    steps = [s for d in t.get("decompositions", []) for s in d["steps"]]
    for s in steps:
        v = s["validation"]
        ck.check(s["grounded"] or v.get("rejected"), f"[{label}] a step not grounded says why", json.dumps(s)[:300])
        break
    hits = json.loads(p.stdout) if p.stdout.strip().startswith(("[", "{")) else []
    if isinstance(hits, dict):
        hits = hits.get("hits", [])
    ck.check(all("::" in h.get("name", h.get("target", "::")) or "file" in h for h in hits),
             f"[{label}] {len(hits)} hits, each naming an indexed function")
    # The same run again: every call comes from the cache.
    p2 = run(binary, cmd, timeout=600)
    ck.check(p2.returncode == 0, f"[{label}] the re-run exits 0", tail(p2.stderr))
    if p2.returncode == 0:
        t2 = json.load(open(trace))
        u2 = t2["llm_usage"]["total"]
        ck.check(u2["calls"] == u2["cached"], f"[{label}] the re-run is served by the cache ({u2['cached']}/{u2['calls']})",
                 json.dumps(t2["llm_usage"])[:400])
        ck.check(t2["rounds"] == t["rounds"], f"[{label}] the re-run reproduces every round")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repoctx", required=True)
    ap.add_argument("--llama-server", required=True)
    ap.add_argument("repo")
    a = ap.parse_args()
    ck = Checker()
    if not os.path.isdir(a.repo):
        raise Failure(f"{a.repo} is missing: run scripts/setup.sh --python-libs")
    with TempDir("repoctx-proc-e2e-") as work:
        model = os.path.join(work, "tiny.gguf")
        ascii_model = os.path.join(work, "tiny-ascii.gguf")
        for path, extra in [(model, []), (ascii_model, ["--ascii-only"])]:
            p = run(a.repoctx, ["make-test-model", "--out", path] + extra)
            if p.returncode != 0:
                raise Failure(f"make-test-model failed: {tail(p.stderr)}")
        p = run(a.repoctx, ["index", a.repo, "--db", os.path.join(work, "index.db")])
        if p.returncode != 0:
            raise Failure(f"index failed: {tail(p.stderr)}")
        common = ["--db", os.path.join(work, "index.db")]
        check_run(ck, a.repoctx, "llama", a.repo, common + ["--model", model], work)
        port = free_port()
        log = open(os.path.join(work, "server.log"), "w")
        srv = subprocess.Popen([a.llama_server, "-m", ascii_model, "--host", "127.0.0.1", "--port", str(port),
                                "-c", "8192", "-np", "2", "-t", "2", "--no-webui"], stdout=log, stderr=log)
        try:
            deadline = time.time() + 60
            while time.time() < deadline:
                try:
                    if urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1).status == 200:
                        break
                except Exception:
                    time.sleep(0.2)
            else:
                raise Failure("llama-server did not become healthy in 60 s")
            check_run(ck, a.repoctx, "openai+hidden", a.repo,
                      common + ["--backend", "openai", "--endpoint", f"http://127.0.0.1:{port}/v1", "--model", "tiny",
                                "--hidden-model", model, "--embed-backend", "llama", "--embed-model", model], work)
        finally:
            srv.send_signal(signal.SIGTERM)
            srv.wait(timeout=30)
    return ck.finish("procedural_e2e")


if __name__ == "__main__":
    sys.exit(main_wrapper("procedural_e2e", main))
