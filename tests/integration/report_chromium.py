#!/usr/bin/env python3
"""`repoctx report` pages opened in headless Chromium, driven over the DevTools protocol (--remote-debugging-pipe).

    report_chromium.py --repoctx BIN --chromium BIN REPO

The traces are real: a procedural retrieval and a generation on REPO with the tiny random-weight model
(`repoctx make-test-model`, the real llama.cpp runtime; parameters as procedural_e2e.py). For each page:
no console error, no uncaught exception, no blocked request (the page fetches nothing); a DOM query finds
every section; a click on a column header sorts the table (both directions); "unfold all" opens every fold.
A trace holding markup (</script><script>...) renders it as text and runs none of it. A page with a
deliberate script error must be caught by the same collector (so that a clean result means something).
Bad input: a missing trace (exit 3), a file that is not JSON or not a trace (exit 4).
"""
import argparse
import fcntl
import json
import os
import subprocess
import sys
import time

from _util import Checker, Failure, TempDir, main_wrapper, run, run_ok, tail

# As procedural_e2e.py's, cut further: the page needs every stage to run once, not much model output.
PARAMS = ["max_context_functions=2", "max_steps=1", "description_chars=32", "snippet_chars=48",
          "decompose_tokens=120", "judge_tokens=96", "agent_tokens=120", "projection_tokens=4",
          "max_rounds=1", "agent_budget=1", "snippet_cosine=-1", "seed_threshold=-1"]
TARGET = "helpers.py::get_root_path"
RETRIEVAL_SECTIONS = ["target", "context-steps", "selection", "seeds", "agent", "expansion", "confirmation",
                      "final-context", "llm-usage", "params", "other"]
GENERATION_SECTIONS = ["target", "plan", "final-context", "rounds", "findings", "llm-usage", "params",
                       "procedural-target", "procedural-context-steps", "procedural-seeds", "procedural-agent",
                       "procedural-expansion", "procedural-confirmation", "procedural-final-context",
                       "procedural-llm-usage"]


