#!/usr/bin/env python3
"""Attacks on `repoctx serve` and `repoctx mcp`, each against a real server process on 127.0.0.1 (or a real MCP
process on pipes) serving a copy of a Debian library. For every attack the safe outcome is asserted: the answer
it should get, the process alive, a normal request answered within 1 s while the attack runs, RSS bounded.

    adversarial_serve.py --repoctx BIN [--only NAME,...] [REPO]

The threat model and the table of outcomes: docs/RELIABILITY.md. Each attack is a function below; a server
that dies is started again for the next attack, so one failure does not hide the others.
"""
import argparse
import json
import os
import select
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

from _util import Checker, Failure, TempDir, main_wrapper, run_ok, tail

PROMPT_S = 1.0          # a normal request must be answered within this while an attack runs
RSS_GROWTH_MB = 150     # an attack may not grow the server by more than this


def rss_mb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def read_response(sock, timeout):
    """(status, parsed JSON body or None) of one HTTP response on `sock`; status 0 when none came."""
    sock.settimeout(timeout)
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1."):
            return 0, None
        length = 0
        for line in head.split(b"\r\n")[1:]:
            k, _, v = line.partition(b":")
            if k.strip().lower() == b"content-length":
                length = int(v.strip())
        while len(body) < length:
            chunk = sock.recv(65536)
            if not chunk:
                break
            body += chunk
        status = int(head.split(b" ")[1])
        try:
            return status, json.loads(body)
        except json.JSONDecodeError:
            return status, None
    except (socket.timeout, ConnectionError, OSError):
        return 0, None


class Server:
    def __init__(self, binary, repo, work, extra=()):
        self.binary, self.repo, self.work, self.extra = binary, repo, work, list(extra)
        self.start()

    def start(self):
        self.ready = os.path.join(self.work, "serve.ready.json")
        if os.path.exists(self.ready):
            os.remove(self.ready)
        self.log_path = os.path.join(self.work, "serve.log")
        self.log = open(self.log_path, "a")
        self.proc = subprocess.Popen([self.binary, "serve", self.repo, "--port", "0", "--ready-file", self.ready,
                                      "--no-watch", *self.extra], stdout=self.log, stderr=self.log)
        deadline = time.time() + 300
        while not os.path.exists(self.ready):
            if self.proc.poll() is not None:
                raise Failure(f"serve exited {self.proc.returncode} before listening: "
                              f"{tail(open(self.log_path).read())}")
            if time.time() > deadline:
                raise Failure("serve did not listen within 300 s")
            time.sleep(0.05)
        self.port = json.load(open(self.ready))["port"]
        # The server listens before its repository has loaded (health: "state"): the attacks start once it has.
        token = self.extra[self.extra.index("--token") + 1] if "--token" in self.extra else None
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        while True:
            req = urllib.request.Request(f"http://127.0.0.1:{self.port}/v1/health", headers=headers)
            with urllib.request.urlopen(req, timeout=60) as r:
                states = [x["state"] for x in json.load(r)["repos"]]
            if "loading" not in states:
                break
            if time.time() > deadline:
                raise Failure(f"serve's repository did not load within 300 s: {states}")
            time.sleep(0.05)
        self.base_rss = rss_mb(self.proc.pid)

    def alive(self):
        return self.proc.poll() is None

    def ensure(self):
        if not self.alive():
            self.start()

    def stop(self):
        if self.alive():
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def request(self, method, path, body=None, headers=None, timeout=10):
        hdrs = {"Content-Type": "application/json"} if method == "POST" else {}
        hdrs.update(headers or {})
        data = body if isinstance(body, bytes) else (json.dumps(body).encode() if body is not None else None)
        if method == "POST" and data is None:
            data = b"{}"
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data, method=method, headers=hdrs)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            try:
                return e.code, json.loads(e.read())
            except json.JSONDecodeError:
                return e.code, None
        except (OSError, urllib.error.URLError):
            return 0, None

    def raw(self, data, timeout=10):
        try:
            s = socket.create_connection(("127.0.0.1", self.port), timeout=timeout)
        except OSError:
            return 0, None
        try:
            s.sendall(data)
            return read_response(s, timeout)
        except OSError:
            return read_response(s, timeout)
        finally:
            s.close()

    def prompt(self, headers=None):
        """A normal request (sparse retrieval) answered within PROMPT_S: (ok, seconds)."""
        t0 = time.time()
        st, body = self.request("POST", "/v1/retrieve", {"query": "register a url rule", "strategy": "sparse", "k": 3},
                                headers=headers, timeout=PROMPT_S + 5)
        dt = time.time() - t0
        return st == 200 and isinstance(body, dict) and len(body.get("results", [])) == 3 and dt <= PROMPT_S, dt


