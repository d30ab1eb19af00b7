#!/usr/bin/env python3
"""`repoctx serve` with several repositories that have no index yet: when each is ready and the server's peak
memory.

It starts the server (argv, no shell) with REPOCTX_INDEX_DIR set to a new empty folder, so every repository is
built from scratch once the server listens, polls /v1/health until none is "loading", then stops the server
with SIGTERM and reads its peak resident memory (VmHWM of /proc, sampled while it runs). Run it with two
binaries to compare them on the same repositories.

    bench/serve_first_builds.py --binary build/bin/repoctx /usr/lib/python3/dist-packages/sympy \\
        /usr/lib/python3/dist-packages/astropy
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request


def vm_hwm_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--binary", required=True)
    ap.add_argument("repos", nargs="+")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="repoctx-first-builds-") as work:
        ready = os.path.join(work, "ready.json")
        env = dict(os.environ, REPOCTX_INDEX_DIR=os.path.join(work, "indexes"))
        start = time.time()
        log = open(os.path.join(work, "serve.log"), "w")
        proc = subprocess.Popen([a.binary, "serve", *a.repos, "--port", "0", "--ready-file", ready, "--no-watch",
                                 "--no-warm", "-q"], env=env, stderr=log)
        peak = 0
        try:
            while not os.path.exists(ready):
                if proc.poll() is not None:
                    log.close()
                    sys.exit(f"serve exited {proc.returncode} before listening: "
                             f"{open(os.path.join(work, 'serve.log')).read()[-2000:]}")
                time.sleep(0.02)
            port = json.load(open(ready))["port"]
            while True:
                peak = max(peak, vm_hwm_kb(proc.pid))
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/health", timeout=30) as r:
                    health = json.load(r)
                if all(x["state"] != "loading" for x in health["repos"]):
                    break
                time.sleep(0.1)
            all_ready = time.time() - start
            peak = max(peak, vm_hwm_kb(proc.pid))
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=120)
            log.close()
    print(json.dumps({
        "all_ready_s": round(all_ready, 2),
        "peak_rss_mb": round(peak / 1024, 1),
        "repos": {x["name"]: {"state": x["state"], "ready_after_s": round(x["ready_after_s"], 2),
                              "build_wait_s": round(x.get("build_wait_s", 0), 2)} for x in health["repos"]},
    }))


if __name__ == "__main__":
    main()
