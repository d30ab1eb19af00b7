#!/usr/bin/env python3
"""`repoctx serve` end to end on a copy of a Debian library, with real HTTP clients on 127.0.0.1.

    serve_http.py --repoctx BIN REPO

Checks: every endpoint answers what the CLI answers (retrieve: the same hits as `retrieve --json`); every bad
request gets a JSON error with a fitting status (malformed JSON, wrong types, unknown fields, strategies,
endpoints and repositories, wrong method, a body over the limit, paths outside the repository, a missing
target, a missing or wrong bearer token); a file edited while serving is seen (watcher) and readers under
load never see an error while the index is swapped; a client that disconnects mid-request and one that
sends half a body leave the server serving; a repository deleted while serving leaves the last index
serving and the health report saying so; SIGTERM during requests finishes them and exits 0, and the index
is consistent afterwards.
"""
import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import threading
import time
import urllib.error
import urllib.request

from _util import Checker, Failure, TempDir, main_wrapper, run, run_json, run_ok, tail

PROBE = "repoctx_watch_probe_function"


class Server:
    def __init__(self, binary, repos, work, extra=(), name="server", env=None, wait_loaded=True):
        self.ready = os.path.join(work, f"{name}.ready.json")
        self.log_path = os.path.join(work, f"{name}.log")
        self.log = open(self.log_path, "w")
        args = [binary, "serve", *repos, "--port", "0", "--ready-file", self.ready, *extra]
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=self.log, env=env)
        deadline = time.time() + 300
        while not os.path.exists(self.ready):
            if self.proc.poll() is not None:
                raise Failure(f"serve exited {self.proc.returncode} before listening: {tail(open(self.log_path).read())}")
            if time.time() > deadline:
                raise Failure("serve did not listen within 300 s")
            time.sleep(0.05)
        self.port = json.load(open(self.ready))["port"]
        self.base = f"http://127.0.0.1:{self.port}"
        extra = list(extra)
        self.auth = {"Authorization": f"Bearer {extra[extra.index('--token') + 1]}"} if "--token" in extra else {}
        if wait_loaded:
            self.wait_loaded(deadline)

    def health(self):
        st, h, _ = self.request("GET", "/v1/health", headers=self.auth)
        if st != 200:
            raise Failure(f"health answered {st}: {json.dumps(h)[:300]}")
        return {r["name"]: r for r in h["repos"]}

    def states(self):
        return {name: r["state"] for name, r in self.health().items()}

    def wait_loaded(self, deadline):
        """The server listens before its repositories have loaded (each on its own thread): wait for them."""
        while "loading" in self.states().values():
            if time.time() > deadline:
                raise Failure(f"serve's repositories did not load within 300 s: {self.states()}")
            time.sleep(0.05)

    def request(self, method, path, body=None, headers=None, raw=None, timeout=120):
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        hdrs = {"Content-Type": "application/json"} if method == "POST" else {}
        hdrs.update(headers or {})
        req = urllib.request.Request(self.base + path, data=data, method=method, headers=hdrs)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, json.loads(r.read() or b"null"), dict(r.headers)
        except urllib.error.HTTPError as e:
            text = e.read()
            try:
                return e.code, json.loads(text), dict(e.headers)
            except json.JSONDecodeError:
                return e.code, {"raw": text.decode(errors="replace")}, dict(e.headers)

    def post(self, path, body=None, **kw):
        return self.request("POST", path, body if body is not None else {}, **kw)

    def stop(self, sig=signal.SIGTERM, timeout=60):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return None


def is_error(ck, got, status, code, what, contains=None):
    st, body, _ = got
    err = body.get("error") if isinstance(body, dict) else None
    ok = st == status and isinstance(err, dict) and err.get("code") == code and err.get("status") == status
    if contains:
        ok = ok and contains in err.get("message", "")
    ck.check(ok, f"{what}: {status} {code}", f"got {st} {json.dumps(body)[:300]}")


