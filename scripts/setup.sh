#!/usr/bin/env bash
# repoctx setup: installs what is missing, never anything into the checkout.
#
#   scripts/setup.sh [--no-apt] [--no-llama] [--python-libs] [--test-tools]
#
# 1. Debian packages (apt), pinned to the versions in scripts/apt.lock when the mirror still has them, by
#    group (apt.lock's head): always what the engine builds with and Flask (the main job's repository); `llama`
#    unless --no-llama; `python` (the Debian-packaged libraries the tests run on) only with --python-libs;
#    `test` (test frameworks, a Slurm cluster, clang, headless Chromium, ripgrep) and `npm` (when no npm is on
#    PATH) only with --test-tools.
# 2. npm source packages (tree-sitter core and grammars, node-llama-cpp for llama.cpp's source), pinned and
#    integrity-checked against scripts/deps.lock (fetched by `npm pack`, or from the registry by their
#    published address when there is no npm), unpacked under $REPOCTX_DEPS (default ~/.cache/repoctx);
#    with --test-tools a C# test corpus (react-native-windows) and the MCP client SDK for tests and
#    benchmarks with its locked dependency tree under $REPOCTX_DEPS/node.
# 3. llama.cpp built once into a versioned prefix $REPOCTX_DEPS/llama.cpp-<commit>-<variant> and reused
#    (--no-llama: neither its source nor its build; the engine's commands do not need it).
#
# Re-running is cheap: every step checks a stamp file first. Exit codes: 0 ok, 2 bad usage,
# 3 apt failed, 4 npm fetch/verify failed, 5 llama.cpp build failed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
DEPS="${REPOCTX_DEPS:-$HOME/.cache/repoctx}"
do_apt=1
do_llama=1
python_libs=0
test_tools=0
for arg in "$@"; do
  case "$arg" in
    --no-apt) do_apt=0 ;;
    --no-llama) do_llama=0 ;;
    --python-libs) python_libs=1 ;;
    --test-tools) test_tools=1 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown option '$arg' (see --help)" >&2; exit 2 ;;
  esac
done

log() { printf '[setup] %s\n' "$*" >&2; }
mkdir -p "$DEPS/src" "$DEPS/tmp"
exec 9>"$DEPS/.setup.lock"
flock 9  # two setups at once (CI and a shell) must not unpack into the same folder

