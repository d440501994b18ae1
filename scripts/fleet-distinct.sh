#!/usr/bin/env bash
# Per-snapshot cost of `peerpath fleet` against one `peerpath audit -i` process per snapshot,
# on N distinct snapshots of one layout (issue 31). Each snapshot is `peerpath fixture LAYOUT`
# with the first GPU's correctable AER counter set to its number (1..N), so no two inputs
# have the same bytes; with MOVE (a `--fault move=BDF,NUMA`), snapshot N/2 also has that card
# moved, and the fleet must name it as the one outlier.
#
# Measured as CPU time (user + system of the child processes, bash's `times`), which other
# load on a shared machine inflates less than wall time; wall time and `uptime` are printed
# too. Audit: N separate `peerpath audit -i SNAPSHOT` processes (device names from the system
# pci.ids, text to /dev/null), as a user runs it. Fleet: one `peerpath fleet -j 1 DIR`. The
# fixtures carry no capture manifest, so every one is decompressed and scanned. With
# CAPTURES=1 the snapshots are first re-written by `peerpath capture` (what a cluster's
# per-node step writes: the files the scanner reads, and the recorded fingerprint), and the
# fleet is run twice: as is (recorded fingerprints) and with --rescan (every capture scanned).
#
# Usage: scripts/fleet-distinct.sh [N] [LAYOUT] [MOVE] [PEERPATH_BINARY]
#   e.g. scripts/fleet-distinct.sh 100 hgx-h100
#        scripts/fleet-distinct.sh 100 hgx-b300 move=0000:5d:00.0,1
set -euo pipefail
cd "$(dirname "$0")/.."
n="${1:-100}"
layout="${2:-hgx-h100}"
move="${3:-}"
bin="${4:-target/release/peerpath}"
[ -x "$bin" ] || cargo build --release --quiet
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$bin" fixture "$layout" -o "$work/probe.tar.gz" 2>/dev/null
gpu=$("$bin" scan -i "$work/probe.tar.gz" | grep -o -m1 'GPU [0-9a-f]*:[0-9a-f:.]*' | cut -d' ' -f2)
mkdir "$work/set"
odd=$(( n / 2 ))
for k in $(seq 1 "$n"); do
  name=$(printf 'node%05d' "$k")
  faults=(--fault "aer=$gpu,$k,0,0")
  if [ -n "$move" ] && [ "$k" = "$odd" ]; then faults+=(--fault "$move"); fi
  "$bin" fixture "$layout" "${faults[@]}" -o "$work/set/$name.tar.gz" 2>/dev/null
  if [ "${CAPTURES:-0}" = 1 ]; then
    "$bin" capture -i "$work/set/$name.tar.gz" -o "$work/$name.cap.tar.gz" 2>/dev/null
    mv "$work/$name.cap.tar.gz" "$work/set/$name.tar.gz"
  fi
done
cpu() {
  times >"$work/times"
  tail -1 "$work/times" | awk '{ split($1,u,"m"); split($2,s,"m"); sub("s","",u[2]); sub("s","",s[2]);
    printf "%.3f", u[1]*60+u[2]+s[1]*60+s[2] }'
}
first="$work/set/node00001.tar.gz"
echo "$n distinct snapshots of $layout (AER on GPU $gpu)${move:+, node$(printf '%05d' "$odd") also $move}; snapshot $(stat -c %s "$first") bytes, $(zcat "$first" | wc -c) uncompressed"
echo "load before: $(uptime | sed 's/.*load average: //')"
cpu >"$work/c0"; c0=$(cat "$work/c0"); t0=$(date +%s.%N)
for f in "$work"/set/*.tar.gz; do "$bin" audit -i "$f" >/dev/null || true; done
cpu >"$work/c1"; c1=$(cat "$work/c1"); t1=$(date +%s.%N)
"$bin" fleet -j 1 "$work/set" >"$work/fleet.txt" || true
cpu >"$work/c2"; c2=$(cat "$work/c2"); t2=$(date +%s.%N)
rescan=
if [ "${CAPTURES:-0}" = 1 ]; then
  "$bin" fleet -j 1 --rescan "$work/set" >/dev/null || true
  cpu >"$work/c3"; c3=$(cat "$work/c3"); t3=$(date +%s.%N)
  rescan=1
fi
awk -v n="$n" -v a="$(echo "$c1 - $c0" | bc)" -v f="$(echo "$c2 - $c1" | bc)" \
    -v wa="$(echo "$t1 - $t0" | bc)" -v wf="$(echo "$t2 - $t1" | bc)" 'BEGIN {
  printf "audit: %d processes, CPU %.3f s (%.2f ms each), wall %.2f s\n", n, a, 1000*a/n, wa
  printf "fleet -j 1: CPU %.3f s (%.2f ms per snapshot), wall %.2f s\n", f, 1000*f/n, wf
  printf "fleet per snapshot / audit process: %.3f (CPU), %.3f (wall)\n", f/a, wf/wa }'
if [ -n "$rescan" ]; then
  awk -v n="$n" -v a="$(echo "$c1 - $c0" | bc)" -v r="$(echo "$c3 - $c2" | bc)" \
      -v wa="$(echo "$t1 - $t0" | bc)" -v wr="$(echo "$t3 - $t2" | bc)" 'BEGIN {
    printf "fleet -j 1 --rescan: CPU %.3f s (%.2f ms per snapshot), wall %.2f s; per snapshot / audit: %.3f (CPU), %.3f (wall)\n", r, 1000*r/n, wr, r/a, wr/wa }'
fi
echo "load after: $(uptime | sed 's/.*load average: //')"
echo "fleet says:"
sed -n '1,/^$/p' "$work/fleet.txt" | head -6
grep -E '^[0-9a-f]{16} \(' "$work/fleet.txt" || true
