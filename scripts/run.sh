#!/usr/bin/env bash
# The main job, on a fresh Debian 12 machine: install what is missing, build, then index a real
# repository present on the machine (default: Flask as installed by Debian's python3-flask; any folder of
# Python sources works) and show what repoctx retrieves, and how well each strategy does.
#   scripts/run.sh [REPO] [TARGET]
set -euo pipefail
cd "$(dirname "$0")/.."
repo="${1:-/usr/lib/python3/dist-packages/flask}"
target="${2:-}"
# Only what the engine needs: the Debian packages it builds with and Flask (the default repository), the pinned
# tree-sitter sources; no llama.cpp (no model runs here) and none of the test tools.
scripts/setup.sh --no-llama >/dev/null
# A unity build: each library's sources compiled in batches of 16, a third of the CPU of one compiler run per file
# (headers parsed and templates instantiated once a batch); right for a one-off build, not for editing.
scripts/build.sh --target repoctx -DREPOCTX_BUILD_TESTS=OFF -DREPOCTX_WITH_LLAMA=OFF -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=16
bin=build/bin/repoctx
echo "== repoctx index $repo"
$bin index "$repo"
if [ -z "$target" ]; then
  # A documented method of the repository, picked deterministically.
  target="$($bin symbols "$repo" --kind method --jsonl --no-refresh | /usr/bin/python3 -c '
import json, sys
rows = [json.loads(l) for l in sys.stdin]
rows = [r for r in rows if "test" not in r["file"] and "<locals>" not in r["qualname"]]
rows.sort(key=lambda r: (r["file"], r["start_line"]))
r = rows[len(rows) // 2]
print(r["file"] + "::" + r["qualname"])')"
fi
for s in structural sparse imports; do
  echo "== repoctx retrieve --strategy $s --target $target (its body hidden)"
  $bin retrieve "$repo" --target "$target" --strategy "$s" -k 8 --no-refresh
done
echo "== repoctx eval (Recall@k / MRR against the symbols the real bodies use)"
$bin eval "$repo" --strategies sparse,same-file,imports,structural --samples 200 -q