def check_endpoints(ck, srv, binary, repo, db):
    st, h, _ = srv.request("GET", "/v1/health")
    ck.check(st == 200 and h["status"] == "ok" and h["repos"][0]["files"] > 10, "health lists the repository",
             json.dumps(h)[:300])
    deadline = time.time() + 120
    while time.time() < deadline and not h["repos"][0].get("warm"):
        time.sleep(0.2)
        st, h, _ = srv.request("GET", "/v1/health")
    ck.check(h["repos"][0].get("warm") is True, "the server warms its snapshot in the background (health: warm)",
             json.dumps(h)[:300])
    query = "register a url rule for a view function"
    st, r, _ = srv.post("/v1/retrieve", {"query": query, "strategy": "sparse", "k": 8})
    cli = run_json(binary, ["retrieve", repo, "--db", db, "--no-refresh", "--query", query, "-k", "8", "--json"])
    ck.check(st == 200 and [x["target"] for x in r["results"]] == [x["target"] for x in cli["results"]],
             "retrieve (sparse) returns the CLI's hits in the CLI's order",
             f"{[x.get('target') for x in r.get('results', [])]} vs {[x['target'] for x in cli['results']]}")
    target = "helpers.py::get_root_path"
    st, r, _ = srv.post("/v1/retrieve", {"target": target, "strategy": "structural", "k": 5, "with_text": True})
    ck.check(st == 200 and r["target"] == target and len(r["results"]) == 5 and all(x["text"] for x in r["results"]),
             "retrieve (structural, target, with_text)", json.dumps(r)[:300])
    st, r, _ = srv.post("/v1/symbols", {"name": "get_root_path"})
    ck.check(st == 200 and any(s["target"] == target for s in r), "symbols by name", json.dumps(r)[:200])
    st, r, _ = srv.post("/v1/files", {})
    ck.check(st == 200 and any(f["path"] == "helpers.py" for f in r), "files")
    st, r, _ = srv.post("/v1/snippets", {"file": "helpers.py"})
    ck.check(st == 200 and len(r) > 3 and r[0]["start_line"] >= 1, "snippets")
    st, r, _ = srv.post("/v1/read", {"path": "helpers.py", "start_line": 1, "end_line": 5})
    ck.check(st == 200 and "helpers.py (lines 1-5" in r["text"], "read a file range", json.dumps(r)[:200])
    st, r, _ = srv.post("/v1/grep", {"pattern": "def get_root_path"})
    ck.check(st == 200 and "helpers.py:" in r["text"], "grep", json.dumps(r)[:200])
    st, r, _ = srv.request("GET", "/v1/strategies")
    ck.check(st == 200 and {"sparse", "structural", "procedural"} <= {s["name"] for s in r}, "strategies")
    st, r, _ = srv.request("GET", "/v1/cache/stats")
    ck.check(st == 200 and "rows" in r, "cache stats", json.dumps(r)[:200])


def check_localize(ck, srv, binary, repo, db):
    """localize (the context-retrieval study, LLM-free study-bm25) answers what `repoctx localize` answers, and
    every response says what its scores mean with the CLI's own words."""
    request = "Blueprint url_prefix is ignored when registering a nested blueprint"
    st, r, _ = srv.post("/v1/localize", {"request": request, "strategy": "study-bm25"})
    cli = run_json(binary, ["localize", repo, "--db", db, "--no-refresh", "--query", request, "--json"])
    ranges = [(x["file"], x["start_line"], x["end_line"]) for x in r.get("results", [])] if st == 200 else []
    ck.check(st == 200 and ranges and ranges == [(x["file"], x["start_line"], x["end_line"]) for x in cli["results"]]
             and r["context_tokens"] == cli["context_tokens"] and r["stop_reason"] == cli["stop_reason"],
             "localize (study-bm25) returns the CLI's ranges, context tokens and stop reason",
             f"{json.dumps(r)[:300]} vs {json.dumps(cli)[:300]}")
    st, strategies, _ = srv.request("GET", "/v1/strategies")
    meaning = {s["name"]: s.get("score") for s in strategies} if st == 200 else {}
    ck.check(r.get("score") == meaning.get("study-bm25") == "BM25 score of the chunk",
             "localize says what its scores mean", json.dumps(r)[:200])
    st, loc, _ = srv.request("GET", "/v1/localize/strategies")
    ck.check(st == 200 and "study-bm25" in [s["name"] for s in loc] and "sparse" not in [s["name"] for s in loc],
             "localize strategies", json.dumps(loc)[:200])
    st, r, _ = srv.post("/v1/localize", {"request": request, "with_text": True, "params": {"context_tokens": 100}})
    # A budget of 100 tokens instead of 500: the last chunk counts only the part that fits the budget but is
    # gathered whole (the study's rule), so the context ends up between 100 and 100 + one chunk (< 300).
    ck.check(st == 200 and r["results"] and all(x.get("text") for x in r["results"]) and r["context_tokens"] < 300,
             "localize with_text and a study parameter (context_tokens)", json.dumps(r)[:300])
    for strategy, ask in (("sparse", ["--query", "url rule"]), ("structural", ["--target", "helpers.py::get_root_path"])):
        cli = run_json(binary, ["retrieve", repo, "--db", db, "--no-refresh", *ask, "-k", "2", "--strategy", strategy,
                                "--json"])
        st, r, _ = srv.post("/v1/retrieve", {ask[0][2:]: ask[1], "strategy": strategy, "k": 2})
        ck.check(st == 200 and r.get("score") == cli["score"] == meaning.get(strategy) and r["score"],
                 f"retrieve ({strategy}) says what its scores mean, as the CLI does", json.dumps(r)[:200])
    is_error(ck, srv.post("/v1/localize", {"request": request, "strategy": "sparse"}), 400, "bad_request",
             "localize with a retrieval strategy", "study-bm25")
    is_error(ck, srv.post("/v1/localize", {"strategy": "study-bm25"}), 400, "bad_request", "localize without a request",
             "request")
    is_error(ck, srv.post("/v1/localize", {"request": "x", "params": {"depth": 3}}), 400, "bad_request",
             "localize with an unknown study parameter", "depth")


