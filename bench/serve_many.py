#!/usr/bin/env python3
"""`repoctx serve` with several large repositories: each alone, then all in one server.

For each configuration it starts the server (argv, no shell), and records from the start: when it listens
(its --ready-file), when each repository gives its first answer (a sparse query, then a structural
request for one of its functions; one client thread per repository, retrying while the server answers
503 "loading": each repository loads on its own thread after the server listens), when /v1/health says
every repository warm, and the server's resident memory once warm (VmRSS) and at its peak (VmHWM). Every repository must already be indexed at its default
location (`repoctx index PATH`); the server loads with --no-refresh --no-watch, so the figures are loading,
not indexing.

    bench/serve_many.py --binary build/bin/repoctx std=/usr/lib/python3.11 \\
        sympy=/usr/lib/python3/dist-packages/sympy dp=/usr/lib/python3/dist-packages
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request


def post(port, path, body):
    """The answer, once the repository has loaded (503 "loading" is retried after its Retry-After)."""
    while True:
        req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=600) as r:
                return json.load(r)
        except urllib.error.HTTPError as e:
            if e.code != 503 or json.load(e).get("error", {}).get("code") != "loading":
                raise
            time.sleep(0.02)


def get(port, path):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=60) as r:
        return json.load(r)


def memory_kb(pid):
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                fields[key] = int(value.split()[0])
    return fields


def run(binary, repos, query, timeout):
    with tempfile.TemporaryDirectory() as tmp:
        ready = os.path.join(tmp, "ready.json")
        argv = [binary, "serve", *[f"{n}={p}" for n, p in repos], "--port", "0", "--ready-file", ready,
                "--no-refresh", "--no-watch", "-q"]
        t0 = time.monotonic()
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            while not os.path.exists(ready) or os.path.getsize(ready) == 0:
                if proc.poll() is not None:
                    raise SystemExit(f"serve exited {proc.returncode}: {proc.stderr.read().decode()[-2000:]}")
                if time.monotonic() - t0 > timeout:
                    raise SystemExit("serve did not listen in time")
                time.sleep(0.01)
            t_listen = time.monotonic() - t0
            port = json.load(open(ready))["port"]
            first, errors = {}, []

            def first_answers(name):
                try:
                    r = post(port, "/v1/retrieve", {"repo": name, "query": query, "k": 10, "strategy": "sparse"})
                    if not r.get("results"):
                        raise RuntimeError(f"{name}: no sparse result for '{query}'")
                    t_sparse = time.monotonic() - t0
                    target = r["results"][0]["target"]
                    r = post(port, "/v1/retrieve", {"repo": name, "target": target, "k": 10})
                    if "results" not in r:
                        raise RuntimeError(f"{name}: no structural answer for {target}: {r}")
                    first[name] = (t_sparse, time.monotonic() - t0)
                except Exception as e:  # reported by the main thread
                    errors.append(f"{name}: {e}")

            clients = [threading.Thread(target=first_answers, args=(name,)) for name, _ in repos]
            for c in clients:
                c.start()
            for c in clients:
                c.join()
            if errors:
                raise SystemExit("; ".join(errors))
            first = {name: first[name] for name, _ in repos}
            while not all(x.get("warm") for x in get(port, "/v1/health")["repos"]):
                if time.monotonic() - t0 > timeout:
                    raise SystemExit("the repositories were not warm in time")
                time.sleep(0.05)
            t_warm = time.monotonic() - t0
            mem = memory_kb(proc.pid)
        finally:
            proc.terminate()
            proc.wait(timeout=60)
        return {"listen_s": t_listen, "first": first, "warm_s": t_warm, "rss_mb": mem["VmRSS"] / 1024,
                "peak_mb": mem["VmHWM"] / 1024}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("repos", nargs="+", help="NAME=PATH, each indexed at its default location")
    ap.add_argument("--binary", default="build/bin/repoctx")
    ap.add_argument("--query", default="parse a file and return its tokens")
    ap.add_argument("--timeout", type=float, default=1200)
    a = ap.parse_args()
    repos = [tuple(s.split("=", 1)) for s in a.repos]
    rows = [(name, run(a.binary, [(name, path)], a.query, a.timeout)) for name, path in repos]
    if len(repos) > 1:
        rows.append(("all in one server", run(a.binary, repos, a.query, a.timeout)))
    load = os.getloadavg()[0]
    print(f"(load average {load:.1f} at the end, {os.cpu_count()} cores)\n")
    print("| served | listening | first sparse answer | first structural answer | all warm | RSS warm | peak RSS |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for label, r in rows:
        sparse = ", ".join(f"{n} {v[0]:.2f} s" for n, v in r["first"].items())
        structural = ", ".join(f"{n} {v[1]:.2f} s" for n, v in r["first"].items())
        print(f"| {label} | {r['listen_s']:.2f} s | {sparse} | {structural} | {r['warm_s']:.2f} s "
              f"| {r['rss_mb']:.0f} MB | {r['peak_mb']:.0f} MB |")
    json.dump(rows, sys.stderr)
    print(file=sys.stderr)


if __name__ == "__main__":
    main()
