#!/usr/bin/env python3
"""The context-retrieval study end to end with the real llama.cpp runtime behind a real llama-server.

    study_e2e.py --repoctx BIN --llama-server BIN

A git repository is made from a copy of Debian's python3-colorama with two commits (no checkout is read by
repoctx: trees come from git objects). A task file holds a SWE-bench-style row (the second commit's patch
against the first) and an LCA-style row (the second commit). Then:
  1. every cell of the study's grid (study-bm25, react-{bm25,acr}-{cl,tc,sr}, acr) runs over the tasks with
     the tiny random-weight model on llama-server: no error rows, traces with steps, stop reasons and context
     lengths, the table with the study's columns;
  2. the same run into a fresh folder with the same LLM cache is served entirely by the cache;
  3. `repoctx localize` on the repository folder prints hits with files and writes a trace.
  4. the ReAct cells once more with the API's native tool calls (the default with an OpenAI-compatible server):
     the server takes the tools and tool messages, and every trace says which path its turns took.
The model answers gibberish, so budgets are tiny; runs 1-3 take schema-constrained turns (tool_calls=schema),
which keep every answer parseable and make the random model call tools.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

from _util import Checker, Failure, TempDir, main_wrapper, run, start_llama_server, tail

STRATEGIES = ["study-bm25", "react-bm25-cl", "react-bm25-tc", "react-bm25-sr", "react-acr-cl", "react-acr-tc",
              "react-acr-sr", "acr"]
PARAMS = ["max_turns=3", "run_turns=2", "turn_tokens=96", "thought_chars=16", "answer_chars=16",
          "string_arg_chars=24", "cl_max_rounds=1", "sr_max_reviews=1", "review_tokens=48", "review_chars=16",
          "acr_max_rounds=1", "acr_max_tries=1", "acr_answer_tokens=24", "acr_proxy_tokens=96", "acr_max_calls=1",
          "acr_max_locations=1", "context_tokens=200"]
SRC = "/usr/lib/python3/dist-packages/colorama"



def git(repo, *args):
    subprocess.run(["git", "-C", repo, "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
                   + list(args), check=True, capture_output=True)


def make_repo(work):
    repo = os.path.join(work, "clones", "test+colorama")
    shutil.copytree(SRC, os.path.join(repo, "colorama"), ignore=shutil.ignore_patterns("__pycache__"))
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "import colorama")
    path = os.path.join(repo, "colorama", "ansi.py")
    text = open(path).read()
    text = text.replace("def clear_line(mode=2):", "def clear_line(mode=2):\n    mode = int(mode)", 1)
    open(path, "w").write(text)
    git(repo, "commit", "-q", "-am", "Accept the clear_line mode as a string and convert it to an integer")
    base = subprocess.run(["git", "-C", repo, "rev-parse", "HEAD~1"], capture_output=True, text=True).stdout.strip()
    head = subprocess.run(["git", "-C", repo, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    patch = subprocess.run(["git", "-C", repo, "diff", base, head], capture_output=True, text=True).stdout
    tasks = os.path.join(work, "tasks.jsonl")
    with open(tasks, "w") as f:
        f.write(json.dumps({"instance_id": "test__colorama-1", "repo": "test/colorama", "base_commit": base,
                            "problem_statement": "clear_line fails when the mode is given as a string",
                            "patch": patch}) + "\n")
        f.write(json.dumps({"repo": "test/colorama", "hash": head,
                            "message": "Accept the clear_line mode as a string and convert it to an integer"}) + "\n")
    return repo, tasks


def run_grid(ck, binary, tasks, clones, out, cache, endpoint, strategies=STRATEGIES, tool_calls="schema"):
    cmd = ["localize-eval", tasks, "--strategies", ",".join(strategies), "--out", out, "--repos", clones,
           "--cache-dir", os.path.join(os.path.dirname(out), "study-cache"), "--cache", cache,
           "--backend", "openai", "--endpoint", endpoint, "--model", "tiny"]
    for p in PARAMS + [f"tool_calls={tool_calls}"]:
        cmd += ["--param", p]
    t0 = time.time()
    p = run(binary, cmd, timeout=1500)
    ck.check(p.returncode == 0, f"localize-eval over the grid exits 0 ({time.time() - t0:.0f} s)",
             f"exit {p.returncode}: {tail(p.stderr)}")
    rows = []
    for name in os.listdir(out) if os.path.isdir(out) else []:
        if name.startswith("results-"):
            rows += [json.loads(line) for line in open(os.path.join(out, name)) if line.strip()]
    return p, rows


def check_rows(ck, rows, out):
    tool_turns = {}
    for s in STRATEGIES:
        mine = [r for r in rows if r["strategy"] == s]
        ck.check(len(mine) == 2, f"{s}: a row per task", f"{len(mine)} rows")
        for r in mine:
            ck.check("error" not in r, f"{s} on {r['task']} runs without error", r.get("error", ""))
            if "error" in r:
                continue
            ck.check(r["gold_files"] == ["colorama/ansi.py"], f"{s} on {r['task']}: gold file from the patch",
                     json.dumps(r["gold_files"]))
            trace = os.path.join(out, "traces", s, r["task"].replace("/", "_") + ".json")
            ck.check(os.path.exists(trace), f"{s} on {r['task']}: trace written")
            if not os.path.exists(trace):
                continue
            t = json.load(open(trace))
            ck.check("stop_reason" in t and "context_tokens" in t, f"{s}: trace has stop reason and context length",
                     json.dumps(t)[:300])
            if s.startswith("react-"):
                ck.check(t.get("tool_call_mode") == "schema", f"{s}: turns took the schema path",
                         str(t.get("tool_call_mode")))
                steps = t.get("steps", [])
                tool_turns[s] = tool_turns.get(s, 0) + sum(1 for x in steps if x.get("action") not in (None, "answer"))
                ck.check(len(steps) > 0 and all("turn" in x or "stop" in x or "run_turns_reached" in x for x in steps),
                         f"{s}: trace shows each step ({len(steps)}; stop: {t.get('stop_reason')})")
            if s == "acr":
                ck.check(len(t.get("rounds", [])) >= 1, f"acr: trace shows its rounds (stop: {t.get('stop_reason')})")
    # A random model may answer at once (the schema's answer branch); over the grid it calls tools too.
    ck.check(sum(tool_turns.values()) >= 1, f"schema turns call tools on the real runtime: {tool_turns}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repoctx", required=True)
    ap.add_argument("--llama-server", required=True)
    a = ap.parse_args()
    ck = Checker()
    if not os.path.isdir(SRC):
        raise Failure(f"{SRC} is missing: run scripts/setup.sh --python-libs")
    with TempDir("repoctx-study-e2e-") as work:
        repo, tasks = make_repo(work)
        model = os.path.join(work, "tiny-ascii.gguf")
        p = run(a.repoctx, ["make-test-model", "--out", model, "--ascii-only"])
        if p.returncode != 0:
            raise Failure(f"make-test-model failed: {tail(p.stderr)}")
        with start_llama_server(a.llama_server, model, os.path.join(work, "server.log"), "-c", "8192", "-np", "1",
                                "-t", "2", "--no-webui") as srv:
            endpoint = srv.endpoint
            clones = os.path.join(work, "clones")
            cache = os.path.join(work, "llm.db")
            out1 = os.path.join(work, "run1")
            p, rows = run_grid(ck, a.repoctx, tasks, clones, out1, cache, endpoint)
            check_rows(ck, rows, out1)
            ck.check("| BM25 | Baseline |" in p.stdout and "| ACR Tools | ACR |" in p.stdout,
                     "the table has the study's rows", tail(p.stdout))
            print(p.stdout, flush=True)
            out2 = os.path.join(work, "run2")
            p2, rows2 = run_grid(ck, a.repoctx, tasks, clones, out2, cache, endpoint)
            for r in rows2:
                u = r.get("llm_usage", {}).get("total", {})
                if u.get("calls", 0):
                    ck.check(u["calls"] == u["cached"], f"re-run of {r['strategy']} on {r['task']} served by the cache",
                             json.dumps(u))
            react = [s for s in STRATEGIES if s.startswith("react-")]
            out4 = os.path.join(work, "run-native")
            p4, rows4 = run_grid(ck, a.repoctx, tasks, clones, out4, cache, endpoint, react, "auto")
            ck.check(len(rows4) == 2 * len(react) and not any("error" in r for r in rows4),
                     f"native tool calls: {len(rows4)} rows, none with an error",
                     json.dumps([r.get("error") for r in rows4 if "error" in r])[:600])
            for r in rows4:
                tp = os.path.join(out4, "traces", r["strategy"], r["task"].replace("/", "_") + ".json")
                mode = json.load(open(tp)).get("tool_call_mode") if os.path.exists(tp) else None
                ck.check(mode == "native", f"{r['strategy']} on {r['task']}: turns took the native path", str(mode))
            t = os.path.join(work, "trace.json")
            p3 = run(a.repoctx, ["localize", repo, "--query", "clear_line mode string", "--strategy", "react-acr-tc",
                                 "--json", "--trace", t, "--db", os.path.join(work, "idx.db"), "--cache", cache,
                                 "--backend", "openai", "--endpoint", endpoint, "--model", "tiny"]
                     + sum([["--param", x] for x in PARAMS + ["tool_calls=schema"]], []), timeout=600)
            ck.check(p3.returncode == 0, "localize on the folder exits 0", tail(p3.stderr))
            if p3.returncode == 0:
                j = json.loads(p3.stdout)
                ck.check("stop_reason" in j and "results" in j, "localize --json reports hits and the stop reason")
                ck.check(os.path.exists(t) and "steps" in json.load(open(t)), "localize --trace writes the steps")
    return ck.finish("study_e2e")


if __name__ == "__main__":
    sys.exit(main_wrapper("study_e2e", main))
