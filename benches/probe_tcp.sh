#!/usr/bin/env bash
# Compares the probe's libfabric tcp loopback bandwidth with fi_pingpong (libfabric-bin) at the
# same message size, both over 127.0.0.1. Prints one line per size and op:
#   size  fi_pingpong_GB/s  probe_GB/s  ratio(probe/pingpong)
# Target: ratio >= 0.9.
#
# Usage: benches/probe_tcp.sh [SIZE ...]        (default: 65536 8388608)
# Env:   PEERPATH=path/to/peerpath (default: target/release/peerpath, else target/debug/peerpath)
#        ITERS=fi_pingpong iterations (default 200), DURATION=probe --duration (default 6)
#
# fi_pingpong's MB/sec is 10^6 bytes/s counting both directions of each ping-pong (its
# "total" column is 2 x iterations x size); the probe's gbytes_per_s is 10^9 bytes/s of one-way
# RDMA traffic with up to 16 operations in flight.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v fi_pingpong >/dev/null || { echo "fi_pingpong not found (Debian package libfabric-bin)" >&2; exit 3; }
PEERPATH=${PEERPATH:-}
if [ -z "$PEERPATH" ]; then
  # The newer of the release and debug builds.
  PEERPATH=$(ls -t target/release/peerpath target/debug/peerpath 2>/dev/null | head -1 || true)
fi
[ -n "$PEERPATH" ] && "$PEERPATH" probe --help >/dev/null 2>&1 || { echo "build peerpath first (cargo build --release)" >&2; exit 2; }
ITERS=${ITERS:-200}
DURATION=${DURATION:-6}
SIZES=("$@")
[ ${#SIZES[@]} -gt 0 ] || SIZES=(65536 8388608)

echo "# peerpath: $PEERPATH; fi_pingpong: -p tcp -e msg -I $ITERS; libfabric $(fi_info --version | awk '/^libfabric:/{print $2}')"
printf '%-9s %-6s %16s %12s %8s\n' size op fi_pingpong_GB/s probe_GB/s ratio
port=$((47600 + RANDOM % 1000))
for size in "${SIZES[@]}"; do
  port=$((port + 1))
  fi_pingpong -p tcp -e msg -S "$size" -I "$ITERS" -B "$port" >/dev/null 2>&1 &
  srv=$!
  sleep 0.5
  pp=$(fi_pingpong -p tcp -e msg -S "$size" -I "$ITERS" -P "$port" 127.0.0.1 | awk 'NR==2{print $6}')
  wait "$srv" 2>/dev/null || true
  json=$("$PEERPATH" probe --fabric ofi --provider tcp --memory host --sizes "$size" --duration "$DURATION" --format json)
  PP="$pp" SIZE="$size" python3 -c '
import json, os, sys
pp = float(os.environ["PP"]) / 1000.0
size = os.environ["SIZE"]
for r in json.load(sys.stdin)["results"]:
    g = r["gbytes_per_s"]
    ratio = g / pp if pp > 0 else float("nan")
    print("%-9s %-6s %16.3f %12.3f %8.2f" % (size, r["op"], pp, g, ratio))
' <<<"$json"
done