# ---------------------------------------------------------------- apt
apt_install() {
  local lock="$here/apt.lock" want=() missing=() pinned=()
  while read -r line; do
    line="${line%%#*}"; [ -n "${line// }" ] || continue
    local group="${line%%:*}" spec="${line#*:}"
    spec="$(echo "$spec" | xargs)"
    [ "$group" = "python" ] && [ "$python_libs" = 0 ] && continue
    [ "$group" = "test" ] && [ "$test_tools" = 0 ] && continue
    [ "$group" = "llama" ] && [ "$do_llama" = 0 ] && continue
    [ "$group" = "npm" ] && { [ "$test_tools" = 0 ] || command -v npm >/dev/null 2>&1; } && continue
    want+=("$spec")
  done < "$lock"
  for spec in "${want[@]}"; do
    local pkg="${spec%%=*}"
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$pkg"); pinned+=("$spec")
    fi
  done
  [ ${#missing[@]} -eq 0 ] && { log "apt: all ${#want[@]} packages present"; return 0; }
  log "apt: installing ${missing[*]}"
  local SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq || { log "apt-get update failed: check network access to the Debian mirror"; exit 3; }
  # force-unsafe-io: dpkg skips its fsync per unpacked file (what Debian's container images set); installing a
  # few hundred packages on a fresh machine takes a fraction of the time.
  local opts=(-y --no-install-recommends -o Dpkg::Options::=--force-unsafe-io)
  if ! DEBIAN_FRONTEND=noninteractive $SUDO apt-get install "${opts[@]}" "${pinned[@]}"; then
    # Debian mirrors keep only the newest point release of a suite; a pinned version can vanish.
    log "apt: pinned versions unavailable, installing the suite's current versions (see scripts/apt.lock)"
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install "${opts[@]}" "${missing[@]}" \
      || { log "apt-get install failed for: ${missing[*]}"; exit 3; }
  fi
}
[ "$do_apt" = 1 ] && apt_install

# ---------------------------------------------------------------- npm sources
npm_fetch() {  # name version integrity -> $DEPS/src/<name>-<version>/
  local name="$1" ver="$2" integrity="$3" dest="$DEPS/src/$1-$2"
  [ -f "$dest/.repoctx-ok" ] && return 0
  log "npm: fetching $name@$ver"
  local tmp; tmp="$(mktemp -d "$DEPS/tmp/npm.XXXXXX")"
  if command -v npm >/dev/null 2>&1; then
    (cd "$tmp" && npm pack --silent "$name@$ver" >/dev/null 2>"$tmp/err") \
      || { cat "$tmp/err" >&2; log "npm pack $name@$ver failed: is the npm registry reachable?"; exit 4; }
  else
    # No npm (a pristine Debian): the tarball's published address on the registry, <name>/-/<base>-<ver>.tgz;
    # the integrity check below is the same either way.
    local registry="${npm_config_registry:-https://registry.npmjs.org}"
    local url="${registry%/}/$name/-/${name##*/}-$ver.tgz"
    python3 -c 'import sys, urllib.request, shutil
with urllib.request.urlopen(sys.argv[1], timeout=120) as r, open(sys.argv[2], "wb") as f: shutil.copyfileobj(r, f)' \
      "$url" "$tmp/package.tgz" 2>"$tmp/err" \
      || { cat "$tmp/err" >&2; log "downloading $url failed: is the npm registry reachable?"; exit 4; }
  fi
  local tgz; tgz="$(ls "$tmp"/*.tgz)"
  local got="sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)"
  if [ "$got" != "$integrity" ]; then
    log "npm: integrity mismatch for $name@$ver: expected $integrity, got $got"; exit 4
  fi
  rm -rf "$dest"; mkdir -p "$dest"
  tar xzf "$tgz" -C "$dest" --strip-components=1
  cp "$tgz" "$dest/.package.tgz"
  touch "$dest/.repoctx-ok"
  rm -rf "$tmp"
}
# An npm tool with dependencies (the MCP client SDK): the whole tree from a committed lock file whose entry for
# the package must carry the integrity pinned in deps.lock; `npm ci` checks every package's integrity.
node_install() {  # name version integrity -> $DEPS/node/<lock folder>-<version>/node_modules
  local name="$1" ver="$2" integrity="$3" lockdir="$here/npm/mcp-client"
  local dest="$DEPS/node/mcp-client-$ver"
  [ -f "$dest/.repoctx-ok" ] && return 0
  command -v npm >/dev/null || { log "npm: not installed (needed for $name)"; exit 4; }
  local locked
  locked="$(node -e 'const l=require(process.argv[1]); const p=l.packages["node_modules/"+process.argv[2]];
    console.log(p.version+" "+p.integrity)' "$lockdir/package-lock.json" "$name")"
  if [ "$locked" != "$ver $integrity" ]; then
    log "npm: $lockdir/package-lock.json pins $name as '$locked', deps.lock as '$ver $integrity'"; exit 4
  fi
  log "npm: installing $name@$ver and its dependencies (npm ci)"
  rm -rf "$dest"; mkdir -p "$dest"
  cp "$lockdir/package.json" "$lockdir/package-lock.json" "$dest/"
  (cd "$dest" && npm ci --ignore-scripts --no-audit --no-fund --silent) \
    || { log "npm ci for $name@$ver failed: is the npm registry reachable?"; exit 4; }
  touch "$dest/.repoctx-ok"
}
while read -r name ver integ; do
  case "$name" in
    ''|'#'*) continue ;;
    node-llama-cpp) if [ "$do_llama" = 1 ]; then npm_fetch "$name" "$ver" "$integ"; fi ;;
    @*) if [ "$test_tools" = 1 ]; then node_install "$name" "$ver" "$integ"; fi ;;
    react-native-windows) if [ "$test_tools" = 1 ]; then npm_fetch "$name" "$ver" "$integ"; fi ;;
    *) npm_fetch "$name" "$ver" "$integ" ;;
  esac
done < "$here/deps.lock"