def check_bad_requests(ck, srv):
    is_error(ck, srv.request("POST", "/v1/retrieve", raw=b'{"query": "x", '), 400, "bad_json", "malformed JSON")
    is_error(ck, srv.request("POST", "/v1/retrieve", raw=b'[1, 2]'), 400, "bad_json", "a JSON array body")
    is_error(ck, srv.post("/v1/retrieve", {"query": "x", "k": "ten"}), 400, "bad_request", "k as a string",
             "field 'k'")
    is_error(ck, srv.post("/v1/retrieve", {"query": "x", "k": 2.5}), 400, "bad_request", "k as a fraction")
    is_error(ck, srv.post("/v1/retrieve", {"query": "x", "colour": 1}), 400, "bad_request", "an unknown field",
             "unknown field 'colour'")
    is_error(ck, srv.post("/v1/retrieve", {"query": "x", "strategy": "telepathy"}), 400, "bad_request",
             "an unknown strategy", "sparse")
    is_error(ck, srv.post("/v1/retrieve", {}), 400, "bad_request", "neither target nor query")
    is_error(ck, srv.post("/v1/retrieve", {"target": "helpers.py::no_such_function"}), 404, "not_found",
             "a missing target")
    is_error(ck, srv.post("/v1/retrieve", {"query": "x", "repo": "nope"}), 404, "not_found", "an unknown repository")
    is_error(ck, srv.post("/v1/teleport", {}), 404, "not_found", "an unknown endpoint", "/v1/retrieve")
    got = srv.request("GET", "/v1/retrieve")
    is_error(ck, got, 405, "method_not_allowed", "GET on a POST endpoint")
    ck.check(got[2].get("Allow") == "POST", "405 says which method (Allow)")
    is_error(ck, srv.post("/v1/retrieve", {"query": "x" * 10000}), 413, "too_large", "a body over --max-body-bytes")
    for path in ["../../../etc/passwd", "/etc/passwd", "~/.ssh/id_rsa"]:
        is_error(ck, srv.post("/v1/read", {"path": path}), 400, "bad_input", f"read outside the repository ({path})",
                 "outside the repository" if not path.startswith("..") else "leaves the repository")
    is_error(ck, srv.post("/v1/grep", {"pattern": "x", "path": "/etc"}), 400, "bad_input", "grep outside the repository")
    is_error(ck, srv.post("/v1/grep", {"pattern": "(unclosed"}), 400, "bad_input", "an invalid regular expression")
    is_error(ck, srv.post("/v1/read", {"path": "helpers.py", "start_line": 0}), 400, "bad_request",
             "start_line 0")


