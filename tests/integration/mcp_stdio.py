#!/usr/bin/env python3
"""`repoctx mcp` spoken to raw, line by line, for everything a client can get wrong (the official SDK client's
test, mcp_sdk.mjs, covers the well-behaved path).

    mcp_stdio.py --repoctx BIN REPO

Checks: malformed JSON (-32700), a batch, a missing "jsonrpc", a bad id and a non-object (-32600), requests
before initialize (-32002), unknown methods (-32601), unknown tools and missing names (-32602), tool
arguments of the wrong type or unknown, a path outside the repository, a missing target (results with
isError = true that say what is wrong), a message over --max-message-bytes (-32600, then the server
reads on), notifications (no answer), version negotiation; end of input and SIGTERM end the server with 0.
"""
import argparse
import json
import os
import select
import signal
import subprocess
import sys
import time

from _util import Checker, Failure, TempDir, main_wrapper, run_json, tail


class Mcp:
    def __init__(self, binary, repo, db, extra=()):
        self.p = subprocess.Popen([binary, "mcp", repo, "--db", db, "--no-refresh", "--no-watch", "-q", *extra],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.buf = b""

    def send(self, obj_or_bytes):
        data = obj_or_bytes if isinstance(obj_or_bytes, bytes) else json.dumps(obj_or_bytes).encode()
        self.p.stdin.write(data + b"\n")
        self.p.stdin.flush()

    def recv(self, timeout=60):
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

    def ask(self, obj_or_bytes, timeout=60):
        self.send(obj_or_bytes)
        return self.recv(timeout)


def rpc_error(ck, ans, code, what, id_=None, contains=None):
    ok = isinstance(ans, dict) and ans.get("jsonrpc") == "2.0" and ans.get("error", {}).get("code") == code \
        and ans.get("id") == id_
    if contains:
        ok = ok and contains in ans["error"].get("message", "")
    ck.check(ok, f"{what}: error {code}", json.dumps(ans)[:300])


def tool_error(ck, ans, what, contains):
    r = ans.get("result", {}) if isinstance(ans, dict) else {}
    text = r.get("content", [{}])[0].get("text", "")
    ck.check(r.get("isError") is True and contains in text, f"{what}: a tool result with isError",
             json.dumps(ans)[:300])


def call(n, name, args):
    return {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": name, "arguments": args}}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repoctx", required=True)
    ap.add_argument("repo")
    a = ap.parse_args()
    ck = Checker()
    with TempDir("repoctx-mcp-") as work:
        db = os.path.join(work, "index.db")
        run_json(a.repoctx, ["index", a.repo, "--db", db, "--json", "-q"])
        m = Mcp(a.repoctx, a.repo, db, ["--max-message-bytes", "2000"])
        m2 = None
        try:
            rpc_error(ck, m.ask(b'{"jsonrpc": "2.0", "id": 1, "method": '), -32700, "malformed JSON")
            rpc_error(ck, m.ask([{"jsonrpc": "2.0", "id": 1, "method": "ping"}]), -32600, "a batch")
            rpc_error(ck, m.ask(b'"just a string"'), -32600, "a JSON string")
            rpc_error(ck, m.ask({"id": 2, "method": "ping"}), -32600, "no jsonrpc field", 2)
            rpc_error(ck, m.ask({"jsonrpc": "2.0", "id": {"x": 1}, "method": "ping"}), -32600, "an object id")
            rpc_error(ck, m.ask({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}), -32002, "before initialize", 3)
            ans = m.ask({"jsonrpc": "2.0", "id": 4, "method": "ping"})
            ck.check(ans == {"jsonrpc": "2.0", "id": 4, "result": {}}, "ping before initialize", json.dumps(ans))
            ans = m.ask({"jsonrpc": "2.0", "id": 5, "method": "initialize",
                         "params": {"protocolVersion": "1999-01-01", "capabilities": {},
                                    "clientInfo": {"name": "t", "version": "0"}}})
            ck.check(ans["result"]["protocolVersion"] == "2025-11-25" and "tools" in ans["result"]["capabilities"],
                     "an unknown protocol version is answered with the server's (2025-11-25)", json.dumps(ans)[:300])
            m.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            ans = m.ask({"jsonrpc": "2.0", "id": "six", "method": "tools/list"})
            names = [t["name"] for t in ans["result"]["tools"]]
            ck.check(names[:1] == ["retrieve"] and {"localize", "symbols", "read_file", "grep", "refresh"} <= set(names)
                     and "procedural" not in names, "the notification got no answer; tools/list (string id)",
                     json.dumps(ans)[:300])
            loc = [t for t in ans["result"]["tools"] if t["name"] == "localize"]
            ck.check(loc and loc[0]["inputSchema"]["required"] == ["request"]
                     and loc[0]["inputSchema"]["properties"]["strategy"]["enum"] == ["study-bm25", "files-bm25", "locate"],
                     "localize is listed with its schema; only the LLM-free strategies without a model",
                     json.dumps(loc)[:300])
            request = "Blueprint url_prefix is ignored when registering a nested blueprint"
            ans = m.ask(call(30, "localize", {"request": request}))
            r = ans.get("result", {})
            sc = r.get("structuredContent", {})
            cli = run_json(a.repoctx, ["localize", a.repo, "--db", db, "--no-refresh", "--query", request, "--json"])
            ck.check(not r.get("isError") and sc.get("results")
                     and [(x["file"], x["start_line"]) for x in sc["results"]]
                     == [(x["file"], x["start_line"]) for x in cli["results"]]
                     and sc.get("score") == "BM25 score of the chunk"
                     and f"{sc['results'][0]['file']}:{sc['results'][0]['start_line']}-" in r["content"][0]["text"],
                     "tools/call localize: the CLI's ranges, the score's meaning, a readable text",
                     json.dumps(ans)[:300])
            tool_error(ck, m.ask(call(31, "localize", {"request": request, "strategy": "sparse"})),
                       "localize with a retrieval strategy", "field 'strategy'")
            ans = m.ask(call(32, "retrieve", {"target": "helpers.py::get_root_path", "strategy": "structural", "k": 2}))
            sc = ans.get("result", {}).get("structuredContent", {})
            ck.check(sc.get("score", "").startswith("ranking score"), "retrieve says what its scores mean",
                     json.dumps(ans)[:200])
            rpc_error(ck, m.ask({"jsonrpc": "2.0", "id": 7, "method": "resources/list"}), -32601, "an unknown method", 7)
            rpc_error(ck, m.ask(call(8, "teleport", {})), -32602, "an unknown tool", 8, "Unknown tool")
            rpc_error(ck, m.ask({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {}}), -32602,
                      "tools/call without a name", 9)
            rpc_error(ck, m.ask({"jsonrpc": "2.0", "id": 10, "method": "tools/call",
                                 "params": {"name": "grep", "arguments": [1]}}), -32602, "arguments not an object", 10)
            tool_error(ck, m.ask(call(11, "retrieve", {"query": "x", "k": "ten"})), "k as a string", "field 'k'")
            tool_error(ck, m.ask(call(12, "retrieve", {"query": "x", "depth": 3})), "an unknown argument",
                       "unknown field 'depth'")
            tool_error(ck, m.ask(call(13, "retrieve", {"target": "helpers.py::nope"})), "a missing target",
                       "no function or method")
            tool_error(ck, m.ask(call(14, "read_file", {"path": "../../etc/passwd"})), "read outside the repository",
                       "leaves the repository")
            tool_error(ck, m.ask(call(15, "read_file", {"path": "/etc/passwd"})), "an absolute path outside",
                       "outside the repository")
            tool_error(ck, m.ask(call(16, "grep", {"pattern": "a(b"})), "an invalid regular expression",
                       "invalid regular expression")
            rpc_error(ck, m.ask(b'{"jsonrpc": "2.0", "id": 17, "method": "ping", "pad": "' + b"x" * 5000 + b'"}'),
                      -32600, "a message over --max-message-bytes", None, "larger than")
            ans = m.ask(call(18, "retrieve", {"query": "register url rule", "k": 3}))
            r = ans.get("result", {})
            hits = r.get("structuredContent", {}).get("results", [])
            ck.check(not r.get("isError") and len(hits) == 3 and hits[0]["file"] in r["content"][0]["text"],
                     "the server reads on after the oversize message", json.dumps(ans)[:300])
            big = b'{"jsonrpc": "2.0", "id": 19, "method": "ping", "pad": "' + b"y" * 200000 + b'"}'
            rpc_error(ck, m.ask(big), -32600, "a message over the limit arriving in pieces", None, "larger than")
            ans = m.ask({"jsonrpc": "2.0", "id": 20, "method": "ping"})
            ck.check(ans == {"jsonrpc": "2.0", "id": 20, "result": {}}, "and the server reads on", json.dumps(ans))
            m.p.stdin.close()
            rc = m.p.wait(timeout=60)
            ck.check(rc == 0, "end of input ends the server with exit 0", f"exit {rc}")
            m2 = Mcp(a.repoctx, a.repo, db)
            ans = m2.ask({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                          "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                     "clientInfo": {"name": "t", "version": "0"}}})
            ck.check(ans["result"]["protocolVersion"] == "2025-06-18", "a known older version is kept")
            m2.p.send_signal(signal.SIGTERM)
            rc = m2.p.wait(timeout=60)
            ck.check(rc == 0, "SIGTERM ends the server with exit 0", f"exit {rc}: {tail(m2.p.stderr.read().decode())}")
            # A client that disconnects mid-request: it sends a request and closes the pipe the answer goes to.
            m3 = Mcp(a.repoctx, a.repo, db)
            m3.send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                     "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                "clientInfo": {"name": "t", "version": "0"}}})
            m3.p.stdout.close()
            m3.send(call(2, "retrieve", {"target": "app.py::Flask.add_url_rule", "strategy": "structural", "k": 50}))
            m3.send({"jsonrpc": "2.0", "id": 3, "method": "ping"})
            m3.p.stdin.close()
            rc = m3.p.wait(timeout=60)
            ck.check(rc == 0, "a client gone mid-request ends the server cleanly (exit 0, no SIGPIPE death)",
                     f"exit {rc}: {tail(m3.p.stderr.read().decode())}")
        finally:
            for x in (m, m2):
                if x and x.p.poll() is None:
                    x.p.kill()
    return ck.finish("mcp_stdio")


if __name__ == "__main__":
    sys.exit(main_wrapper("mcp_stdio", main))