def error_code(body):
    return body.get("error", {}).get("code") if isinstance(body, dict) else None


def expect(ck, srv, name, got, status, code=None, headers=None):
    st, body = got
    ck.check(st == status and (code is None or error_code(body) == code),
             f"{name}: answered {status}{' ' + code if code else ''}", f"got {st} {json.dumps(body)[:240]}")
    ck.check(srv.alive(), f"{name}: the server is alive", f"exit {srv.proc.returncode}")
    ok, dt = srv.prompt(headers) if srv.alive() else (False, 0)
    ck.check(ok, f"{name}: a normal request is answered within {PROMPT_S} s afterwards", f"{dt:.2f} s")
    grew = rss_mb(srv.proc.pid) - srv.base_rss if srv.alive() else 0
    ck.check(grew < RSS_GROWTH_MB, f"{name}: RSS grew less than {RSS_GROWTH_MB} MB", f"{grew:.0f} MB")


# ----------------------------------------------------------------------------------------------- serve
def attack_model_paths(ck, srv, work):
    target = "helpers.py::get_root_path"
    t0 = time.time()
    got = srv.request("POST", "/v1/retrieve", {"target": target, "strategy": "structural",
                                               "structural_model": "/dev/zero"}, timeout=20)
    expect(ck, srv, "structural_model /dev/zero", got, 400, "bad_request")
    ck.check(time.time() - t0 < 2, "structural_model /dev/zero: refused at once", f"{time.time() - t0:.1f} s")
    fifo = os.path.join(work, "model.fifo")
    if not os.path.exists(fifo):
        os.mkfifo(fifo)
    got = srv.request("POST", "/v1/retrieve", {"target": target, "strategy": "structural", "structural_model": fifo},
                      timeout=5)
    expect(ck, srv, "structural_model a FIFO", got, 400, "bad_request")
    st, body = srv.request("POST", "/v1/retrieve", {"target": target, "strategy": "structural", "k": 3}, timeout=5)
    ck.check(st == 200, "structural_model a FIFO: structural requests still answered", f"{st}")
    a = srv.request("POST", "/v1/retrieve", {"target": target, "strategy": "structural",
                                             "structural_model": "/etc/passwd"})
    b = srv.request("POST", "/v1/retrieve", {"target": target, "strategy": "structural",
                                             "structural_model": "/no/such/file.json"})
    same = a[0] == b[0] == 400 and error_code(a[1]) == error_code(b[1]) and \
        a[1]["error"]["message"].replace("/etc/passwd", "X") == b[1]["error"]["message"].replace("/no/such/file.json", "X")
    ck.check(same, "structural_model: an existing and a missing file get the same answer (no existence oracle)",
             f"{a} / {b}")
    got = srv.request("POST", "/v1/retrieve", {"query": "x", "strategy": "aligncoder-snippets",
                                               "params": {"model_path": "/dev/zero"}}, timeout=20)
    expect(ck, srv, "params.model_path /dev/zero", got, 400, "bad_request")


def attack_deep_json(ck, srv, work):
    depth = 100000
    body = b'{"query":"x","params":{"a":' + b"[" * depth + b"]" * depth + b"}}"
    got = srv.request("POST", "/v1/retrieve", body, timeout=20)
    expect(ck, srv, f"a body nested {depth} deep", got, 400, "bad_json")


def attack_idle_connections(ck, srv, work):
    socks = []
    try:
        for _ in range(300):
            socks.append(socket.create_connection(("127.0.0.1", srv.port), timeout=5))
    except OSError as e:
        ck.fail("300 idle connections: connecting", str(e))
    ok, dt = srv.prompt()
    ck.check(ok, f"300 idle connections open: a normal request is answered within {PROMPT_S} s", f"{dt:.2f} s")
    for s in socks:
        s.close()
    ck.check(srv.alive(), "300 idle connections: the server is alive")


