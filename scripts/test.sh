#!/usr/bin/env bash
# Installs what is missing (Debian packages, npm sources, the Debian-packaged libraries the tests run
# on, the test tools: headless Chromium, ripgrep, the MCP client SDK), builds repoctx with its tests, and
# runs every test with ctest. Exit status = ctest's.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --python-libs --test-tools
scripts/build.sh -DREPOCTX_BUILD_TESTS=ON -DCMAKE_UNITY_BUILD=OFF  # one object per file: ccache and edits stay cheap
cd build
ctest --output-on-failure -j "${REPOCTX_TEST_JOBS:-2}" "$@"
