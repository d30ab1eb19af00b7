#!/usr/bin/env python3
"""The REPOCOD-style runner (`repoctx evaluate`) end to end on a copy of Debian's python3-colorama (a real
package that ships its tests): the LLM-free gold and stub methods pass and fail as they must; results are
resumable, shardable, parallel (--jobs), REPOCOD's task format loads; make-tasks builds tasks from the package's
own tests and validates them; the tiny random model's gibberish is reported as a failure; SIGKILL or SIGINT of
the runner in the middle of a test run leaves every file as it was (the tests run on a scratch copy: the user's
tree is never edited, not even for a moment); shards come from a Slurm array's or a Kubernetes Indexed Job's
variables. Every check compares the hashes of all files of the copy. (Hostile bodies, kill -9 of the whole
process group: sandbox_e2e.py; a real Slurm cluster: slurm_array.py.)"""
import argparse
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time

from _util import Checker, Failure, TempDir, main_wrapper, run, run_ok, tail

PY = sys.executable


def tree_hashes(root):
    out = {}
    for d, dirs, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, root)] = hashlib.sha1(fh.read()).hexdigest()
    return out


def results(out):
    with open(os.path.join(out, "results.jsonl")) as f:
        return [json.loads(l) for l in f if l.strip()]


def write_tasks(path, repo, test_command):
    with open(path, "w") as f:
        for fn in ["code_to_chars", "AnsiCodes.__init__"]:
            f.write(json.dumps({"repo": repo, "file": "colorama/ansi.py", "function": fn, "repo_id": "colorama",
                                "test_command": test_command}) + "\n")


# In the sleeping test command: tells this run's processes from those of another run of this test on the machine.
MARKER = f"repoctx-runner-e2e-{os.getpid()}"


def sleeping_tests():
    """PIDs of leftover test commands (read from /proc: procps may not be installed)."""
    out = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if MARKER.encode() in f.read():
                        out.append(pid)
            except OSError:
                pass
    return out


def make_tasks(ck, binary, repo, work, before):
    """Tasks from the package's own tests: candidates spread over files, each running the test files that
    reference it; validation keeps those gold passes and stub fails; evaluate reads the written file."""
    made = os.path.join(work, "made.jsonl")
    tmpl = f"{PY} -m pytest -q -x -p no:cacheprovider {{tests}}"
    run_ok(binary, ["make-tasks", repo, "--out", made, "--test-template", tmpl, "--max", "8", "-q"])
    with open(made) as f:
        cands = [json.loads(l) for l in f]
    ck.check(len(cands) == 8 and all(c["test_command"].startswith(PY) and " colorama/tests/" in c["test_command"]
                                     for c in cands), "make-tasks: 8 candidates, each running the test files naming it",
             json.dumps(cands[:2]))
    ck.check(len({c["file"] for c in cands}) >= 3, "make-tasks: candidates spread over the package's files",
             str({c["file"] for c in cands}))
    vd = os.path.join(work, "validate")
    p = run_ok(binary, ["make-tasks", repo, "--out", made, "--test-template", tmpl, "--max", "8", "--validate", vd,
                        "--timeout", "120", "--json", "-q"])
    summary = json.loads(p.stdout)
    with open(made) as f:
        kept = [json.loads(l) for l in f]
    ck.check(summary["candidates"] == 8 and summary["kept"] == len(kept) >= 4 and
             summary["kept"] + summary["gold_failed"] + summary["stub_passed"] == 8,
             "make-tasks --validate: every candidate accounted for, at least 4 kept", p.stdout)
    rs = {(r["task"], r["method"]): r["passed"] for r in results(vd)}
    ck.check(all(rs.get((k["id"], "gold")) is True and rs.get((k["id"], "stub")) is False for k in kept),
             "every kept task: gold passes, stub fails", str(rs))
    ck.check(tree_hashes(repo) == before, "make-tasks --validate: every repository file is as it was")
    # evaluate reads the made tasks; --jobs 2 runs two runner processes, one table over both.
    par = os.path.join(work, "made-eval")
    p = run_ok(binary, ["evaluate", made, "--methods", "gold,stub", "--jobs", "2", "--out", par, "-q"])
    n = len(kept)
    ck.check(f"| gold | 100.00% ({n}/{n}) |" in p.stdout and f"| stub | 0.00% (0/{n}) |" in p.stdout,
             "evaluate --jobs 2 on the made tasks: gold passes all, stub none, one table", p.stdout)
    per_job = [len(results(os.path.join(par, "jobs", str(k)))) for k in range(2)]
    ck.check(sum(per_job) == 2 * n and min(per_job) > 0, "--jobs 2: the pairs are split over both jobs", str(per_job))
    ck.check(tree_hashes(repo) == before, "--jobs 2: every repository file is as it was")
    p = run_ok(binary, ["evaluate", made, "--methods", "gold,stub", "--jobs", "3", "--out", par])
    ck.check(p.stderr.count("0 result(s)") == 3 and f"({n}/{n})" in p.stdout,
             "re-run with --jobs 3 resumes from the 2 jobs' results: nothing runs again", tail(p.stderr))
    bare = os.path.join(work, "no-tests")
    shutil.copytree(os.path.join(repo, "colorama"), os.path.join(bare, "colorama"),
                    ignore=shutil.ignore_patterns("tests", "__pycache__"))
    p = run(binary, ["make-tasks", bare, "--out", os.path.join(work, "none.jsonl")])
    ck.check(p.returncode == 3 and "no test files" in p.stderr, "a repository without tests: exit 3, says so", tail(p.stderr))


