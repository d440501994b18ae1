#!/usr/bin/env bash
# Builds a Debian root holding a newer Slurm (slurmctld, slurmd, slurm-client) from Debian's own
# packages, for tests/consumer_slurm_topology.rs: Debian 12 (the CI image) carries Slurm 22.05,
# which has neither topology/block nor topology.yaml; trixie carries 24.11 (topology/block),
# sid 25.05+ (topology.yaml).
#
# Usage: chroot.sh SUITE [ROOT]      SUITE: trixie | sid; ROOT defaults to target/slurm-SUITE
# Idempotent: a finished root carries the stamp ROOT/.peerpath-root (suite, packages, Slurm's
# version); with it present nothing is downloaded. A root is built beside ROOT and renamed
# into place only once complete, so an interrupted build never leaves a stamped half-root.
# Needs root and mmdebstrap (apt-get install mmdebstrap), and network access to the mirror
# ($PEERPATH_DEBIAN_MIRROR, default http://deb.debian.org/debian).
#
# No daemon starts at install: mmdebstrap puts a policy-rc.d refusing every start (and a
# start-stop-daemon that does nothing) in the root for the install and removes them after
# (its default hooks), so slurmctld/slurmd's package scripts start nothing. The daemons run
# only under tests/slurm/topology.sh, inside the test's mount and PID namespaces.
set -euo pipefail
SUITE=${1:?usage: chroot.sh SUITE [ROOT]}
case $SUITE in
  trixie | sid) ;;
  *) echo "chroot.sh: suite '$SUITE' is not one the tests use (trixie, sid)" >&2; exit 2 ;;
esac
REPO=$(cd "$(dirname "$0")/../.." && pwd)
ROOT=${2:-$REPO/target/slurm-$SUITE}
MIRROR=${PEERPATH_DEBIAN_MIRROR:-http://deb.debian.org/debian}
PKGS=slurmctld,slurmd,slurm-client
STAMP=$ROOT/.peerpath-root
WANT="suite=$SUITE packages=$PKGS"
if [ -f "$STAMP" ] && [ "$(head -1 "$STAMP")" = "$WANT" ]; then
  echo "chroot.sh: $ROOT is built ($(sed -n 2p "$STAMP")); nothing to do"
  exit 0
fi
if [ "$(id -u)" != 0 ]; then echo "chroot.sh: needs root (mmdebstrap's root mode)" >&2; exit 2; fi
command -v mmdebstrap >/dev/null || { echo "chroot.sh: needs mmdebstrap (apt-get install mmdebstrap)" >&2; exit 2; }
mkdir -p "$(dirname "$ROOT")"
exec 9>"$ROOT.lock"
flock 9
# Another build may have finished while this one waited for the lock.
if [ -f "$STAMP" ] && [ "$(head -1 "$STAMP")" = "$WANT" ]; then exit 0; fi
# Only a root this script built (stamped, for other packages or a suite since changed) is
# replaced; any other existing directory is refused, never removed.
if [ -e "$ROOT" ] && [ ! -f "$STAMP" ]; then
  echo "chroot.sh: $ROOT exists and is not a root chroot.sh built (no $STAMP); refusing to replace it" >&2
  exit 2
fi
rm -rf "$ROOT.partial" "$ROOT"
start=$(date +%s)
# variant apt: Essential packages and apt, then the three Slurm packages and their Depends
# (no Recommends); documentation and translations left out. Check-Valid-Until off: a mirror
# snapshot older than the Release file's Valid-Until date (sid's is one week) is still
# Debian's signed archive, and the build must not fail on the clock.
mmdebstrap --variant=apt \
  --aptopt='Apt::Install-Recommends "false"' \
  --aptopt='Acquire::Check-Valid-Until "false"' \
  --dpkgopt='path-exclude=/usr/share/doc/*' \
  --dpkgopt='path-exclude=/usr/share/man/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' \
  --include="$PKGS" \
  "$SUITE" "$ROOT.partial" "$MIRROR"
version=$(chroot "$ROOT.partial" slurmctld -V)
printf '%s\n%s\nbuilt in %ss\n' "$WANT" "$version" "$(($(date +%s) - start))" > "$ROOT.partial/.peerpath-root"
mv "$ROOT.partial" "$ROOT"
echo "chroot.sh: $ROOT holds $version (built in $(($(date +%s) - start))s)"