class Browser:
    """Headless Chromium over the DevTools protocol on a pipe (fd 3: commands in, fd 4: replies out)."""

    def __init__(self, chromium, work):
        cmd_r, self.cmd_w = os.pipe()
        self.out_r, out_w = os.pipe()

        def fds():
            # Through descriptors >= 10 first: the pipes may themselves be 3 or 4, and dup2 onto itself would
            # leave close-on-exec set.
            a, b = fcntl.fcntl(cmd_r, fcntl.F_DUPFD, 10), fcntl.fcntl(out_w, fcntl.F_DUPFD, 10)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen(
            [chromium, "--headless=new", "--remote-debugging-pipe", "--no-sandbox", "--disable-gpu",
             "--no-first-run", "--no-default-browser-check", f"--user-data-dir={os.path.join(work, 'profile')}",
             "about:blank"],
            preexec_fn=fds, close_fds=False, stdout=subprocess.DEVNULL,
            stderr=open(os.path.join(work, "chromium.log"), "w"))
        self.log = os.path.join(work, "chromium.log")
        os.close(cmd_r)
        os.close(out_w)
        self.next_id, self.buf, self.events = 0, b"", []
        target = self.cmd("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.cmd("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ["Runtime.enable", "Log.enable", "Page.enable"]:
            self.cmd(domain, session=True)

    def _read(self, timeout):
        deadline = time.time() + timeout
        while b"\0" not in self.buf:
            if time.time() > deadline:
                raise Failure("Chromium did not answer within the time limit")
            chunk = os.read(self.out_r, 1 << 20)
            if not chunk:
                raise Failure(f"Chromium closed the DevTools pipe: {tail(open(self.log).read())}")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def cmd(self, method, params=None, session=False, timeout=60):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = self.session
        try:
            os.write(self.cmd_w, json.dumps(msg).encode() + b"\0")
        except BrokenPipeError:
            raise Failure(f"Chromium exited (exit {self.proc.poll()}): {tail(open(self.log).read())}")
        while True:
            m = self._read(timeout)
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise Failure(f"DevTools {method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)

    def wait_event(self, method, timeout=60):
        deadline = time.time() + timeout
        while True:
            for i, e in enumerate(self.events):
                if e.get("method") == method:
                    return self.events.pop(i)
            self.events.append(self._read(max(0.1, deadline - time.time())))

    def open(self, path):
        self.events.clear()
        self.cmd("Page.navigate", {"url": "file://" + path}, session=True)
        self.wait_event("Page.loadEventFired")

    def eval(self, expr):
        r = self.cmd("Runtime.evaluate", {"expression": expr, "returnByValue": True, "awaitPromise": True},
                     session=True)
        if "exceptionDetails" in r:
            raise Failure(f"evaluating {expr[:80]}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def problems(self):
        """Console errors, uncaught exceptions and error log entries (CSP violations, failed loads) so far."""
        self.eval("1")  # flush events queued before this point
        out = []
        for e in self.events:
            m, p = e.get("method"), e.get("params", {})
            if m == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                out.append("exception: " + d.get("exception", {}).get("description", d.get("text", "?"))[:300])
            elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append("console.error: " + json.dumps(p.get("args", []))[:300])
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                out.append("log: " + p["entry"].get("text", "")[:300])
        return out

    def close(self):
        try:
            self.cmd("Browser.close", timeout=10)
        except Failure:
            pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def make_traces(binary, repo, work):
    model = os.path.join(work, "tiny.gguf")
    run_ok(binary, ["make-test-model", "--out", model])
    db = os.path.join(work, "index.db")
    run_ok(binary, ["index", repo, "--db", db, "-q"])
    common = ["--db", db, "--no-refresh", "--model", model, "--cache", os.path.join(work, "llm.db")]
    for p in PARAMS:
        common += ["--param", p]
    retr, gen = os.path.join(work, "retrieval.json"), os.path.join(work, "generation.json")
    run_ok(binary, ["retrieve", repo, "--target", TARGET, "--strategy", "procedural", "--trace", retr, "-q"] + common,
           timeout=1500)
    run_ok(binary, ["generate", repo, "--target", TARGET, "--method", "projagent", "--trace", gen, "--max-tokens",
                    "48", "--max-rounds", "1", "-q"] + common, timeout=1500)
    return retr, gen


def check_page(ck, b, html, sections, label):
    b.open(html)
    ids = b.eval("Array.from(document.querySelectorAll('section')).map(s => s.id)")
    missing = [s for s in sections if s not in ids]
    ck.check(not missing, f"[{label}] a DOM query finds every section", f"missing {missing}; found {ids}")
    ck.check(b.eval("document.querySelectorAll('script[src], link[href], img[src]').length") == 0,
             f"[{label}] nothing to fetch (inline CSS and script only)")
    # Sorting: the usage table's 'calls' column, ascending then descending.
    col = b.eval("""(() => { const t = document.querySelector('#llm-usage table.sortable');
        if (!t) return -1; return Array.from(t.tHead.rows[0].cells).findIndex(c => c.textContent === 'calls'); })()""")
    ck.check(col is not None and col >= 0, f"[{label}] the usage table has a calls column")
    if col is not None and col >= 0:
        values = (f"Array.from(document.querySelector('#llm-usage table.sortable').tBodies[0].rows)"
                  f".map(r => Number(r.cells[{col}].textContent))")
        click = f"document.querySelector('#llm-usage table.sortable').tHead.rows[0].cells[{col}].click()"
        b.eval(click)
        asc = b.eval(values)
        b.eval(click)
        desc = b.eval(values)
        ck.check(len(asc) > 1 and asc == sorted(asc) and desc == sorted(asc, reverse=True),
                 f"[{label}] clicking a header sorts the column (asc, then desc)", f"{asc} / {desc}")
    n = b.eval("document.querySelectorAll('details').length")
    b.eval("document.getElementById('unfold-all').click()")
    opened = b.eval("document.querySelectorAll('details[open]').length")
    ck.check(n > 0 and opened == n, f"[{label}] long texts are folded ({n}) and 'unfold all' opens them", f"{opened}/{n}")
    problems = b.problems()
    ck.check(not problems, f"[{label}] no console error, exception or blocked request", "; ".join(problems[:3]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repoctx", required=True)
    ap.add_argument("--chromium", required=True)
    ap.add_argument("repo")
    a = ap.parse_args()
    if not os.path.exists(a.chromium):
        raise Failure(f"{a.chromium} is missing: run scripts/setup.sh --python-libs (Debian's chromium)")
    ck = Checker()
    with TempDir("repoctx-report-") as work:
        retr, gen = make_traces(a.repoctx, a.repo, work)
        pages = {}
        for label, trace in [("retrieval", retr), ("generation", gen)]:
            out = os.path.join(work, label + ".html")
            run_ok(a.repoctx, ["report", trace, "-o", out, "-q"])
            pages[label] = out
        t = json.load(open(retr))
        t["comment"] = "</script><script>window.pwned = 1</script><img src=x onerror=\"window.pwned = 2\">"
        hostile = os.path.join(work, "hostile.json")
        json.dump(t, open(hostile, "w"))
        run_ok(a.repoctx, ["report", hostile, "-o", os.path.join(work, "hostile.html"), "-q"])
        broken = os.path.join(work, "broken.html")
        open(broken, "w").write("<!doctype html><html><body><section id='x'></section>"
                                "<script>undefinedFunction();</script></body></html>")
        for args, code, what in [([os.path.join(work, "nope.json")], 3, "a missing trace"),
                                 ([os.path.join(work, "tiny.gguf")], 4, "a file that is not JSON"),
                                 ([json_file(work, {"hello": 1})], 4, "JSON that is not a trace")]:
            p = run(a.repoctx, ["report"] + args + ["-o", os.path.join(work, "x.html")])
            ck.check(p.returncode == code, f"report of {what}: exit {code}", f"exit {p.returncode}: {tail(p.stderr)}")
        b = Browser(a.chromium, work)
        try:
            b.open(broken)
            ck.check(any("undefinedFunction" in p for p in b.problems()),
                     "the collector catches a deliberate script error (control)")
            check_page(ck, b, pages["retrieval"], RETRIEVAL_SECTIONS, "retrieval")
            check_page(ck, b, pages["generation"], GENERATION_SECTIONS, "generation")
            b.open(os.path.join(work, "hostile.html"))
            ck.check(b.eval("window.pwned === undefined && document.scripts.length === 1"),
                     "markup in a trace is shown as text and runs nothing")
            ck.check("window.pwned = 1" in b.eval("document.getElementById('other').textContent"),
                     "the markup is visible as text in its section")
        finally:
            b.close()
    return ck.finish("report_chromium")


def json_file(work, obj):
    path = os.path.join(work, "plain.json")
    json.dump(obj, open(path, "w"))
    return path


if __name__ == "__main__":
    sys.exit(main_wrapper("report_chromium", main))
