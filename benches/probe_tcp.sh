#!/usr/bin/env bash
# The probe's libfabric tcp loopback against fi_pingpong (libfabric-bin) at the same message
# size, both over 127.0.0.1, and the probe loop's own cost per operation (benches/probe_loop.rs
# over a fabric that completes every post at once).
#
# Usage: benches/probe_tcp.sh [SIZE ...]        (default: 65536 1048576)
# Env:   PEERPATH    path to peerpath (default: the newer of target/release and target/debug)
#        ITERS       fi_pingpong iterations (default 1000)
#        DURATION    probe --duration per run, seconds (default 4; the probe's timed window per
#                    cell is then 0.7 x 0.8 x DURATION / 2 cells = 1.12 s at 4)
#        DEPTH       the probe's default depth to compare besides depth 1 (default 16)
#        PROBE_LOOP  the built probe_loop bench binary; unset: `cargo bench --bench probe_loop`
#                    is run (CARGO_TARGET_DIR is honoured); PROBE_LOOP=skip: not run
#        LOOP_SECS   seconds per depth for probe_loop (default 1)
#
# Units. Everything is GB/s = 10^9 bytes/s of one-way payload.
#  - fi_pingpong -e msg: each iteration is a message of SIZE each way, one at a time; its MB/sec
#    is 2 x iterations x SIZE bytes / elapsed microseconds (libfabric util/pingpong.c,
#    show_perf with xfers_per_iter = 2), i.e. SIZE / (time of one one-way message). So
#    pingpong GB/s = MB/sec / 1000 is already per message, one message in flight: no factor 2.
#  - probe: gbytes_per_s = completed operations x SIZE / (last completion - start of the
#    window). A WRITE completes only once the target has placed the data
#    (FI_DELIVERY_COMPLETE: the provider waits for the target's ack), a READ once the data is in
#    the initiator's buffer. At --depth 1 one operation is in flight at a time, as in
#    fi_pingpong; the like-for-like ratio is probe depth 1 / pingpong. The default depth keeps
#    up to DEPTH in flight (fewer when fewer messages fit the buffers: ops_in_flight in the JSON).
#  - pingpong moves messages (fi_send/fi_recv), the probe RMA (fi_writemsg/fi_read): same
#    provider, same sockets, different protocol headers.
#
# Output: comment lines start with '#'. Per size, human-readable lines, then one stable line:
#   RESULT size=S pingpong_gbps=X d1_write_gbps=X d1_read_gbps=X depth=N dN_ops_in_flight=K
#          dN_write_gbps=X dN_read_gbps=X ratio_d1_write=X ratio_d1_read=X ratio_dN_write=X
#          ratio_dN_read=X load1=X
# (one line, key=value separated by single spaces; ratio = probe / pingpong; "nan" when
# pingpong gave nothing). Then, unless skipped, the loop's cost:
#   LOOP depth=N ops=X seconds=X ns_per_op=X   (one per depth probe_loop measures: 1, 16, 64)
#   LOOP budget_400g_64k_ns=1310.7     (65536 x 8 bits / 400e9 bit/s)
# Python: dict(kv.split("=", 1) for kv in line.split()[1:]) for RESULT and LOOP lines.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v fi_pingpong >/dev/null || { echo "fi_pingpong not found (Debian package libfabric-bin)" >&2; exit 3; }
PEERPATH=${PEERPATH:-}
if [ -z "$PEERPATH" ]; then
  PEERPATH=$(ls -t target/release/peerpath target/debug/peerpath 2>/dev/null | head -1 || true)
fi
# The help is read whole first: `grep -q` leaving early would make the pipe fail (pipefail).
help=$([ -n "$PEERPATH" ] && "$PEERPATH" probe --help 2>/dev/null || true)
grep -q -- '--depth' <<<"$help" || {
  echo "build peerpath first (cargo build --release); it must know probe --depth" >&2; exit 2; }
