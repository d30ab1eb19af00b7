#!/usr/bin/env python3
"""scripts/check_layers.py passes on the real tree and fails on a deliberately upward include.

    layer_check.py --checker scripts/check_layers.py --src src

The failing case is a scratch copy of src/ where one early stage includes a later one: the checker must
exit 1 and name the file, the line and both stages; a folder that is not a known stage must fail too.
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
        ck.check("'index' includes later stage 'retrieve'" in out, "both stages are named", out)

        victim.write_text(text)
        (src / "newstage").mkdir()
        (src / "newstage" / "x.cpp").write_text('#include "util/text.h"\n')
        p = run(a.checker, src)
        ck.check(p.returncode == 1 and "not a known stage" in p.stdout, "an unknown folder fails", p.stdout)
    return ck.finish("layer_check")


if __name__ == "__main__":
    sys.exit(main())
