"""Shared helpers for the repoctx integration scripts (stdlib only).

Every script takes `--repoctx PATH_TO_BINARY`, prints what it checks, and exits 0 on success and
1 on any failure.  Failures are collected with Checker.check() / Checker.fail() so that one script
reports every problem it found, not only the first.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(HERE))   # tests/integration -> repository root
BINARY_WAIT_S = 30        # the binary may be momentarily missing while someone rebuilds it
BINARY_WAIT_TRIES = 10


class Failure(Exception):
    """A check failed in a way that makes the rest of the script meaningless."""


def wait_for_binary(path):
    """Wait (30 s steps) while the binary is missing, e.g. in the middle of a rebuild."""
    for _ in range(BINARY_WAIT_TRIES):
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return
        print(f"  (binary {path} missing; waiting {BINARY_WAIT_S} s for a rebuild to finish)",
              flush=True)
        time.sleep(BINARY_WAIT_S)
    raise Failure(f"repoctx binary {path} not found or not executable")


def run(binary, args, env=None, timeout=600, user_prefix=(), input_bytes=None):
    """Run `binary args...`; returns CompletedProcess with text stdout/stderr.  Retries when the
    binary is missing (ENOENT / ETXTBSY while being replaced by a rebuild)."""
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    for attempt in range(BINARY_WAIT_TRIES):
        wait_for_binary(binary)
        try:
            return subprocess.run(list(user_prefix) + [binary] + list(args), env=full_env,
                                  capture_output=True, timeout=timeout, input=input_bytes,
                                  errors="replace" if input_bytes is None else None,
                                  text=input_bytes is None)
        except OSError as e:   # ENOENT / ETXTBSY: the binary was being replaced
            print(f"  (could not start {binary}: {e}; retrying in {BINARY_WAIT_S} s)", flush=True)
            time.sleep(BINARY_WAIT_S)
    raise Failure(f"could not start {binary}")


def cmdline(binary, args):
    return " ".join([os.path.basename(binary)] + [a if a and " " not in a and "'" not in a
                                                   else repr(a) for a in args])


def run_ok(binary, args, **kw):
    """run() and require exit 0; returns the CompletedProcess."""
    p = run(binary, args, **kw)
    if p.returncode != 0:
        raise Failure(f"`{cmdline(binary, args)}` exited {p.returncode}\n"
                      f"stderr:\n{tail(p.stderr)}")
    return p


def run_json(binary, args, **kw):
    p = run_ok(binary, args, **kw)
    try:
        return json.loads(p.stdout)
    except json.JSONDecodeError as e:
        raise Failure(f"`{cmdline(binary, args)}`: output is not JSON ({e}):\n{tail(p.stdout)}")


def run_jsonl(binary, args, **kw):
    p = run_ok(binary, args, **kw)
    out = []
    for n, line in enumerate(p.stdout.splitlines(), 1):
        if line.strip():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise Failure(f"`{cmdline(binary, args)}`: line {n} is not JSON ({e}): {line[:200]}")
    return out


def tail(text, n=3000):
    text = text or ""
    return text if len(text) <= n else "..." + text[-n:]


class Checker:
    """Collects failures; prints one line per check."""

    def __init__(self):
        self.failures = []
        self.passed = 0

    def check(self, cond, what, detail=""):
        if cond:
            self.passed += 1
            print(f"  ok    {what}", flush=True)
        else:
            self.failures.append(what + (f": {detail}" if detail else ""))
            print(f"  FAIL  {what}" + (f"\n        {detail}" if detail else ""), flush=True)
        return bool(cond)

    def fail(self, what, detail=""):
        return self.check(False, what, detail)

    def finish(self, name):
        print()
        if self.failures:
            print(f"{name}: FAILED ({len(self.failures)} failed, {self.passed} passed)")
            for f in self.failures:
                print(f"  - {f.splitlines()[0] if f else f}")
            return 1
        print(f"{name}: OK ({self.passed} checks passed)")
        return 0


class TempDir:
    """tempfile.mkdtemp that is removed on exit even if it holds read-only or foreign-owned parts."""

    def __init__(self, prefix):
        self.path = tempfile.mkdtemp(prefix=prefix)

    def __enter__(self):
        return self.path

    def __exit__(self, *exc):
        remove_tree(self.path)
        return False


def remove_tree(path):
    def onerror(func, p, _exc):
        try:
            os.chmod(os.path.dirname(p), 0o700)
            os.chmod(p, 0o700)
        except OSError:
            pass
        try:
            func(p)
        except OSError:
            pass
    if os.path.islink(path) or os.path.isfile(path):
        os.remove(path)
    elif os.path.isdir(path):
        shutil.rmtree(path, onerror=onerror)



def free_port():
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class LlamaServer:
    """A real llama-server on 127.0.0.1 started from `argv` (which holds `port`), healthy when the constructor
    returns; a context manager that stops it (SIGTERM, then SIGKILL after 30 s)."""

    def __init__(self, argv, port, log_path, wait_s=60):
        self.argv, self.port = list(argv), port
        self.log = open(log_path, "w")
        self.proc = subprocess.Popen(self.argv, stdout=self.log, stderr=self.log)
        deadline = time.time() + wait_s
        while time.time() < deadline:
            try:
                if urllib.request.urlopen(f"{self.root}/health", timeout=1).status == 200:
                    return
            except Exception:
                if self.proc.poll() is not None:
                    break
                time.sleep(0.2)
        self.stop()
        raise Failure(f"llama-server ({' '.join(self.argv)}) did not become healthy in {wait_s} s: "
                      f"{tail(open(log_path, errors='replace').read(), 1500)}")

    @property
    def root(self):
        return f"http://127.0.0.1:{self.port}"

    @property
    def endpoint(self):
        """The OpenAI-compatible base URL repoctx's --endpoint takes."""
        return f"{self.root}/v1"

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def start_llama_server(server_bin, model, log_path, *extra):
    """llama-server serving `model` on a free loopback port with the extra flags given."""
    port = free_port()
    return LlamaServer([server_bin, "-m", model, "--host", "127.0.0.1", "--port", str(port), *extra], port, log_path)

def main_wrapper(name, body):
    """Run body() -> exit status; a Failure or an unexpected exception exits 1 with a message."""
    t0 = time.time()
    try:
        status = body()
    except Failure as e:
        print(f"\n{name}: FAILED: {e}")
        status = 1
    except subprocess.TimeoutExpired as e:
        print(f"\n{name}: FAILED: command timed out: {e}")
        status = 1
    except KeyboardInterrupt:
        print(f"\n{name}: interrupted")
        status = 1
    print(f"({name} took {time.time() - t0:.1f} s)")
    return status