ITERS=${ITERS:-1000}
DURATION=${DURATION:-4}
DEPTH=${DEPTH:-16}
LOOP_SECS=${LOOP_SECS:-1}
SIZES=("$@")
[ ${#SIZES[@]} -gt 0 ] || SIZES=(65536 1048576)

load1() { cut -d' ' -f1 /proc/loadavg; }
echo "# peerpath: $PEERPATH; fi_pingpong -p tcp -e msg -I $ITERS; libfabric $(fi_info --version | awk '/^libfabric:/{print $2}'); cpus $(nproc)"
echo "# uptime: $(uptime)"
echo "# probe: $PEERPATH probe --fabric ofi --provider tcp --memory host --sizes SIZE --duration $DURATION --depth {1,$DEPTH} --format json"
port=$((47600 + RANDOM % 1000))
for size in "${SIZES[@]}"; do
  port=$((port + 1))
  fi_pingpong -p tcp -e msg -S "$size" -I "$ITERS" -B "$port" >/dev/null 2>&1 &
  srv=$!
  sleep 0.5
  # The line after the header: bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec.
  pp=$(fi_pingpong -p tcp -e msg -S "$size" -I "$ITERS" -P "$port" 127.0.0.1 \
         | awk '$1=="bytes"{getline; print $6; exit}')
  wait "$srv" 2>/dev/null || true
  d1=$("$PEERPATH" probe --fabric ofi --provider tcp --memory host --sizes "$size" \
         --duration "$DURATION" --depth 1 --format json)
  dn=$("$PEERPATH" probe --fabric ofi --provider tcp --memory host --sizes "$size" \
         --duration "$DURATION" --depth "$DEPTH" --format json)
  PP="${pp:-0}" SIZE="$size" DEPTH="$DEPTH" LOAD1="$(load1)" D1="$d1" DN="$dn" python3 -c '
import json, os
size, depth = int(os.environ["SIZE"]), int(os.environ["DEPTH"])
pp = float(os.environ["PP"]) / 1000.0
def cells(doc):
    out = {}
    for r in json.loads(doc)["results"]:
        if r["message_bytes"] == size:
            if not r["verified"]:
                raise SystemExit("probe cell not verified: %s" % r["reason"])
            out[r["op"]] = r
    return out
d1, dn = cells(os.environ["D1"]), cells(os.environ["DN"])
ratio = lambda g: "%.3f" % (g / pp) if pp > 0 else "nan"
print("# size %d: fi_pingpong %.3f GB/s (one message at a time)" % (size, pp))
for name, d in (("depth 1", d1), ("depth %d" % depth, dn)):
    for op in ("write", "read"):
        r = d[op]
        print("#   probe %-8s %-5s %8.3f GB/s  ops_in_flight %2d  ratio %s"
              % (name, op, r["gbytes_per_s"], r["ops_in_flight"], ratio(r["gbytes_per_s"])))
f = lambda x: "%.3f" % x
print(" ".join([
    "RESULT", "size=%d" % size, "pingpong_gbps=" + f(pp),
    "d1_write_gbps=" + f(d1["write"]["gbytes_per_s"]), "d1_read_gbps=" + f(d1["read"]["gbytes_per_s"]),
    "depth=%d" % depth, "dN_ops_in_flight=%d" % dn["write"]["ops_in_flight"],
    "dN_write_gbps=" + f(dn["write"]["gbytes_per_s"]), "dN_read_gbps=" + f(dn["read"]["gbytes_per_s"]),
    "ratio_d1_write=" + ratio(d1["write"]["gbytes_per_s"]), "ratio_d1_read=" + ratio(d1["read"]["gbytes_per_s"]),
    "ratio_dN_write=" + ratio(dn["write"]["gbytes_per_s"]), "ratio_dN_read=" + ratio(dn["read"]["gbytes_per_s"]),
    "load1=" + os.environ["LOAD1"],
]))
'
done
PROBE_LOOP=${PROBE_LOOP:-}
if [ "$PROBE_LOOP" = skip ]; then
  exit 0
elif [ -n "$PROBE_LOOP" ]; then
  loop=$("$PROBE_LOOP" --bench "$LOOP_SECS")
else
  loop=$(cargo bench --quiet --bench probe_loop -- "$LOOP_SECS" 2>/dev/null)
fi
echo "# probe_loop (null fabric), load1 $(load1):"
sed -n 's/^probe_loop /LOOP /p' <<<"$loop"
