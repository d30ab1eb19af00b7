#!/usr/bin/env python3
"""Every command of the README's AlignCoder block runs as written, with the tiny model in place of a real one.

    readme_completion.py --repoctx BIN --llama-server BIN --readme README.md PKGS

The block (the fenced code after "AlignCoder and its baselines") is read from the README itself, so a
command added there is run here. Each command is matched by its subcommand to the placeholders that stand
for what a user brings (REPO, a GGUF path, an endpoint, CrossCodeEval's files) and to sizes that keep the
run short (--max, --epochs, --samples, --k); a command this test does not know fails it, as does a
placeholder left in a command after the substitutions. Checks: exit 0 and a non-empty result (the output,
or the file/folder the command writes). The retrieval commands also run without --model-file: the built-in
AlignRetriever and RLCoder models answer.
"""
import argparse
import json
import os
import re
import shlex
import sys

from _util import Checker, Failure, TempDir, main_wrapper, run, start_llama_server, tail

PLACEHOLDERS = ["REPO", "OTHER", "pkg/mod.py", "qwen2.5-coder-1.5b.gguf", "model.gguf", "gpu1",
                "cceval_python.jsonl", "crosscodeeval_repos/", "deepseek-coder-1.3b-base"]


def readme_block(path):
    text = open(path).read()
    at = text.find("AlignCoder and its baselines")
    if at < 0:
        raise Failure("README has no 'AlignCoder and its baselines' block")
    start = text.index("```sh", at) + len("```sh")
    end = text.index("```", start)
    cmds, cur = [], ""
    for raw in text[start:end].splitlines():
        line = raw.split("  #")[0].rstrip() if "  #" in raw else raw.rstrip()
        if line.strip().startswith("#") or not line.strip():
            continue
        if cur:
            cur += " " + line.strip()
        else:
            cur = line.strip()
        if cur.endswith("\\"):
            cur = cur[:-1].rstrip()
            continue
        cmds.append(cur)
        cur = ""
    return cmds