def check_token(ck, binary, repo, db, work):
    srv = Server(binary, [repo], work, ["--db", db, "--no-refresh", "--no-watch", "--no-warm", "--token", "s3cret"],
                 "token")
    try:
        is_error(ck, srv.request("GET", "/v1/health"), 401, "unauthorized", "no bearer token")
        is_error(ck, srv.request("GET", "/v1/health", headers={"Authorization": "Bearer wrong"}), 401,
                 "unauthorized", "a wrong bearer token")
        st, h, _ = srv.request("GET", "/v1/health", headers={"Authorization": "Bearer s3cret"})
        ck.check(st == 200, "the right bearer token is accepted")
        time.sleep(1)
        st, h, _ = srv.request("GET", "/v1/health", headers={"Authorization": "Bearer s3cret"})
        ck.check(st == 200 and h["repos"][0]["warm"] is False, "--no-warm: nothing is warmed", json.dumps(h)[:300])
    finally:
        srv.stop()
    p = subprocess.run([binary, "serve", repo, "--db", db, "--host", "0.0.0.0", "--port", "0", "--no-refresh"],
                       capture_output=True, text=True, timeout=60)
    ck.check(p.returncode == 2 and "token" in p.stderr, "a non-local address without a token is refused (exit 2)",
             f"exit {p.returncode}: {tail(p.stderr)}")
    for args, code, what in [([os.path.join(work, "missing")], 3, "a missing repository"),
                             ([repo, "--port", "70000"], 2, "a port out of range")]:
        p = subprocess.run([binary, "serve", *args, "--db", db, "--no-refresh", "--no-watch"], capture_output=True,
                           text=True, timeout=60)
        ck.check(p.returncode == code, f"serve with {what} exits {code}", f"exit {p.returncode}: {tail(p.stderr)}")


