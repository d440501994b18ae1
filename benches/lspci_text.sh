#!/bin/sh
# Paired benchmark (issue 39): peerpath reading an `lspci -vvv` of a synthesized node against
# `lspci -vvv` printing it from the same tree. Whole processes, output to /dev/null, the two
# commands alternating in each round (which goes first alternates too), medians.
#
# usage: benches/lspci_text.sh [ROUNDS] [LAYOUT] [PEERPATH]
#   ROUNDS    paired rounds (default 21)
#   LAYOUT    a `peerpath fixture` layout (default scaling-1024: about 1,024 functions)
#   PEERPATH  the binary (default target/release/peerpath; build with `cargo build --release`)
# Needs lspci (pciutils). Prints `uptime` before and after: the figures are only comparable at
# the same load.
set -eu
ROUNDS=${1:-21}
LAYOUT=${2:-scaling-1024}
PP=${3:-target/release/peerpath}
[ -x "$PP" ] || { echo "no $PP: cargo build --release first" >&2; exit 2; }
command -v lspci >/dev/null || { echo "lspci (pciutils) is not installed" >&2; exit 2; }
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
"$PP" fixture "$LAYOUT" -o "$W/root" >/dev/null
L="lspci -A linux-sysfs -O sysfs.path=$W/root/sys/bus/pci"
$L -vvv >"$W/vvv.txt" 2>/dev/null
FUNCS=$(grep -cE '^([0-9a-f]{4,8}:)?[0-9a-f]{2}:[0-9a-f]{2}\.[0-7] ' "$W/vvv.txt" || true)
echo "layout $LAYOUT: $FUNCS functions, $(wc -c <"$W/vvv.txt") bytes of lspci -vvv"
echo "before: $(uptime)"
now() { date +%s%N; }
: >"$W/lspci.ns"
: >"$W/scan.ns"
: >"$W/audit.ns"
i=0
while [ "$i" -lt "$ROUNDS" ]; do
	one_lspci() { t=$(now); $L -vvv >/dev/null 2>&1; echo $(($(now) - t)) >>"$W/lspci.ns"; }
	one_scan() { t=$(now); "$PP" scan -i "$W/vvv.txt" --format json >/dev/null 2>&1; echo $(($(now) - t)) >>"$W/scan.ns"; }
	one_audit() { t=$(now); "$PP" audit -i "$W/vvv.txt" >/dev/null 2>&1 || true; echo $(($(now) - t)) >>"$W/audit.ns"; }
	if [ $((i % 2)) -eq 0 ]; then one_lspci; one_scan; one_audit; else one_audit; one_scan; one_lspci; fi
	i=$((i + 1))
done
echo "after:  $(uptime)"
median() { sort -n "$1" | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.1f", m/1e6}'; }
ML=$(median "$W/lspci.ns")
MS=$(median "$W/scan.ns")
MA=$(median "$W/audit.ns")
echo "lspci -vvv (print from the tree):          median $ML ms over $ROUNDS rounds"
echo "peerpath scan -i vvv.txt --format json:    median $MS ms"
echo "peerpath audit -i vvv.txt:                 median $MA ms"
awk -v s="$MS" -v l="$ML" -v a="$MA" 'BEGIN { printf "ratio scan/lspci %.2f, audit/lspci %.2f (goal: scan <= 1)\n", s/l, a/l }'
