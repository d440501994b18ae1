#!/usr/bin/env bash
# Per-snapshot cost of `peerpath fleet` against one `peerpath audit` process on the same
# snapshot (issue 18: fleet must cost at most a tenth of an audit per snapshot).
#
# The set: N captures (`peerpath capture`) of the synthesized HGX H100 node, hard-linked (the
# disk holds one file; peerpath still opens, decompresses and scans every input). Measured as
# CPU time (user + system, from bash's `times` for the children), which other processes on a
# busy machine do not inflate the way they inflate wall time; wall time and `uptime` are
# printed too. Audit: N separate `peerpath audit -i SNAPSHOT` processes, as a user runs it
# (device names from the system pci.ids, text output to /dev/null). Fleet: one
# `peerpath fleet -j 1 DIR` over the N snapshots (each capture's recorded fingerprint; the first
# capture of each group scanned and checked), then `peerpath fleet -j 1 --rescan DIR` (every
# snapshot decompressed and scanned, as for snapshots that do not come from `capture`).
#
# Usage: scripts/fleet-cost.sh [N] [PEERPATH_BINARY]
set -euo pipefail
cd "$(dirname "$0")/.."
n="${1:-300}"
bin="${2:-target/release/peerpath}"
[ -x "$bin" ] || cargo build --release --quiet
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$bin" fixture hgx-h100 -o "$work/clean.tar.gz" 2>/dev/null
"$bin" capture -i "$work/clean.tar.gz" -o "$work/snap.tar.gz" 2>/dev/null
mkdir "$work/set"
for k in $(seq -w 1 "$n"); do ln "$work/snap.tar.gz" "$work/set/node$k.tar.gz"; done
# CPU seconds (user + sys) of the finished children of this shell (`times` must run in this
# shell, not in a command substitution, which is a subshell with no children yet).
cpu() {
  times >"$work/times"
  tail -1 "$work/times" | awk '{ split($1,u,"m"); split($2,s,"m"); sub("s","",u[2]); sub("s","",s[2]);
    printf "%.3f", u[1]*60+u[2]+s[1]*60+s[2] }'
}
echo "snapshot: $(stat -c %s "$work/snap.tar.gz") bytes, $n inputs; load before: $(uptime | sed 's/.*load average: //')"
cpu >"$work/c0"; c0=$(cat "$work/c0"); t0=$(date +%s.%N)
for k in $(seq -w 1 "$n"); do "$bin" audit -i "$work/set/node$k.tar.gz" >/dev/null || true; done
cpu >"$work/c1"; c1=$(cat "$work/c1"); t1=$(date +%s.%N)
"$bin" fleet -j 1 "$work/set" >/dev/null
cpu >"$work/c2"; c2=$(cat "$work/c2"); t2=$(date +%s.%N)
"$bin" fleet -j 1 --rescan "$work/set" >/dev/null
cpu >"$work/c3"; c3=$(cat "$work/c3"); t3=$(date +%s.%N)
awk -v n="$n" -v a="$(echo "$c1 - $c0" | bc)" -v f="$(echo "$c2 - $c1" | bc)" \
    -v r="$(echo "$c3 - $c2" | bc)" -v wa="$(echo "$t1 - $t0" | bc)" \
    -v wf="$(echo "$t2 - $t1" | bc)" -v wr="$(echo "$t3 - $t2" | bc)" 'BEGIN {
  printf "audit: %d processes, CPU %.3f s (%.2f ms each), wall %.2f s\n", n, a, 1000*a/n, wa
  printf "fleet: 1 process over %d snapshots, CPU %.3f s (%.3f ms each), wall %.2f s\n", n, f, 1000*f/n, wf
  printf "fleet per snapshot / audit process: %.3f (CPU), %.3f (wall)\n", f/a, wf/wa
  printf "fleet --rescan: CPU %.3f s (%.2f ms each), wall %.2f s; per snapshot / audit: %.3f (CPU), %.3f (wall)\n", r, 1000*r/n, wr, r/a, wr/wa }'
echo "load after: $(uptime | sed 's/.*load average: //')"
