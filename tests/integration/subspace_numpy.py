"""The reasoning subspace against numpy's SVD (Debian's python3-numpy) of the same unembedding matrix.

subspace_numpy.py --repoctx BIN [--llama-src DIR]

Writes a tiny random-weight model (repoctx make-test-model), reads its output.weight with llama.cpp's own
gguf-py reader, and checks that repoctx's singular values, k (energy threshold 0.98 over squared singular
values) and reasoning basis V_R equal what numpy.linalg.svd gives. Exit 0 on agreement, 1 otherwise.
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repoctx", required=True)
    ap.add_argument("--llama-src", default="")
    a = ap.parse_args()
    deps = os.environ.get("REPOCTX_DEPS", os.path.expanduser("~/.cache/repoctx"))
    src = a.llama_src or sorted(glob.glob(os.path.join(deps, "src", "llama.cpp-*")))[-1]
    sys.path.insert(0, os.path.join(src, "gguf-py"))
    from gguf import GGUFReader  # noqa: E402  (llama.cpp's pure-Python GGUF reader)

    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "tiny.gguf")
        subprocess.run([a.repoctx, "make-test-model", "--out", model, "--hidden", "48", "--seed", "3"], check=True,
                       stderr=subprocess.DEVNULL)
        basis_path = os.path.join(tmp, "basis.f32")
        out = subprocess.run([a.repoctx, "subspace", "--model", model, "--cache", os.path.join(tmp, "c.db"), "--fresh",
                              "--json", "--dump-basis", basis_path], check=True, capture_output=True, text=True)
        rep = json.loads(out.stdout)
        reader = GGUFReader(model)
        t = next(t for t in reader.tensors if t.name == "output.weight")
        W = np.asarray(t.data, dtype=np.float64).reshape(int(t.shape[1]), int(t.shape[0]))  # vocab x d
        _, s, vt = np.linalg.svd(W, full_matrices=False)
        ours = np.array(rep["singular_values"])
        rel = np.max(np.abs(ours - s) / s)
        print(f"W {W.shape}: max relative singular value difference {rel:.2e}")
        if rel > 1e-4:
            failures.append(f"singular values differ (max rel {rel:.2e})")
        energy = np.cumsum(s ** 2) / np.sum(s ** 2)
        k = int(np.argmax(energy >= 0.98 - 1e-12)) + 1
        # repoctx keeps at least one reasoning direction (k <= d - 1); a random matrix's flat spectrum
        # reaches 0.98 only with all d directions.
        k = min(k, W.shape[1] - 1)
        print(f"k: repoctx {rep['k']}, numpy {k}; d = {rep['d']}, (d-k)/d = {rep['reasoning_fraction']:.4f}")
        if k != rep["k"]:
            failures.append(f"k differs: {rep['k']} vs {k}")
        d, m = rep["d"], rep["d"] - rep["k"]
        VR = np.fromfile(basis_path, dtype=np.float32).reshape(m, d).T.astype(np.float64)
        expected = vt[k:].T
        diff = np.linalg.norm(VR @ VR.T - expected @ expected.T)
        print(f"projector onto the reasoning subspace: ||P_repoctx - P_numpy|| = {diff:.2e}")
        if diff > 1e-3:
            failures.append(f"reasoning subspace differs (projector distance {diff:.2e})")
    if failures:
        print("subspace_numpy: FAIL: " + "; ".join(failures))
        return 1
    print("subspace_numpy: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