def check_disconnects(ck, srv):
    # Half a body, then the client goes away.
    s = socket.create_connection(("127.0.0.1", srv.port))
    s.sendall(b"POST /v1/retrieve HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n"
              b'{"query": "reg')
    s.close()
    # A whole request, then the client goes away before reading the answer.
    body = json.dumps({"target": "app.py::Flask.add_url_rule", "strategy": "structural", "k": 50}).encode()
    for _ in range(5):
        s = socket.create_connection(("127.0.0.1", srv.port))
        s.sendall(b"POST /v1/retrieve HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        s.close()
    # Garbage instead of HTTP.
    s = socket.create_connection(("127.0.0.1", srv.port))
    s.sendall(b"\x00\x01\x02 not http at all\r\n\r\n")
    try:
        s.recv(1000)
    except OSError:
        pass
    s.close()
    st, h, _ = srv.request("GET", "/v1/health")
    ck.check(st == 200 and srv.proc.poll() is None, "the server serves on after clients vanish mid-request")


def check_fresh_under_load(ck, srv, copy):
    errors, answered, stop = [], [0], threading.Event()

    def reader():
        while not stop.is_set():
            st, r, _ = srv.post("/v1/retrieve", {"target": "helpers.py::get_root_path", "strategy": "structural",
                                                 "k": 5, "with_text": True})
            if st != 200 or len(r.get("results", [])) != 5 or not all(x.get("text") for x in r["results"]):
                errors.append(f"{st} {json.dumps(r)[:200]}")
            answered[0] += 1

    threads = [threading.Thread(target=reader) for _ in range(4)]
    for t in threads:
        t.start()
    try:
        helpers = os.path.join(copy, "helpers.py")
        with open(helpers, "a") as f:
            f.write(f"\n\ndef {PROBE}(x):\n    return get_root_path(x)\n")
        deadline, seen = time.time() + 60, False
        while time.time() < deadline and not seen:
            st, r, _ = srv.post("/v1/symbols", {"name": PROBE})
            seen = st == 200 and len(r) == 1
            time.sleep(0.2)
        ck.check(seen, "a function added while serving is found (the watcher refreshed the index)")
        # Several more swaps under load.
        for i in range(3):
            with open(os.path.join(copy, f"added_{i}.py"), "w") as f:
                f.write(f"def added_{i}():\n    return {i}\n")
            st, r, _ = srv.post("/v1/refresh", {})
            ck.check(st == 200 and r["complete"], f"refresh {i} under load", json.dumps(r)[:200])
    finally:
        stop.set()
        for t in threads:
            t.join()
    ck.check(not errors and answered[0] > 10,
             f"{answered[0]} reads during the swaps, none failed or saw a torn index", "; ".join(errors[:3]))
    st, h, _ = srv.request("GET", "/v1/health")
    ck.check(h["repos"][0]["generation"] >= 3, "each change swapped in a new snapshot", json.dumps(h)[:300])
    deadline = time.time() + 120
    while time.time() < deadline and not h["repos"][0].get("warm"):
        time.sleep(0.2)
        st, h, _ = srv.request("GET", "/v1/health")
    ck.check(h["repos"][0].get("warm") is True, "the last snapshot a refresh loaded is warmed too", json.dumps(h)[:300])


def check_repo_deleted(ck, srv, copy):
    shutil.rmtree(copy)
    deadline, noticed = time.time() + 30, False
    while time.time() < deadline and not noticed:
        st, h, _ = srv.request("GET", "/v1/health")
        noticed = st == 200 and not h["repos"][0]["fresh"]
        time.sleep(0.2)
    ck.check(noticed, "health reports the deleted repository (fresh: false, last_error)")
    st, r, _ = srv.post("/v1/retrieve", {"target": "helpers.py::get_root_path", "strategy": "structural", "k": 3,
                                         "with_text": True})
    ck.check(st == 200 and len(r["results"]) == 3, "the last loaded index keeps serving after the deletion",
             json.dumps(r)[:200])
    is_error(ck, srv.post("/v1/refresh", {}), 404, "not_found", "refresh of a deleted repository", "gone")


def check_background_loading(ck, binary, repo, work):
    """Each repository loads on its own thread after the server listens: a small one answers while a large one
    is still being indexed (503 "loading", Retry-After), one that cannot load answers 503 "load_failed" and
    leaves the others serving, first builds run one at a time (the other "queued"), and a server none of whose
    repositories loads exits with the load's error."""
    env = dict(os.environ, REPOCTX_INDEX_DIR=os.path.join(work, "indexes"))
    small = os.path.join(work, "flask-small")
    shutil.copytree(repo, small, ignore=shutil.ignore_patterns("__pycache__"))
    run_ok(binary, ["index", small, "-q"], env=env)
    broken = os.path.join(work, "flask-broken")
    shutil.copytree(repo, broken, ignore=shutil.ignore_patterns("__pycache__"))
    os.makedirs(os.path.join(broken, ".repoctx"))
    with open(os.path.join(broken, ".repoctx", "index.db"), "w") as f:
        f.write("this is not a SQLite database\n" * 100)
    # A large repository indexed for the first time (Python's standard library: seconds to index), and a second
    # first build (another copy of the small one, never indexed).
    large = sysconfig.get_paths()["stdlib"]
    fresh = os.path.join(work, "flask-fresh")
    shutil.copytree(repo, fresh, ignore=shutil.ignore_patterns("__pycache__"))
    srv = Server(binary, [f"small={small}", f"large={large}", f"broken={broken}", f"fresh={fresh}"], work,
                 ["--no-watch", "--no-warm"], "loading", env=env, wait_loaded=False)
    building_together = []

    def poll():
        h = srv.health()
        building = [n for n in ("large", "fresh") if h[n]["state"] == "loading" and not h[n].get("queued")]
        if len(building) > 1:
            building_together.append(h)
        return {n: r["state"] for n, r in h.items()}

    try:
        seen = [poll()]
        deadline = time.time() + 120
        while seen[-1]["small"] == "loading" and time.time() < deadline:
            time.sleep(0.02)
            seen.append(poll())
        ck.check(seen[-1]["small"] == "ready" and seen[-1]["large"] == "loading",
                 "the small repository is ready while the large one is still indexing", str(seen[-3:]))
        st, r, _ = srv.post("/v1/retrieve", {"repo": "small", "query": "url rule", "k": 3})
        ck.check(st == 200 and len(r.get("results", [])) == 3, "the small repository answers meanwhile",
                 json.dumps(r)[:300])
        got = srv.post("/v1/retrieve", {"repo": "large", "query": "parse a file", "k": 3})
        is_error(ck, got, 503, "loading", "a request to the repository still loading", "still loading")
        ck.check(got[2].get("Retry-After") == "1", "... with Retry-After: 1", str(got[2]))
        while "loading" in poll().values() and time.time() < deadline + 300:
            time.sleep(0.05)
        states = srv.states()
        ck.check(states == {"small": "ready", "large": "ready", "broken": "failed", "fresh": "ready"},
                 "health: the large repository ready once indexed, the broken one failed", str(states))
        h = srv.health()
        ck.check(not building_together, "two first builds never ran at the same time",
                 json.dumps(building_together[:1])[:400])
        first, second = sorted(("large", "fresh"), key=lambda n: h[n]["build_wait_s"])
        ck.check(h[first]["build_wait_s"] < 0.5 and
                 h[second]["build_wait_s"] >= h[first]["ready_after_s"] - 0.5,
                 "the second first build waited for the first to end (health: build_wait_s)",
                 json.dumps({n: {k: h[n].get(k) for k in ("build_wait_s", "ready_after_s")} for n in h})[:400])
        ck.check("build_wait_s" not in h["small"], "a repository with an index does not wait for a build turn",
                 json.dumps(h["small"])[:300])
        st, h, _ = srv.request("GET", "/v1/health")
        broken_health = [x for x in h["repos"] if x["name"] == "broken"][0]
        ck.check("SQLite" in broken_health.get("error", "") and broken_health.get("ready_after_s", -1) >= 0,
                 "health gives the broken repository's load error", json.dumps(broken_health)[:300])
        st, r, _ = srv.post("/v1/retrieve", {"repo": "large", "query": "parse a file", "k": 3})
        ck.check(st == 200 and len(r.get("results", [])) == 3, "the large repository answers once loaded",
                 json.dumps(r)[:300])
        is_error(ck, srv.post("/v1/retrieve", {"repo": "broken", "query": "url rule"}), 503, "load_failed",
                 "a request to the repository that could not be loaded", "not a SQLite")
        ck.check(srv.proc.poll() is None, "the server serves on beside a repository that failed to load")
    finally:
        srv.stop()
    expected = run(binary, ["index", broken, "-q"], env=env).returncode
    p = subprocess.run([binary, "serve", broken, "--port", "0", "--no-watch"], capture_output=True, text=True,
                       timeout=120, env=env)
    ck.check(p.returncode == expected == 4 and "not a SQLite" in p.stderr,
             "a server whose only repository cannot load exits with the load's error (4, as `index` does)",
             f"exit {p.returncode} (index: {expected}): {tail(p.stderr)}")


def check_sigterm(ck, binary, repo, db, work):
    srv = Server(binary, [repo], work, ["--db", db, "--no-refresh", "--no-watch"], "sigterm")
    results = []

    def slow():
        results.append(srv.post("/v1/refresh", {"force": True}, timeout=300))

    def fast():
        for _ in range(20):
            try:
                results.append(srv.post("/v1/retrieve", {"query": "url rule", "k": 5}, timeout=60))
            except (urllib.error.URLError, ConnectionError) as e:
                results.append(("refused", str(e)))

    threads = [threading.Thread(target=slow)] + [threading.Thread(target=fast) for _ in range(3)]
    for t in threads:
        t.start()
    time.sleep(0.3)
    rc = srv.stop(signal.SIGTERM, timeout=120)
    for t in threads:
        t.join(timeout=120)
    ck.check(rc == 0, "SIGTERM during requests: the server exits 0", f"exit {rc}: {tail(open(srv.log_path).read())}")
    answered = [r for r in results if r[0] != "refused"]
    ok = all(r[0] in (200, 503) and isinstance(r[1], dict) for r in answered)
    ck.check(ok and answered, f"every request in flight got a whole JSON answer ({len(answered)} answered, "
             f"{len(results) - len(answered)} refused after the stop)", str([r[:2] for r in answered if r[0] not in (200, 503)][:3]))
    p = run_json(binary, ["index", repo, "--db", db, "--json", "-q"])
    ck.check(p["complete"] and p["files"] > 10, "the index is consistent after the interrupted refresh (re-index completes)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repoctx", required=True)
    ap.add_argument("repo")
    a = ap.parse_args()
    ck = Checker()
    with TempDir("repoctx-serve-") as work:
        copy = os.path.join(work, "flask")
        shutil.copytree(a.repo, copy, ignore=shutil.ignore_patterns("__pycache__"))
        db = os.path.join(work, "index.db")
        srv = Server(a.repoctx, [copy], work, ["--db", db, "--max-body-bytes", "4096"])
        try:
            check_endpoints(ck, srv, a.repoctx, copy, db)
            check_localize(ck, srv, a.repoctx, copy, db)
            check_bad_requests(ck, srv)
            check_disconnects(ck, srv)
            check_fresh_under_load(ck, srv, copy)
            check_repo_deleted(ck, srv, copy)
            ck.check(srv.stop() == 0, "the server stops on SIGTERM with exit 0")
        finally:
            srv.stop(signal.SIGKILL)
        copy2 = os.path.join(work, "flask2")
        shutil.copytree(a.repo, copy2, ignore=shutil.ignore_patterns("__pycache__"))
        db2 = os.path.join(work, "index2.db")
        run_json(a.repoctx, ["index", copy2, "--db", db2, "--json", "-q"])
        check_token(ck, a.repoctx, copy2, db2, work)
        check_background_loading(ck, a.repoctx, a.repo, work)
        check_sigterm(ck, a.repoctx, copy2, db2, work)
    return ck.finish("serve_http")


if __name__ == "__main__":
    sys.exit(main_wrapper("serve_http", main))