def slow_headers(port, n, stop, token=None):
    socks = []
    for _ in range(n):
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            s.sendall(b"POST /v1/retrieve HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            socks.append(s)
        except OSError:
            pass
    while not stop.is_set():
        for s in socks:
            try:
                s.sendall(b"X")
            except OSError:
                pass
        stop.wait(0.5)
    for s in socks:
        s.close()


def attack_slow_headers(ck, srv, work, token=None):
    stop = threading.Event()
    t = threading.Thread(target=slow_headers, args=(srv.port, 16, stop))
    t.start()
    time.sleep(1.5)
    headers = {"Authorization": f"Bearer {token}"} if token else None
    ok, dt = srv.prompt(headers)
    name = "16 clients sending a header a byte at a time" + (" (token set, they have none)" if token else "")
    ck.check(ok, f"{name}: a normal request is answered within {PROMPT_S} s", f"{dt:.2f} s")
    stop.set()
    t.join()
    ck.check(srv.alive(), f"{name}: the server is alive")


def attack_chunked_body(ck, srv, work):
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
    s.sendall(b"POST /v1/retrieve HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
              b"Transfer-Encoding: chunked\r\n\r\n")
    chunk = b"%x\r\n" % (1 << 20) + b" " * (1 << 20) + b"\r\n"
    sent = 0
    try:
        for _ in range(64):   # 64 MiB against a 1 MiB limit
            s.sendall(chunk)
            sent += 1
    except OSError:
        pass
    st, body = read_response(s, 10)
    s.close()
    ck.check(st == 413 or (st == 0 and sent < 64), "a 64 MiB chunked body: refused (413) before it is read whole",
             f"status {st} after {sent} MiB sent")
    expect(ck, srv, "a 64 MiB chunked body", (413, {"error": {"code": "too_large"}}), 413)


def attack_content_length(ck, srv, work):
    for value in (b"1e20", b"-1", b"99999999999999999999999"):
        t0 = time.time()
        got = srv.raw(b"POST /v1/retrieve HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                      b"Content-Length: " + value + b"\r\n\r\n{}", timeout=5)
        dt = time.time() - t0
        ck.check(got[0] in (400, 413) and dt < 1.5, f"Content-Length: {value.decode()}: refused at once",
                 f"{got[0]} after {dt:.1f} s")
    got = srv.raw(b"POST /v1/retrieve HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                  b"Content-Length: 5000000\r\n\r\n{", timeout=5)
    ck.check(got[0] == 413 and error_code(got[1]) == "too_large", "Content-Length over the limit: 413 before the body",
             f"{got}")
    got = srv.raw(b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * 100000 + b"\r\n\r\n", timeout=5)
    expect(ck, srv, "a 100 KB header", got, 431, "headers_too_large")


def attack_browser(ck, srv, work):
    got = srv.request("POST", "/v1/retrieve", {"query": "x"}, headers={"Host": "evil.example:8765"})
    expect(ck, srv, "Host of another site (DNS rebinding)", got, 400, "bad_host")
    got = srv.request("GET", "/v1/health", headers={"Host": "attacker.example"})
    ck.check(got[0] == 400, "Host of another site on GET: refused", f"{got}")
    got = srv.request("POST", "/v1/retrieve", {"query": "x"}, headers={"Origin": "http://evil.example"})
    expect(ck, srv, "an Origin (a web page's request)", got, 403, "cross_origin")
    got = srv.request("POST", "/v1/retrieve", b'{"query":"x"}', headers={"Content-Type": "text/plain"})
    expect(ck, srv, "a text/plain body (a browser's simple request)", got, 415, "unsupported_media_type")
    got = srv.request("POST", "/v1/retrieve", b"query=x", headers={"Content-Type": "application/x-www-form-urlencoded"})
    expect(ck, srv, "a form-encoded body", got, 415, "unsupported_media_type")
    got = srv.raw(b"OPTIONS /v1/retrieve HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: http://evil.example\r\n"
                  b"Access-Control-Request-Method: POST\r\n\r\n")
    ck.check(got[0] in (403, 405), "a CORS preflight is refused", f"{got}")


def attack_numbers(ck, srv, work):
    got = srv.request("POST", "/v1/retrieve", b'{"query":"x","k":1e400}')
    expect(ck, srv, "k: 1e400", got, 400, "bad_json")
    got = srv.request("POST", "/v1/retrieve", {"query": "x", "k": 0})
    ck.check(got[0] == 400, "k: 0 refused", f"{got}")


def attack_many_connections(ck, srv, work):
    """Run on a server started with --max-connections 64: 200 connections opened, a newcomer still served."""
    socks = []
    for _ in range(200):
        try:
            socks.append(socket.create_connection(("127.0.0.1", srv.port), timeout=5))
        except OSError:
            break
    ok, dt = srv.prompt()
    ck.check(ok, f"200 connections against a bound of 64: a newcomer is answered within {PROMPT_S} s", f"{dt:.2f} s")
    for s in socks:
        s.close()


def damage(binary, repo, db):
    """A few pages of the database overwritten where a read-only query does not look (as a disk error would),
    then a refreshing command run over it: the damage must be found, not stamped verified."""
    size = os.path.getsize(db)
    with open(db, "r+b") as f:
        f.seek(int(size * 0.3) // 4096 * 4096)
        f.write(os.urandom(4 * 4096))
    subprocess.run([binary, "retrieve", repo, "--db", db, "--query", "url rule", "-q"], capture_output=True,
                   timeout=120)


def attack_damaged_refresh(ck, srv, work):
    st, h = srv.request("GET", "/v1/health")
    db = h["repos"][0]["db"] if st == 200 else None
    if not db:
        ck.fail("damaged index: health names the database", f"{st} {h}")
        return
    damage(srv.binary, srv.repo, db)
    got = srv.request("POST", "/v1/index", {"force": True}, timeout=120)
    ck.check(got[0] >= 400, "a forced refresh over a damaged index: answered with an error", f"{got}")
    time.sleep(0.5)
    ck.check(srv.alive(), "a forced refresh over a damaged index: the server is alive", f"exit {srv.proc.returncode}")
    st, _ = srv.request("GET", "/v1/health", timeout=PROMPT_S + 2) if srv.alive() else (0, None)
    ck.check(st == 200, "a forced refresh over a damaged index: health answers", f"{st}")


# ------------------------------------------------------------------------------------------------ mcp
class Mcp:
    def __init__(self, binary, repo, db):
        self.p = subprocess.Popen([binary, "mcp", repo, "--db", db, "--no-watch", "-q"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.buf = b""
        self.base_rss = rss_mb(self.p.pid)

    def send(self, data):
        try:
            self.p.stdin.write(data + b"\n")
            self.p.stdin.flush()
        except OSError:
            pass

    def recv(self, timeout):
        deadline = time.time() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.time()
            if left <= 0 or not select.select([self.p.stdout], [], [], left)[0]:
                return None
            chunk = os.read(self.p.stdout.fileno(), 65536)
            if not chunk:
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def ask(self, obj, timeout=30):
        self.send(obj if isinstance(obj, bytes) else json.dumps(obj).encode())
        return self.recv(timeout)

    def alive(self):
        return self.p.poll() is None

    def stop(self):
        if self.alive():
            self.p.stdin.close()
            try:
                self.p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.p.kill()


def call(n, name, args):
    return {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": name, "arguments": args}}


def mcp_prompt(ck, m, name):
    t0 = time.time()
    a = m.ask(call(900, "retrieve", {"query": "register a url rule", "k": 3}), timeout=PROMPT_S + 5)
    dt = time.time() - t0
    ok = isinstance(a, dict) and "result" in a and not a["result"].get("isError") and dt <= PROMPT_S
    ck.check(m.alive() and ok, f"{name}: the MCP server is alive and answers within {PROMPT_S} s", f"{dt:.2f} s {a}")
    grew = rss_mb(m.p.pid) - m.base_rss if m.alive() else 0
    ck.check(grew < RSS_GROWTH_MB, f"{name}: RSS grew less than {RSS_GROWTH_MB} MB", f"{grew:.0f} MB")


def is_tool_error(a):
    return isinstance(a, dict) and a.get("result", {}).get("isError") is True


def mcp_attacks(ck, binary, repo, db, only):
    m = Mcp(binary, repo, db)
    init = m.ask({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}},
                 timeout=120)
    if not (isinstance(init, dict) and "result" in init):
        raise Failure(f"mcp did not initialize: {init}")

    def restart(name):
        nonlocal m
        if not m.alive():
            m = Mcp(binary, repo, db)
            m.ask({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}},
                  timeout=120)

    if not only or "mcp_deep" in only:
        depth = 200000
        # A text that cannot be parsed has no id to tell a notification: JSON-RPC answers it with a parse error.
        a = m.ask(b'{"jsonrpc":"2.0","method":"notifications/x","params":' + b"[" * depth + b"]" * depth + b"}")
        ck.check(isinstance(a, dict) and a.get("error", {}).get("code") == -32700 and a.get("id") is None,
                 f"an MCP notification nested {depth} deep: parse error -32700", f"{str(a)[:200]}")
        mcp_prompt(ck, m, f"an MCP notification nested {depth} deep")
        restart("deep")
        a = m.ask(b'{"jsonrpc":"2.0","id":7,"method":"ping","params":{"x":' + b"[" * depth + b"]" * depth + b"}}")
        ck.check(isinstance(a, dict) and a.get("error", {}).get("code") == -32700,
                 "an MCP request nested 200000 deep: parse error -32700", f"{str(a)[:200]}")
        restart("deep request")
    if not only or "mcp_paths" in only:
        t0 = time.time()
        a = m.ask(call(8, "retrieve", {"target": "helpers.py::get_root_path", "strategy": "structural",
                                       "structural_model": "/dev/zero"}), timeout=20)
        ck.check(is_tool_error(a) and time.time() - t0 < 2, "MCP structural_model /dev/zero: a tool error at once",
                 f"{str(a)[:200]}")
        a = m.ask(call(9, "retrieve", {"query": "x", "strategy": "aligncoder-snippets",
                                       "params": {"model_path": "/dev/zero"}}), timeout=20)
        ck.check(is_tool_error(a), "MCP params.model_path /dev/zero: a tool error", f"{str(a)[:200]}")
        mcp_prompt(ck, m, "MCP model paths")
        restart("paths")
    if not only or "mcp_schema" in only:
        a = m.ask(call(10, "retrieve", {"query": "x", "trace": True}))
        ck.check(is_tool_error(a), "MCP: a field the schema does not list is refused", f"{str(a)[:200]}")
        a = m.ask(call(11, "retrieve", {"query": "x", "strategy": "procedural"}))
        ck.check(is_tool_error(a), "MCP: a strategy the schema does not list is refused", f"{str(a)[:200]}")
        a = m.ask(call(12, "symbols", {"limit": -5}))
        ck.check(is_tool_error(a), "MCP: a value outside the schema's range is refused", f"{str(a)[:200]}")
        mcp_prompt(ck, m, "MCP arguments outside the schemas")
        restart("schema")
    if not only or "mcp_refresh" in only:
        damage(binary, repo, db)
        a = m.ask(call(13, "refresh", {"force": True}), timeout=120)
        ck.check(is_tool_error(a) or (isinstance(a, dict) and "error" in a),
                 "MCP: a forced refresh over a damaged index answers an error", f"{str(a)[:200]}")
        mcp_prompt(ck, m, "MCP: a forced refresh over a damaged index")
    m.stop()


SERVE_ATTACKS = {
    "model_paths": attack_model_paths,
    "deep_json": attack_deep_json,
    "idle_connections": attack_idle_connections,
    "slow_headers": attack_slow_headers,
    "chunked_body": attack_chunked_body,
    "content_length": attack_content_length,
    "browser": attack_browser,
    "numbers": attack_numbers,
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repoctx", required=True)
    ap.add_argument("--only", default="", help="comma-separated attack names")
    ap.add_argument("repo", nargs="?", default="/usr/lib/python3/dist-packages/flask")
    a = ap.parse_args()
    only = set(x for x in a.only.split(",") if x)
    ck = Checker()
    with TempDir("repoctx-adversarial-") as work:
        repo = os.path.join(work, "flask")
        shutil.copytree(a.repo, repo, ignore=shutil.ignore_patterns("__pycache__"))
        db = os.path.join(work, "index.db")
        run_ok(a.repoctx, ["index", repo, "--db", db, "-q"])
        srv = Server(a.repoctx, repo, work, ["--db", db])
        try:
            for name, fn in SERVE_ATTACKS.items():
                if only and name not in only:
                    continue
                print(f"-- {name}", flush=True)
                srv.ensure()
                fn(ck, srv, work)
        finally:
            srv.stop()
        if not only or "token" in only:
            print("-- slow clients against a server with a token", flush=True)
            srv = Server(a.repoctx, repo, work, ["--db", db, "--token", "s3cret"])
            try:
                attack_slow_headers(ck, srv, work, token="s3cret")
                got = srv.raw(b"POST /v1/retrieve HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                              b"Content-Length: 900000\r\n\r\n{", timeout=3)
                ck.check(got[0] == 401, "no token: refused (401) before the body is read", f"{got}")
            finally:
                srv.stop()
        if not only or "many_connections" in only:
            print("-- more connections than the bound", flush=True)
            srv = Server(a.repoctx, repo, work, ["--db", db, "--max-connections", "64"])
            try:
                attack_many_connections(ck, srv, work)
            finally:
                srv.stop()
        if not only or "damaged_refresh" in only:
            print("-- a forced refresh over a damaged index (serve)", flush=True)
            db2 = os.path.join(work, "index2.db")
            run_ok(a.repoctx, ["index", repo, "--db", db2, "-q"])
            srv = Server(a.repoctx, repo, work, ["--db", db2])
            try:
                attack_damaged_refresh(ck, srv, work)
            finally:
                srv.stop()
        print("-- mcp", flush=True)
        db3 = os.path.join(work, "index3.db")
        run_ok(a.repoctx, ["index", repo, "--db", db3, "-q"])
        mcp_attacks(ck, a.repoctx, repo, db3, only)
    return ck.finish("adversarial_serve")


if __name__ == "__main__":
    sys.exit(main_wrapper("adversarial_serve", main))
