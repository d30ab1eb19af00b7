#!/usr/bin/env bash
# The README's two commands on a pristine Debian 12: a minimal bookworm system made by debootstrap
# (--variant=minbase: no compiler, no git, no npm, no Python libraries), a clone of this checkout copied into
# it, then `scripts/run.sh` and `scripts/test.sh` run as root inside it (its own mount namespace whose root
# is the new tree), each timed. Nothing is
# cached between runs: the chroot is new each time. Needs only the Debian mirror and the npm registry.
#
#   scripts/pristine.sh [--main-only] [DIR]     (root; DIR defaults to a new folder under /var/tmp)
#
# Prints one line per stage with its wall time and writes them to DIR/timings.tsv. Exit 0 when both
# commands exit 0; otherwise the failing command's status (its log is DIR/<command>.log).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
main_only=0
dir=""
for arg in "$@"; do
  case "$arg" in
    --main-only) main_only=1 ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    -*) echo "pristine.sh: unknown option '$arg' (see --help)" >&2; exit 2 ;;
    *) dir="$arg" ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "pristine.sh: needs root (debootstrap, chroot, mounts)" >&2; exit 2; }
command -v debootstrap >/dev/null || { echo "pristine.sh: needs debootstrap (apt-get install debootstrap)" >&2; exit 2; }
dir="${dir:-$(mktemp -d /var/tmp/repoctx-pristine.XXXXXX)}"
root="$dir/root"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
mkdir -p "$dir"
: > "$dir/timings.tsv"

mounted=()
cleanup() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[i]}" 2>/dev/null || true; done
}
trap cleanup EXIT
timed() {  # label command... -> runs it, records wall seconds; returns its status
  local label="$1"; shift
  local t0 t1 rc=0
  t0=$(date +%s)
  "$@" || rc=$?
  t1=$(date +%s)
  printf '%s\t%d\t%d\n' "$label" $((t1 - t0)) "$rc" | tee -a "$dir/timings.tsv"
  return $rc
}

timed debootstrap debootstrap --variant=minbase bookworm "$root" "$mirror" >"$dir/debootstrap.log" 2>&1 \
  || { echo "pristine.sh: debootstrap failed (log: $dir/debootstrap.log)" >&2; exit 3; }
# The sources a Debian 12 installation has: the release, its updates and its security updates.
cat > "$root/etc/apt/sources.list" <<EOF
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main
EOF
cp /etc/resolv.conf "$root/etc/resolv.conf"
# Certificate authorities this machine's administrator added (e.g. a TLS-inspecting proxy's): a user's machine
# trusts them the same way; Debian's ca-certificates adds them to the store when setup installs it.
mkdir -p "$root/usr/local/share/ca-certificates"
cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/" 2>/dev/null || true
# The new root is a mount point of its own, as a booted system's is: bubblewrap (the test sandbox) remounts /
# as a slave before it pivots, which fails on a plain folder.
mount --bind "$root" "$root"
mount --make-private "$root"
mounted+=("$root")
for m in proc sys dev dev/pts dev/shm; do
  mkdir -p "$root/$m"
  case "$m" in
    proc) mount -t proc proc "$root/proc" ;;
    sys) mount --rbind /sys "$root/sys" ;;
    dev/shm) mount -t tmpfs -o mode=1777 shm "$root/dev/shm" ;;
    *) mount --bind "/$m" "$root/$m" ;;
  esac
  mounted+=("$root/$m")
done
# The committed tree, as a clean clone has it (git archive: no build folders, no untracked files).
mkdir -p "$root/root/repoctx"
git -C "$here" archive HEAD | tar -x -C "$root/root/repoctx"

in_root() {  # runs a README command as the new system's root, with a login-like environment
  # The new tree becomes the root of a mount namespace of its own (pivot_root), not a chroot: the kernel
  # refuses a user namespace to a chrooted process, and the sandbox tests create one as an unprivileged user,
  # as they can on a booted Debian 12.
  unshare --mount --propagation private -- /bin/sh -c '
    cd "$1" && mkdir -p .old-root && pivot_root . .old-root || exit 125
    cd / && umount -l /.old-root && rmdir /.old-root
    shift
    exec /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
      PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      /bin/bash -c "cd /root/repoctx && exec \"\$@\"" bash "$@"' sh "$root" "$@"
}
rc=0
timed run.sh in_root scripts/run.sh >"$dir/run.sh.log" 2>&1 || rc=$?
if [ $rc != 0 ]; then tail -30 "$dir/run.sh.log" >&2; exit $rc; fi
if [ $main_only = 0 ]; then
  timed test.sh in_root scripts/test.sh >"$dir/test.sh.log" 2>&1 || rc=$?
  if [ $rc != 0 ]; then tail -40 "$dir/test.sh.log" >&2; exit $rc; fi
fi
echo "pristine.sh: ok ($dir/timings.tsv)"
