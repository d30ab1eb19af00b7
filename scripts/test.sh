#!/usr/bin/env bash
# Installs what is missing (Debian packages, npm sources, the Debian-packaged libraries the tests run
# on, the test tools: headless Chromium, ripgrep, the MCP client SDK), builds repoctx with its tests, and
# runs every test with ctest. Exit status = ctest's.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --python-libs --test-tools
# With llama.cpp (the tests run the real runtime) and one object per file (ccache and edits stay cheap), whatever
# an earlier `scripts/run.sh` left in build/'s cache.
scripts/build.sh -DREPOCTX_BUILD_TESTS=ON -DREPOCTX_WITH_LLAMA=ON -DCMAKE_UNITY_BUILD=OFF
cd build
ctest --output-on-failure -j "${REPOCTX_TEST_JOBS:-2}" "$@"
