#!/usr/bin/env python3
"""scripts/check_layers.py passes on the real tree and fails on every way out of the declared graph.

    layer_check.py --checker scripts/check_layers.py --src src

The failing cases are scratch copies of src/: an early stage including a later one, the server including the
evaluation (a later stage in the old rank order, outside the graph now), the server's library linking the
benchmarks, an edge nobody includes, and a folder that is not a known stage. Each must exit 1 naming what.
"""
import argparse
import pathlib
import shutil
import subprocess
import sys
import tempfile

from _util import Checker


def run(checker, src):
    return subprocess.run([sys.executable, checker, str(src)], capture_output=True, text=True, timeout=60)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--checker", required=True)
    ap.add_argument("--src", required=True)
    a = ap.parse_args()
    ck = Checker()

    p = run(a.checker, a.src)
    ck.check(p.returncode == 0, "the real tree passes", p.stdout + p.stderr)

    with tempfile.TemporaryDirectory() as tmp:
        src = pathlib.Path(tmp) / "src"
        shutil.copytree(a.src, src)
        victim = src / "index" / "repo_view.cpp"
        ck.check(victim.exists(), "the file to break exists", str(victim))
        text = victim.read_text()
        victim.write_text(text.replace('#include "index/repo_view.h"',
                                       '#include "index/repo_view.h"\n#include "retrieve/engine.h"', 1))
        p = run(a.checker, src)
        out = p.stdout + p.stderr
        ck.check(p.returncode == 1, "an upward include fails (exit 1)", out)
        ck.check("index/repo_view.cpp:2" in out or "repo_view.cpp:" in out, "the file and line are named", out)
        ck.check("stage 'index' includes 'retrieve'" in out, "both stages are named", out)
        victim.write_text(text)

        server = src / "server" / "http_server.cpp"
        server_text = server.read_text()
        server.write_text('#include "eval/runner.h"\n' + server_text)
        p = run(a.checker, src)
        out = p.stdout + p.stderr
        ck.check(p.returncode == 1 and "stage 'server' includes 'eval'" in out,
                 "the server including the evaluation fails", out)
        server.write_text(server_text)

        cmake = src / "CMakeLists.txt"
        cmake_text = cmake.read_text()
        ck.check("DEPENDS repoctx_api Boost::headers" in cmake_text, "the server's DEPENDS line is where expected")
        cmake.write_text(cmake_text.replace("DEPENDS repoctx_api Boost::headers", "DEPENDS repoctx_bench Boost::headers"))
        p = run(a.checker, src)
        out = p.stdout + p.stderr
        ck.check(p.returncode == 1 and "repoctx_server links ['bench']" in out, "the server linking bench fails", out)
        cmake.write_text(cmake_text)

        checker_copy = pathlib.Path(tmp) / "check_layers.py"
        checker_copy.write_text(pathlib.Path(a.checker).read_text().replace('"server": ["api"]',
                                                                            '"server": ["api", "eval"]'))
        p = run(str(checker_copy), src)
        out = p.stdout + p.stderr
        ck.check(p.returncode == 1 and "server -> eval is used by no include" in out, "an idle edge fails", out)

        p = run(a.checker, src)
        ck.check(p.returncode == 0, "the restored copy passes again", p.stdout + p.stderr)

        victim.write_text(text)
        (src / "newstage").mkdir()
        (src / "newstage" / "x.cpp").write_text('#include "util/text.h"\n')
        p = run(a.checker, src)
        ck.check(p.returncode == 1 and "not a known stage" in p.stdout, "an unknown folder fails", p.stdout)
    return ck.finish("layer_check")


if __name__ == "__main__":
    sys.exit(main())
