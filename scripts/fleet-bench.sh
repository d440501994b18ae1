#!/usr/bin/env bash
# Fleet benchmark: `peerpath fleet` over N capture tarballs (default 10,000), reporting inputs
# per second and peak resident memory (from `--stats`, which reads VmHWM, and from
# /usr/bin/time -v when installed).
#
# The set: snapshots of a synthesized HGX H100 node captured with `peerpath capture`, plus
# three faulty variants (a NIC trained to x8, a NIC on the other socket, ACS redirect on a GPU
# port). The clean snapshot is hard-linked to fill the set, so the disk holds four files while
# peerpath still opens, decompresses, scans, classifies and audits every one of the N inputs.
#
# Usage: scripts/fleet-bench.sh [N] [PEERPATH_BINARY]
set -euo pipefail
cd "$(dirname "$0")/.."
n="${1:-10000}"
bin="${2:-target/release/peerpath}"
if [ ! -x "$bin" ]; then
  cargo build --release --quiet
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/set"
"$bin" fixture hgx-h100 -o "$work/clean.tar.gz" 2>/dev/null
"$bin" capture -i "$work/clean.tar.gz" -o "$work/clean-capture.tar.gz" 2>/dev/null
i=0
for fault in "link-width=0000:9b:00.0,8" "acs-redirect=0000:bb:00.0"; do
  "$bin" fixture hgx-h100 --fault "$fault" -o "$work/f$i.tar.gz" 2>/dev/null
  "$bin" capture -i "$work/f$i.tar.gz" -o "$work/set/node-fault$i.tar.gz" 2>/dev/null
  i=$((i + 1))
done
"$bin" fixture misplaced-nic -o "$work/mis.tar.gz" 2>/dev/null
"$bin" capture -i "$work/mis.tar.gz" -o "$work/set/node-fault$i.tar.gz" 2>/dev/null
for k in $(seq -w 1 $((n - 3))); do
  ln "$work/clean-capture.tar.gz" "$work/set/node$k.tar.gz"
done
echo "inputs: $(ls "$work/set" | wc -l), snapshot size $(stat -c %s "$work/clean-capture.tar.gz") bytes"
if [ -x /usr/bin/time ]; then
  /usr/bin/time -v "$bin" fleet --stats "$work/set" >"$work/out.txt" 2>"$work/err.txt" || true
  grep -E "peerpath: fleet|Maximum resident|Elapsed" "$work/err.txt"
else
  "$bin" fleet --stats "$work/set" >"$work/out.txt" 2>"$work/err.txt" || true
  grep "peerpath: fleet" "$work/err.txt"
fi
head -8 "$work/out.txt"