def main(c, args):
    binary = os.path.abspath(args.repoctx)
    pkgs = args.pkgs
    repo = os.path.join(pkgs, "colorama")
    other = os.path.join(pkgs, "markupsafe")
    cmds = readme_block(args.readme)
    c.check(len(cmds) >= 10, f"the README block holds the completion commands ({len(cmds)})")
    with TempDir("readme-completion-") as work:
        env = dict(os.environ, REPOCTX_CACHE_DIR=os.path.join(work, "cache"))
        model = os.path.join(work, "tiny.gguf")
        p = run(binary, ["make-test-model", "--out", model, "--ascii-only"], env=env)
        if p.returncode != 0:
            raise Failure(f"make-test-model failed: {tail(p.stderr)}")
        repos_dir = os.path.join(work, "cceval_repos")
        os.makedirs(repos_dir)
        os.symlink(repo, os.path.join(repos_dir, "colorama"))
        cceval = os.path.join(work, "cceval.jsonl")
        src = open(os.path.join(repo, "ansitowin32.py")).read().splitlines(keepends=True)
        # The README's cursor (--line 120 --column 8) on a line of this file that has code past column 8.
        cursor_line = next(i + 1 for i in range(100, len(src)) if src[i].startswith("        ") and src[i].strip())
        with open(cceval, "w") as f:
            for i, line_no in enumerate((60, 120)):
                prompt = "".join(src[:line_no])
                f.write(json.dumps({"prompt": prompt, "groundtruth": src[line_no].strip() or "pass",
                                    "metadata": {"task_id": f"colorama/{i}", "repository": "colorama",
                                                 "file": "ansitowin32.py", "context_start_lineno": 0}}) + "\n")
        with start_llama_server(args.llama_server, model, os.path.join(work, "server.log")) as srv:
            subs = [
                ("$B ", ""), ("/usr/lib/python3/dist-packages/flask", repo),
                ("/usr/lib/python3/dist-packages/{sympy,astropy}", repo),
                ("/usr/lib/python3/dist-packages/sympy", repo),
                ("REPO...", repo), ("--val-repo OTHER", "--val-repo " + other), ("REPO", repo),
                ("pkg/mod.py", "ansitowin32.py"), ("--line 120", f"--line {cursor_line}"), ("qwen2.5-coder-1.5b.gguf", model), ("model.gguf", model),
                ("http://gpu1:8000/v1", srv.endpoint), ("deepseek-coder-1.3b-base", "tiny"),
                ("cceval_python.jsonl", cceval), ("crosscodeeval_repos/", repos_dir + "/"),
                ("--max 200", "--max 4"), ("--epochs 20", "--epochs 1"), ("--k 1..6", "--k 1..2"),
            ]
            small_gen = {"--max-tokens": "8", "--samples": "2"}
            small_train = {"--epochs": "1", "--samples": "24", "--val-samples": "12", "--candidates-per-query": "5",
                           "--ctx": "8192"}
            small_params = ["--param", "sample_tokens=8", "--param", "generation_tokens=8",
                            "--param", "context_chars=1500", "--param", "code_chars=1500"]

            def with_opts(argv, opts):
                """argv with each option set to the small value: replaced where the README sets it."""
                argv = list(argv)
                for k, v in opts.items():
                    if k == "--ctx" and "--model" not in argv:
                        continue
                    if k in argv:
                        argv[argv.index(k) + 1] = v
                    else:
                        argv += [k, v]
                return argv
            ran = set()
            for cmd in cmds:
                text = cmd
                for a, b in subs:
                    text = text.replace(a, b)
                argv = shlex.split(text)
                left = [ph for ph in PLACEHOLDERS if any(ph in a for a in argv)]
                if left:
                    raise Failure(f"README command keeps a placeholder this test cannot fill {left}: {cmd}")
                sub = argv[0]
                out_check = None
                if sub == "make-completion-tasks":
                    out_check = argv[argv.index("--out") + 1]
                elif sub == "complete":
                    argv = with_opts(argv, dict(small_gen, **{"--ctx": "8192"})) + small_params
                elif sub == "complete-eval":
                    argv = with_opts(argv, small_gen) + small_params
                    out_check = argv[argv.index("--out") + 1]
                    if "--shard" in argv:  # the other half, for complete-table's second folder
                        other_half = list(argv)
                        other_half[other_half.index("--shard") + 1] = "1/2"
                        other_half[other_half.index("--out") + 1] = "res-shard1/"
                        p = run(binary, other_half, env=env, timeout=1200)
                        c.check(p.returncode == 0, "complete-eval's other shard runs", tail(p.stderr))
                elif sub == "train-aligncoder":
                    argv = with_opts(argv, small_train) + small_params[4:]
                    out_check = argv[argv.index("--out") + 1]
                elif sub == "complete-table":
                    pass
                elif sub in ("retrieve", "complete-retrieval-eval", "bench-completion"):
                    pass
                else:
                    raise Failure(f"README completion command not covered by this test: {cmd}")
                p = run(binary, argv, env=env, timeout=1200)
                c.check(p.returncode == 0, f"exit 0: {cmd}", tail(p.stderr))
                if out_check:
                    ok = os.path.exists(out_check) and (os.path.isdir(out_check) and os.listdir(out_check)
                                                        or os.path.isfile(out_check) and os.path.getsize(out_check))
                    c.check(bool(ok), f"{out_check} written and not empty: {cmd}")
                else:
                    c.check(len(p.stdout.strip()) > 0, f"output not empty: {cmd}", tail(p.stderr))
                ran.add(sub)
            for need in ("complete", "complete-eval", "train-aligncoder", "retrieve", "complete-retrieval-eval"):
                c.check(need in ran, f"the README block has a {need} command")
            # Out of the box: aligncoder and rlcoder answer with the built-in models (no --model-file).
            for strategy in ("aligncoder", "rlcoder"):
                argv = ["retrieve", repo, "--file", "ansitowin32.py", "--line", "120", "--strategy", strategy,
                        "--param", "candidates=none", "--json"]
                p = run(binary, argv, env=env)
                c.check(p.returncode == 0, f"{strategy} runs with its built-in model", tail(p.stderr))
                if p.returncode == 0:
                    hits = json.loads(p.stdout).get("results", [])
                    c.check(len(hits) > 0, f"{strategy} with its built-in model returns hits")
            p = run(binary, ["complete-retrieval-eval", "flask.jsonl", "--methods", "bm25,rlcoder,aligncoder,reacc",
                             "--json"], env=env)
            c.check(p.returncode == 0, "complete-retrieval-eval runs rlcoder and aligncoder built in", tail(p.stderr))
            if p.returncode == 0:
                rep = json.loads(p.stdout)
                c.check(any("BM25 half only" in n for n in rep.get("notes", [])),
                        "without an embedding model the reacc row says it is BM25 only")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--repoctx", required=True)
    ap.add_argument("--llama-server", required=True)
    ap.add_argument("--readme", required=True)
    ap.add_argument("pkgs")
    a = ap.parse_args()

    def body():
        c = Checker()
        cwd = os.getcwd()
        with TempDir("readme-cwd-") as d:
            os.chdir(d)  # the README's relative outputs (flask.jsonl, res/, align.json) land here
            try:
                main(c, a)
            finally:
                os.chdir(cwd)
        return c.finish("readme_completion")

    sys.exit(main_wrapper("readme_completion", body))