def kill_mid_task(ck, binary, repo, work, sig, before):
    tasks = os.path.join(work, f"slow-{sig}.jsonl")
    write_tasks(tasks, repo, f"{PY} -c 'import time; time.sleep(120)' {MARKER}")
    out = os.path.join(work, f"out-kill-{sig}")
    target = os.path.join(repo, "colorama", "ansi.py")
    with open(target, "rb") as f:
        original = f.read()
    p = subprocess.Popen([binary, "evaluate", tasks, "--methods", "stub", "--out", out, "-q"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 120
    edited = False
    while time.time() < deadline and not sleeping_tests():
        with open(target, "rb") as f:
            edited |= f.read() != original
        time.sleep(0.05)
    if not sleeping_tests():
        p.kill()
        raise Failure("the test command never started: " + tail(p.stderr.read().decode()))
    with open(target, "rb") as f:
        edited |= f.read() != original
    ck.check(not edited, f"signal {sig}: the user's target file was never edited while the stub was tested")
    p.send_signal(sig)
    p.wait(timeout=60)
    ck.check(tree_hashes(repo) == before, f"signal {sig} mid-task: every repository file is as it was")
    if sig == signal.SIGINT:
        ck.check(p.returncode == 130, "SIGINT: exit code 130", f"got {p.returncode}: {tail(p.stderr.read().decode())}")
    deadline = time.time() + 10
    while time.time() < deadline and sleeping_tests():
        time.sleep(0.1)
    leftover = sleeping_tests()
    ck.check(not leftover, f"signal {sig}: the test's processes are gone", " ".join(leftover))


def scheduler_shards(ck, binary, tasks, work):
    """--shard from a Slurm array's or a Kubernetes Indexed Job's variables, one folder per shard, `table` on the
    parent folder equal to a local run's table (the real Slurm cluster: slurm_array.py)."""
    local = os.path.join(work, "sched-local")
    want = run_ok(binary, ["evaluate", tasks, "--methods", "gold,stub", "--out", local, "-q"]).stdout
    k8s = os.path.join(work, "sched-k8s")
    for i in range(2):
        p = run_ok(binary, ["evaluate", tasks, "--methods", "gold,stub", "--out", k8s],
                   env={"JOB_COMPLETION_INDEX": str(i), "REPOCTX_SHARD_COUNT": "2"})
        ck.check(f"shard {i}/2 from JOB_COMPLETION_INDEX={i} of 2" in p.stderr,
                 f"Indexed Job pod {i}: says which shard it runs and why", tail(p.stderr))
    ck.check(sorted(os.listdir(k8s)) == ["shard-0-of-2", "shard-1-of-2"], "one folder per shard",
             str(os.listdir(k8s)))
    got = run_ok(binary, ["table", k8s]).stdout
    ck.check(got == want, "Indexed Job shards: `table` of the parent folder == the local run's table", got + want)
    slurm = os.path.join(work, "sched-slurm")
    for task_id in (4, 5):  # sbatch --array=4-5: shards 0 and 1
        run_ok(binary, ["evaluate", tasks, "--methods", "gold,stub", "--out", slurm, "-q"],
               env={"SLURM_ARRAY_TASK_ID": str(task_id), "SLURM_ARRAY_TASK_COUNT": "2", "SLURM_ARRAY_TASK_MIN": "4"})
    ck.check([len(results(os.path.join(slurm, f"shard-{i}-of-2"))) for i in range(2)] == [2, 2],
             "Slurm array 4-5: task 4 is shard 0, task 5 shard 1, two results each")
    ck.check(run_ok(binary, ["table", slurm]).stdout == want, "Slurm shards: merged table == the local run's table")
    p = run(binary, ["evaluate", tasks, "--out", slurm], env={"JOB_COMPLETION_INDEX": "0"})
    ck.check(p.returncode == 2 and "REPOCTX_SHARD_COUNT" in p.stderr,
             "Indexed Job without a count: usage error naming --shard-count / REPOCTX_SHARD_COUNT", tail(p.stderr))
    p = run(binary, ["evaluate", tasks, "--out", slurm],
            env={"SLURM_ARRAY_TASK_ID": "7", "SLURM_ARRAY_TASK_COUNT": "3", "SLURM_ARRAY_TASK_MIN": "1"})
    ck.check(p.returncode == 2 and "--array=0-2" in p.stderr, "a non-contiguous Slurm array: usage error", tail(p.stderr))
    # A re-submission with another count resumes from the earlier shards' results: nothing runs again.
    p = run_ok(binary, ["evaluate", tasks, "--methods", "gold,stub", "--out", k8s],
               env={"JOB_COMPLETION_INDEX": "0", "REPOCTX_SHARD_COUNT": "1"})
    ck.check("0 result(s)" in p.stderr, "a re-submitted array with another count skips what other shards finished",
             tail(p.stderr))


PROCEDURAL_BOUNDS = ["max_context_functions=2", "max_steps=2", "description_chars=40", "snippet_chars=60",
                     "decompose_tokens=160", "judge_tokens=160", "agent_tokens=160", "projection_tokens=8",
                     "max_rounds=1", "agent_budget=1"]


def projagent_benchmark(ck, binary, repo, work, tasks, model, before):
    """ProjAgent over a task file whose two tasks share colorama/ansi.py: every task's target is out of
    the other's context pools (the trace says so, and no context names it), the function selection counts
    both, and the offline stage is computed once for the benchmark and reused by the second task."""
    out = os.path.join(work, "out-projagent")
    args = ["evaluate", tasks, "--methods", "projagent", "--out", out, "--model", model, "--max-tokens", "48",
            "--max-rounds", "1", "--cache", os.path.join(work, "llm.db"), "--timeout", "120"]
    for p in PROCEDURAL_BOUNDS:
        args += ["--param", p]
    p = run(binary, args, timeout=900)
    ck.check(p.returncode == 0, "projagent over the benchmark: the runner completes", tail(p.stderr))
    if p.returncode != 0:
        return
    targets = {"colorama/ansi.py::code_to_chars", "colorama/ansi.py::AnsiCodes.__init__"}
    traces = {}
    for name in os.listdir(os.path.join(out, "artifacts", "projagent")):
        with open(os.path.join(out, "artifacts", "projagent", name)) as f:
            art = json.load(f)
        traces[art["trace"]["target"]] = art["trace"]
    ck.check(set(traces) == targets, "projagent: one trace per task", str(list(traces)))
    order = [json.loads(l)["task"] for l in open(os.path.join(out, "results.jsonl"))]
    for target, t in traces.items():
        other = (targets - {target}).pop()
        ck.check(t.get("withheld") == [other], f"{target}: the trace names the other task's target",
                 json.dumps(t.get("withheld")))
        ck.check(t.get("withheld_in_context") == [], f"{target}: no prompt context is another task's target",
                 json.dumps(t.get("withheld_in_context")))
        proc = t.get("procedural", {})
        named = set()
        for r in proc.get("rounds", []):
            for ts in r.get("target_steps", []):
                named |= {x["function"] for key in ["initial_seeds", "verification"] for x in ts.get(key, [])
                          if x.get("same_operation", x.get("similar"))}
                named |= {x["function"] for x in ts.get("proposals", []) if x.get("outcome") == "accepted"}
        named |= {c["title"] for c in t.get("prompt_contexts", [])}
        ck.check(other not in named and target not in named, f"{target}: no procedural or prompt context is a target",
                 str(sorted(named))[:300])
        decs = [d["function"] for d in proc.get("offline", {}).get("decompositions", [])]
        ck.check(not (set(decs) & targets), f"{target}: neither target is decomposed as context", str(decs))
        ck.check(proc.get("withheld") == [other], f"{target}: the procedural trace excludes the other target")
    first, second = [traces[tid.split("::", 1)[1]] for tid in order] if len(order) == 2 else (None, None)
    if first and second:
        ck.check(first["procedural"]["offline"]["reused"] is False and second["procedural"]["offline"]["reused"] is True
                 and second["procedural"]["llm_usage_by_stage"]["offline"]["total"]["calls"] == 0,
                 "the offline stage is computed for the first task and reused by the second (0 calls)",
                 json.dumps([first["procedural"]["offline"]["reused"], second["procedural"]["offline"]["reused"]]))
        ck.check(first["procedural"]["offline"]["key"] == second["procedural"]["offline"]["key"],
                 "one offline artifact for the benchmark")
    sel = traces["colorama/ansi.py::code_to_chars"]["procedural"]["offline"]["function_selection"]
    ck.check(sel[:1] == ["colorama/ansi.py"], "function selection ranks the file holding both targets first", str(sel))
    ck.check(tree_hashes(repo) == before, "projagent: every repository file is as it was")


def repocod_published_schema(ck, binary, repo, work):
    """A row as the REPOCOD dataset publishes it: function_name of two components at most, the reference
    definition in full_function, and relevant tests as a file of pytest node ids inside REPOCOD's image,
    found here under --test-cases-dir; exactly those tests run, without -x unless asked."""
    cases = os.path.join(work, "target_test_cases")
    os.makedirs(cases, exist_ok=True)
    ids = ["colorama/tests/ansi_test.py::AnsiTest::testForeAttributes",
           "colorama/tests/ansi_test.py::AnsiTest::testBackAttributes"]
    with open(os.path.join(cases, "failed_tests_code_to_chars.txt"), "w") as f:
        f.write("\n".join(ids) + "\n")
    row = {"repository": "colorama", "repo_id": "0", "target_module_path": "colorama/ansi.py",
           "prompt": "def code_to_chars(code):\n",
           "relevant_test_path": "/usr/src/app/target_test_cases/failed_tests_code_to_chars.txt",
           "full_function": "def code_to_chars(code):\n    return CSI + str(code) + 'm'\n",
           "function_name": "code_to_chars"}
    tasks = os.path.join(work, "repocod-published.jsonl")
    with open(tasks, "w") as f:
        f.write(json.dumps(row) + "\n")
    out = os.path.join(work, "out-repocod-published")
    tmpl = f"{PY} -m pytest -q -p no:cacheprovider --continue-on-collection-errors {{tests}}"
    p = run(binary, ["evaluate", tasks, "--methods", "gold,stub", "--out", out, "--repo", f"colorama={repo}",
                     "--test-template", tmpl, "--test-cases-dir", cases, "-q"])
    r = {x["method"]: x for x in results(out)} if p.returncode == 0 else {}
    gold, stub = r.get("gold", {}), r.get("stub", {})
    ck.check(gold.get("passed") is True and stub.get("passed") is False,
             "REPOCOD's published row: its relevant-tests file is read, gold passes and the stub fails",
             tail(p.stderr) + json.dumps(r)[:600])
    cmd = gold.get("test_command", "")
    ck.check(all(i in cmd for i in ids) and " -x" not in cmd and "ansi_test.py " not in cmd + " ",
             "exactly the listed node ids run, without -x", cmd)
    ck.check(gold.get("target") == "colorama/ansi.py::code_to_chars" and gold.get("target_resolved_by") == "qualname",
             "the result names the definition the task resolved to and how", json.dumps(gold)[:400])
    out2 = os.path.join(work, "out-repocod-early")
    p = run(binary, ["evaluate", tasks, "--methods", "gold", "--out", out2, "--repo", f"colorama={repo}",
                     "--test-template", tmpl, "--test-cases-dir", cases, "--early-stop", "-q"])
    cmd = results(out2)[0].get("test_command", "") if p.returncode == 0 else ""
    ck.check(" -x " in cmd and cmd.index(" -x ") < cmd.index(ids[0]), "--early-stop adds -x before the tests",
             cmd + tail(p.stderr))
    p = run(binary, ["evaluate", tasks, "--methods", "gold", "--out", out + "-nocases", "--repo", f"colorama={repo}"])
    ck.check(p.returncode == 3 and "--test-cases-dir" in p.stderr and "failed_tests_code_to_chars.txt" in p.stderr,
             "a relevant-tests file that is not here: exit 3 naming it and the option to pass", tail(p.stderr))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repoctx", required=True)
    ap.add_argument("--package", default="/usr/lib/python3/dist-packages/colorama")
    ap.add_argument("--tiny-model", action="store_true", help="also run generation methods with the tiny random model")
    a = ap.parse_args()
    ck = Checker()
    if not os.path.isdir(a.package):
        raise Failure(f"{a.package} is missing: run scripts/setup.sh --python-libs (python3-colorama)")
    with TempDir("repoctx-runner-e2e-") as work:
        repo = os.path.join(work, "repo")
        shutil.copytree(a.package, os.path.join(repo, "colorama"), ignore=shutil.ignore_patterns("__pycache__"))
        before = tree_hashes(repo)
        db = ["--db", os.path.join(work, "index.db")]
        tasks = os.path.join(work, "tasks.jsonl")
        test = f"{PY} -m pytest -q -x -p no:cacheprovider colorama/tests/ansi_test.py"
        write_tasks(tasks, repo, test)
        out = os.path.join(work, "out")
        p = run_ok(a.repoctx, ["evaluate", tasks, "--methods", "gold,stub", "--out", out, "--timeout", "120"])
        rs = {(r["task"].split("::")[-1], r["method"]): r for r in results(out)}
        ck.check(len(rs) == 4, "4 results (2 tasks x gold, stub)", str(list(rs)))
        for fn in ["code_to_chars", "AnsiCodes.__init__"]:
            ck.check(rs.get((fn, "gold"), {}).get("passed") is True, f"gold {fn}: the real body passes its tests",
                     tail(json.dumps(rs.get((fn, "gold")))))
            ck.check(rs.get((fn, "stub"), {}).get("passed") is False, f"stub {fn}: raise NotImplementedError fails them")
        ck.check("| gold | 100.00% (2/2) | 100.00% (2/2) |" in p.stdout, "table: gold 100%", p.stdout)
        ck.check("| stub | 0.00% (0/2) | 0.00% (0/2) |" in p.stdout, "table: stub 0%", p.stdout)
        ck.check(os.path.exists(os.path.join(out, "table.csv")), "table.csv written")
        ck.check(tree_hashes(repo) == before, "after the run every repository file is as it was")
        p = run_ok(a.repoctx, ["evaluate", tasks, "--methods", "gold,stub", "--out", out])
        ck.check(len(results(out)) == 4 and "0 result(s)" in p.stderr, "re-run resumes: nothing is run again", tail(p.stderr))
        # Shards: 1/2 holds the second task only; `table` merges shard folders.
        s0, s1 = os.path.join(work, "s0"), os.path.join(work, "s1")
        run_ok(a.repoctx, ["evaluate", tasks, "--methods", "gold", "--out", s1, "--shard", "1/2", "-q"])
        ck.check([r["task"].split("::")[-1] for r in results(s1)] == ["AnsiCodes.__init__"], "shard 1/2 runs task 2 only")
        run_ok(a.repoctx, ["evaluate", tasks, "--methods", "gold", "--out", s0, "--shard", "0/2", "-q"])
        p = run_ok(a.repoctx, ["table", s0, s1, "--csv"])
        ck.check("gold,all,2,2,1.0000" in p.stdout, "table merges shards", p.stdout)
        p = run(a.repoctx, ["evaluate", tasks, "--methods", "gold", "--out", s0, "--shard", "2/2"])
        ck.check(p.returncode == 2 and "--shard" in p.stderr, "bad shard: usage error", tail(p.stderr))
        p = run(a.repoctx, ["evaluate", tasks, "--methods", "nope", "--out", s0])
        ck.check(p.returncode == 2 and "method 'nope'" in p.stderr, "unknown method: usage error naming it")
        p = run(a.repoctx, ["evaluate", tasks, "--methods", "specagent", "--out", os.path.join(work, "out-spec")])
        ck.check(p.returncode == 2 and "cannot be reproduced" in p.stderr and "DEVIATIONS" in p.stderr,
                 "specagent: a usage error that says why it cannot be reproduced", tail(p.stderr))
        # REPOCOD's task format.
        rc = os.path.join(work, "repocod.json")
        with open(rc, "w") as f:
            json.dump([{"repository": "colorama", "repo_id": 7, "target_module_path": "colorama/ansi.py",
                        "prompt": "def code_to_chars(code):", "relavent_test_path": ["colorama/tests/ansi_test.py"],
                        "full_function": "def code_to_chars(code):\n    return CSI + str(code) + 'm'\n",
                        "function_name": "code_to_chars"}], f)
        orc = os.path.join(work, "out-repocod")
        p = run_ok(a.repoctx, ["evaluate", rc, "--methods", "gold", "--out", orc, "--repo", f"colorama={repo}",
                               "--test-template", f"{PY} -m pytest -q -x -p no:cacheprovider {{tests}}", "-q"])
        r = results(orc)
        ck.check(len(r) == 1 and r[0]["passed"] and r[0]["task"] == "colorama/7", "REPOCOD task loads and passes", tail(str(r)))
        p = run(a.repoctx, ["evaluate", rc, "--methods", "gold", "--out", orc + "2"])
        ck.check(p.returncode == 2 and "--repo colorama=PATH" in p.stderr, "REPOCOD repository without a path: says what to pass")
        repocod_published_schema(ck, a.repoctx, repo, work)
        # The tiny model: gibberish must be reported as failures, with the file restored.
        if a.tiny_model:
            model = os.path.join(work, "tiny.gguf")
            run_ok(a.repoctx, ["make-test-model", "--out", model])
            og = os.path.join(work, "out-tiny")
            p = run(a.repoctx, ["evaluate", tasks, "--methods", "projagent-no-procedural,sparse,same-file", "--out", og,
                                "--model", model, "--max-tokens", "48", "--max-rounds", "1", "--cache",
                                os.path.join(work, "llm.db"), "--timeout", "120"], timeout=900)
            ck.check(p.returncode == 0, "tiny model: the runner completes", tail(p.stderr))
            r = results(og)
            ck.check(len(r) == 6 and all(x["passed"] is False for x in r), "tiny model: 6 results, all reported failed",
                     tail(json.dumps(r)))
            ck.check(all("llm_calls" in x for x in r), "tiny model: every result counts its LLM calls")
            ck.check(tree_hashes(repo) == before, "tiny model: every repository file is as it was")
            arts = os.path.join(og, "artifacts", "sparse")
            ck.check(os.path.isdir(arts) and len(os.listdir(arts)) == 2, "artifacts (diff + trace) per task")
            projagent_benchmark(ck, a.repoctx, repo, work, tasks, model, before)
        scheduler_shards(ck, a.repoctx, tasks, work)
        make_tasks(ck, a.repoctx, repo, work, before)
        kill_mid_task(ck, a.repoctx, repo, work, signal.SIGKILL, before)
        kill_mid_task(ck, a.repoctx, repo, work, signal.SIGINT, before)
    return ck.finish("runner_e2e")


if __name__ == "__main__":
    sys.exit(main_wrapper("runner_e2e", main))
