#!/usr/bin/env python3
"""AlignCoder's completion pipeline end to end with the real llama.cpp runtime (plumbing, not quality).

    completion_e2e.py --repoctx BIN --llama-server BIN REPO

The tiny random-weight model (`repoctx make-test-model --ascii-only`) answers gibberish, so EM/ES mean
nothing; what is checked is that everything runs and is kept:
  1. make-completion-tasks on REPO (line + API), plus three bad tasks (a missing field, a cursor outside its
     file, a file that no longer matches);
  2. complete-eval with every method (aligncoder, rlcoder, repocoder, reacc, in-file, no-retrieval) against a
     real llama-server on 127.0.0.1: exit 0, one record per (task, method), the bad tasks recorded with their
     errors, the table shaped like Table I (EM/ES per benchmark per method);
  3. the same command again: nothing new to do; then from a fresh results folder: the same predictions and
     no new LLM call (the cache's entries do not grow: the samples have a fixed seed);
  4. Ctrl-C in the middle of a run: exit 130, finished results kept, the re-run completes without duplicates;
  5. `complete` at one cursor, and RQ2's sweep (--k 1..2: one row per sampling number);
  6. the neural AlignRetriever: a linear head over the tiny model's embeddings (--mix --head), trained with
     eq. 21-22: the loss falls, two epochs in two runs equal two in one bit for bit, and retrieval uses the
     trained head (the same model with the head's rows swapped retrieves otherwise).
  0. first, train-aligncoder with perplexity labels from the model's log-probabilities (eq. 24), one small
     epoch, with the model in process: the AlignRetriever the methods then use.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import time

from _util import Checker, Failure, TempDir, main_wrapper, run, start_llama_server, tail

METHODS = "aligncoder,rlcoder,repocoder,reacc,in-file,no-retrieval"
SMALL = ["--max-tokens", "8", "--param", "sample_tokens=8", "--param", "generation_tokens=8",
         "--param", "context_chars=1500", "--param", "code_chars=1500", "--samples", "2"]



def results(path):
    out = []
    if os.path.exists(path):
        for line in open(path):
            if line.strip():
                out.append(json.loads(line))
    return out


def cache_entries(binary, cache, env):
    p = run(binary, ["cache", "stats", "--cache", cache, "--json"], env=env)
    if p.returncode != 0:
        raise Failure(f"cache stats failed: {tail(p.stderr)}")
    j = json.loads(p.stdout)
    rows = j.get("by_op_model", j.get("rows", j))
    total = 0
    if isinstance(rows, dict):
        for v in rows.values():
            if isinstance(v, dict):
                total += v.get("entries", 0)
    elif isinstance(rows, list):
        total = sum(r.get("entries", 0) for r in rows)
    return total


def write_bad_tasks(tasks_path, good):
    t = dict(good)
    lines = [json.dumps({"id": "bad/missing-field", "repo": t["repo"], "file": t["file"], "line": t["line"]})]
    far = dict(t, id="bad/outside", line=100000)
    lines.append(json.dumps(far))
    changed = dict(t, id="bad/changed", ground_truth="this_text_is_not_in_the_file()")
    lines.append(json.dumps(changed))
    with open(tasks_path, "a") as f:
        f.write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repoctx", required=True)
    ap.add_argument("--llama-server", required=True)
    ap.add_argument("repo")
    a = ap.parse_args()
    ck = Checker()
    binary, repo = os.path.abspath(a.repoctx), os.path.abspath(a.repo)
    if not os.path.isdir(repo):
        raise Failure(f"{repo} is missing")
    with TempDir("repoctx-complete-e2e-") as work:
        env = {"REPOCTX_INDEX_DIR": os.path.join(work, "indexes")}
        model = os.path.join(work, "tiny-ascii.gguf")
        p = run(binary, ["make-test-model", "--out", model, "--ascii-only"])
        if p.returncode != 0:
            raise Failure(f"make-test-model failed: {tail(p.stderr)}")
        tasks = os.path.join(work, "tasks.jsonl")
        p = run(binary, ["make-completion-tasks", repo, "--kind", "both", "--max", "4", "--out", tasks, "-q"], env=env)
        ck.check(p.returncode == 0, "make-completion-tasks exits 0", tail(p.stderr))
        good = [json.loads(x) for x in open(tasks)]
        ck.check(len(good) == 4, f"4 tasks built ({[t['kind'] for t in good]})")
        write_bad_tasks(tasks, good[0])
        # The AlignRetriever the methods use: trained here with perplexity labels (eq. 24) from the tiny model.
        aligned = check_training(ck, binary, env, repo, work, model, good[0])
        check_head_training(ck, binary, env, repo, work, model, good[0])
        with start_llama_server(a.llama_server, model, os.path.join(work, "server.log"), "-c", "4096", "-np", "1",
                                "-t", "2", "--no-webui") as srv:
            cache = os.path.join(work, "llm.db")
            llm = ["--backend", "openai", "--endpoint", srv.endpoint, "--model", "tiny",
                   "--model-file", aligned, "--cache", cache]
            check_eval(ck, binary, env, tasks, good, work, llm, cache)
            check_interrupt(ck, binary, env, tasks, work, llm)
            check_single_and_sweep(ck, binary, env, repo, good, work, llm)
    return ck.finish("completion_e2e")


def check_eval(ck, binary, env, tasks, good, work, llm, cache):
    out = os.path.join(work, "out1")
    cmd = ["complete-eval", tasks, "--methods", METHODS, "--out", out] + SMALL + llm
    t0 = time.time()
    p = run(binary, cmd, env=env, timeout=900)
    ck.check(p.returncode == 0, f"complete-eval with every method exits 0 ({time.time() - t0:.0f} s)",
             tail(p.stderr))
    recs = results(os.path.join(out, "results.jsonl"))
    methods = METHODS.split(",")
    ck.check(len(recs) == 7 * len(methods), f"one record per (task, method): {len(recs)}")
    errs = {r["task"]: r.get("error", "") for r in recs if "error" in r}
    ck.check(set(errs) == {"bad/missing-field", "bad/outside", "bad/changed"},
             "exactly the three bad tasks are recorded as errors", json.dumps(errs)[:500])
    ck.check("ground_truth" in errs.get("bad/missing-field", ""), "a missing field is named", errs.get("bad/missing-field"))
    ck.check("outside" in errs.get("bad/outside", ""), "a cursor outside the file is named", errs.get("bad/outside"))
    ck.check("no longer matches" in errs.get("bad/changed", ""), "a changed file is named", errs.get("bad/changed"))
    scored = [r for r in recs if "error" not in r]
    ck.check(all(0 <= r["es"] <= 1 and r["em"] in (0, 1) for r in scored), "every scored record has EM and ES")
    by_m = {m: [r for r in scored if r["method"] == m] for m in methods}
    ck.check(all(len(v) == 4 for v in by_m.values()), "each method scored the 4 good tasks")
    ck.check(all(r["hits"] for r in by_m["aligncoder"]), "aligncoder retrieved context for every task")
    ck.check(all(not r["hits"] for r in by_m["no-retrieval"]), "no-retrieval retrieved nothing")
    ck.check(all(r["trace"].get("candidates_from") in ("sampler", "cache") and len(r["trace"]["candidates"]) == 2
                 for r in by_m["aligncoder"]), "aligncoder's queries carry 2 sampled candidates")
    ck.check(all(len(r["trace"]["rounds"]) == 2 and "completion" in r["trace"]["rounds"][0] for r in by_m["repocoder"]),
             "repocoder ran 2 rounds, the first with a completion")
    table = open(os.path.join(out, "table.md")).read()
    ck.check(all(f"| {m} |" in table for m in methods) and " EM | " in table and " ES |" in table,
             "table.md has a row per method and EM/ES columns per benchmark", table[:600])
    ck.check(os.path.exists(os.path.join(out, "table.csv")), "table.csv written")
    # Again: nothing to do.
    before = cache_entries(binary, cache, env)
    p = run(binary, cmd, env=env, timeout=900)
    ck.check(p.returncode == 0 and "0 result(s) written" in p.stderr, "a re-run resumes with nothing to do",
             tail(p.stderr))
    # A fresh folder: the same predictions, all from the cache.
    out2 = os.path.join(work, "out2")
    p = run(binary, ["complete-eval", tasks, "--methods", METHODS, "--out", out2] + SMALL + llm, env=env, timeout=900)
    after = cache_entries(binary, cache, env)
    ck.check(p.returncode == 0, "the run into a fresh folder exits 0", tail(p.stderr))
    ck.check(after == before, f"no new LLM call: cache entries {before} -> {after}")
    rec2 = {(r["task"], r["method"]): r.get("prediction") for r in results(os.path.join(out2, "results.jsonl"))}
    rec1 = {(r["task"], r["method"]): r.get("prediction") for r in recs}
    ck.check(rec1 == rec2, "the same predictions")
    ck.check(all(r["llm_calls"] == r["llm_cached"] for r in results(os.path.join(out2, "results.jsonl"))
                 if "error" not in r), "every call of the fresh run was served by the cache")


def check_interrupt(ck, binary, env, tasks, work, llm):
    out = os.path.join(work, "out3")
    fresh = [a if a != llm[-1] else os.path.join(work, "llm-fresh.db") for a in llm]
    cmd = [binary, "complete-eval", tasks, "--methods", METHODS, "--out", out] + SMALL + fresh
    full_env = dict(os.environ, **env)
    proc = subprocess.Popen(cmd, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    path = os.path.join(out, "results.jsonl")
    deadline = time.time() + 600
    while time.time() < deadline and proc.poll() is None and len(results(path)) < 3:
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=300)
    n = len(results(path))
    ck.check(proc.returncode == 130, f"Ctrl-C exits 130 ({n} results kept)", tail(err, 600))
    ck.check(0 < n < 42, "the finished results are kept, the rest is not done")
    p = run(binary, cmd[1:], env=env, timeout=900)
    recs = results(path)
    keys = [(r["task"], r["method"]) for r in recs]
    ck.check(p.returncode == 0 and len(keys) == 42 and len(set(keys)) == 42,
             f"the re-run completes without duplicates ({len(keys)} records)", tail(p.stderr))


def check_single_and_sweep(ck, binary, env, repo, good, work, llm):
    t = good[0]
    p = run(binary, ["complete", repo, "--file", t["file"], "--line", str(t["line"]), "--column", str(t["column"]),
                     "--method", "aligncoder", "--json"] + SMALL + llm, env=env)
    ok = p.returncode == 0
    j = json.loads(p.stdout) if ok else {}
    ck.check(ok and "completion" in j and j["hits"], "complete at one cursor: a completion and its context",
             tail(p.stderr))
    out = os.path.join(work, "sweep")
    p = run(binary, ["complete-eval", os.path.join(work, "tasks.jsonl"), "--methods", "aligncoder", "--k", "1..2",
                     "--out", out] + SMALL + llm, env=env, timeout=900)
    table = open(os.path.join(out, "table.md")).read() if p.returncode == 0 else ""
    ck.check("| aligncoder@k=1 |" in table and "| aligncoder@k=2 |" in table, "RQ2 sweep: one row per k",
             tail(p.stderr) + table[:300])


def check_training(ck, binary, env, repo, work, model, task):
    out = os.path.join(work, "align.json")
    cmd = ["train-aligncoder", repo, "--out", out, "--epochs", "1", "--samples", "3", "--labels", "ppl",
           "--candidates-per-query", "3", "--model", model, "--ctx", "4096", "--cache", os.path.join(work, "t.db"),
           "--param", "context_chars=1200", "--param", "code_chars=1200", "--json"]
    p = run(binary, cmd, env=env, timeout=900)
    if not ck.check(p.returncode == 0, "train-aligncoder with perplexity labels (eq. 24) exits 0", tail(p.stderr)):
        raise Failure("no AlignRetriever model to evaluate with")
    rep = json.loads(p.stdout)
    ck.check(rep["epochs"] and rep["epochs"][0]["samples"] > 0, "samples were labelled by perplexity",
             json.dumps(rep)[:300])
    p = run(binary, ["retrieve", repo, "--strategy", "aligncoder", "--model-file", out, "--param", "candidates=none",
                     "--file", task["file"], "--line", str(task["line"]), "--json"], env=env)
    ck.check(p.returncode == 0 and json.loads(p.stdout)["results"], "retrieve loads the trained model", tail(p.stderr))
    p = run(binary, cmd, env=env, timeout=300)
    ck.check(p.returncode == 0 and json.loads(p.stdout)["resumed_from"] == 1,
             "a re-run finds the finished epoch in the checkpoint", tail(p.stderr))
    return out


def check_head_training(ck, binary, env, repo, work, model, task):
    def train(out, epochs):
        cmd = ["train-aligncoder", repo, "--out", out, "--epochs", str(epochs), "--samples", "24", "--batch", "4",
               "--lr", "0.05", "--labels", "defines", "--candidates-per-query", "5", "--mix", "--head", "8",
               "--model", model, "--ctx", "8192", "--cache", os.path.join(work, "head.db"), "--json"]
        p = run(binary, cmd, env=env, timeout=900)
        ck.check(p.returncode == 0, f"train-aligncoder --mix --head 8 ({epochs} epochs) exits 0", tail(p.stderr))
        return json.loads(p.stdout) if p.returncode == 0 else None
    straight = os.path.join(work, "head-straight.json")
    rep = train(straight, 3)
    if not rep:
        return
    losses = [ep["loss"] for ep in rep["epochs"]]
    ck.check(len(losses) == 3 and losses[-1] < losses[0], f"training the head lowers the loss ({losses})")
    j = json.load(open(straight))
    ck.check(j["config"]["head"] == 8 and j["config"]["head_in"] > 0 and j.get("head"),
             f"the model file holds the head (8 x {j['config'].get('head_in')})")
    resumed = os.path.join(work, "head-resumed.json")
    train(resumed, 2)
    rep2 = train(resumed, 3)
    ck.check(rep2 is not None and rep2["resumed_from"] == 2, "the third epoch resumes from the checkpoint")
    ck.check(json.load(open(resumed))["head"] == j["head"] and json.load(open(resumed))["theta"] == j["theta"],
             "2 + 1 epochs equal 3 in one run, bit for bit")
    # Retrieval uses the trained head: swap its rows and the scores change.
    import base64
    import struct
    raw = base64.b64decode(j["head"])
    n_in = j["config"]["head_in"]
    rows = [struct.unpack(f"<{n_in}f", raw[i * 4 * n_in:(i + 1) * 4 * n_in]) for i in range(8)]
    swapped = b"".join(struct.pack(f"<{n_in}f", *row) for row in reversed(rows[:4])) + \
        b"".join(struct.pack(f"<{n_in}f", *(-x for x in row)) for row in rows[4:])
    flipped = dict(j)
    flipped["head"] = base64.b64encode(swapped).decode()
    other = os.path.join(work, "head-other.json")
    json.dump(flipped, open(other, "w"))
    def scores(path):
        p = run(binary, ["retrieve", repo, "--strategy", "aligncoder", "--model-file", path, "--param",
                         "candidates=none", "--file", task["file"], "--line", str(task["line"]), "--model", model,
                         "--ctx", "8192", "--cache", os.path.join(work, "head.db"), "--json"], env=env)
        ck.check(p.returncode == 0, f"retrieve with the head model {os.path.basename(path)}", tail(p.stderr))
        return [r.get("score") for r in json.loads(p.stdout)["results"]] if p.returncode == 0 else None
    a, b = scores(straight), scores(other)
    ck.check(a is not None and b is not None and a != b, "retrieval scores follow the trained head", f"{a} vs {b}")


if __name__ == "__main__":
    sys.exit(main_wrapper("completion_e2e", main))