# ---------------------------------------------------------------- llama.cpp
# shellcheck source=llama.lock
. "$here/llama.lock"
llama_src="$DEPS/src/llama.cpp-$LLAMA_COMMIT"
llama_prefix="$DEPS/llama.cpp-$LLAMA_COMMIT-${REPOCTX_LLAMA_VARIANT:-cpu}"
build_llama() {
  if [ ! -f "$llama_src/.repoctx-ok" ]; then
    local pkg="$DEPS/src/node-llama-cpp-$NODE_LLAMA_CPP_VERSION/.package.tgz"
    local tmp; tmp="$(mktemp -d "$DEPS/tmp/llama.XXXXXX")"
    tar xzf "$pkg" -C "$tmp" package/llama/gitRelease.bundle
    local got; got="$(sha256sum "$tmp/package/llama/gitRelease.bundle" | cut -d' ' -f1)"
    [ "$got" = "$LLAMA_BUNDLE_SHA256" ] || { log "llama.cpp bundle sha256 mismatch: $got"; exit 4; }
    rm -rf "$llama_src"
    git -c advice.detachedHead=false clone -q "$tmp/package/llama/gitRelease.bundle" "$llama_src"
    (cd "$llama_src" && git -c advice.detachedHead=false checkout -q "$LLAMA_COMMIT")
    touch "$llama_src/.repoctx-ok"; rm -rf "$tmp"
  fi
  if [ ! -f "$llama_prefix/.repoctx-ok" ]; then
    local jobs="${REPOCTX_JOBS:-$(nproc)}"
    local gpu_flags=()
    [ "${REPOCTX_LLAMA_VARIANT:-cpu}" = cuda ] && gpu_flags=(-DGGML_CUDA=ON)
    log "llama.cpp: building $LLAMA_COMMIT into $llama_prefix (once; 5-10 min on 2 cores)"
    cmake -S "$llama_src" -B "$llama_prefix.build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_INSTALL_PREFIX="$llama_prefix" -DBUILD_SHARED_LIBS=ON \
      -DCMAKE_INSTALL_RPATH="$llama_prefix/lib" -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON \
      -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_COMMON=ON -DLLAMA_BUILD_TOOLS=ON \
      -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_APP=OFF -DLLAMA_TOOLS_INSTALL=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
      -DLLAMA_OPENSSL=OFF -DGGML_CCACHE=OFF -DGGML_NATIVE=OFF \
      "${gpu_flags[@]}" >"$DEPS/tmp/llama-configure.log" 2>&1 \
      || { tail -30 "$DEPS/tmp/llama-configure.log" >&2; log "llama.cpp configure failed"; exit 5; }
    cmake --build "$llama_prefix.build" -j "$jobs" --target llama llama-common llama-server \
      >"$DEPS/tmp/llama-build.log" 2>&1 \
      || { tail -30 "$DEPS/tmp/llama-build.log" >&2; log "llama.cpp build failed (log: $DEPS/tmp/llama-build.log)"; exit 5; }
    cmake --install "$llama_prefix.build" >"$DEPS/tmp/llama-install.log" 2>&1 \
      || { tail -30 "$DEPS/tmp/llama-install.log" >&2; log "llama.cpp install failed"; exit 5; }
    # llama-common (JSON schema -> GBNF grammar) has no installed headers upstream; ship the ones we use.
    mkdir -p "$llama_prefix/bin" "$llama_prefix/include/llama-common" "$llama_prefix/share/vocab"
    cp "$llama_src"/common/*.h "$llama_prefix/include/llama-common/"
    cp "$llama_prefix.build/bin/llama-server" "$llama_prefix/bin/"
    # llama-server links helper libraries that `cmake --install` does not install (LLAMA_TOOLS_INSTALL=OFF).
    cp -a "$llama_prefix.build"/bin/*.so* "$llama_prefix/lib/"
    "$llama_prefix/bin/llama-server" --version >/dev/null 2>&1 \
      || { log "llama.cpp: the built llama-server does not run (missing libraries?)"; exit 5; }
    cp "$llama_src"/models/ggml-vocab-qwen2.gguf "$llama_src"/models/ggml-vocab-llama-spm.gguf \
      "$llama_prefix/share/vocab/"
    touch "$llama_prefix/.repoctx-ok"
    rm -rf "$llama_prefix.build"
  fi
  log "llama.cpp: $llama_prefix"
}
[ "$do_llama" = 1 ] && build_llama

echo "$DEPS"
