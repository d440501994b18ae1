#!/usr/bin/env bash
# The probe's libfabric tcp loopback against fi_pingpong (libfabric-bin) at the same message
# size, both over 127.0.0.1, and the probe loop's own cost per operation (benches/probe_loop.rs
# over a fabric that completes every post at once).
#
# Usage: benches/probe_tcp.sh [SIZE ...]        (default: 65536 1048576)
# Env:   PEERPATH    path to peerpath (default: the newer of target/release and target/debug)
#        RUNS        paired rounds per size (default 5); each round runs fi_pingpong and the
#                    probe at depth 1 and DEPTH back to back, pingpong first in odd rounds and
#                    last in even ones, and the medians of the rounds' ratios are printed
#        QUIET       a round starts once the CPUs were busy less than QUIET % over one second
#                    (default 15; /proc/stat, all CPUs) ...
#        QUIET_WAIT  ... or after QUIET_WAIT seconds of waiting for that (default 60); the
#                    busy % it started at is printed with the round (busy_pct), so a loaded
#                    round can be told from a quiet one
#        ITERS       fi_pingpong iterations (default 1000; fi_pingpong's own default, 10, is
#                    20 MB at 1 MiB, a few ms: too short to time)
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
#  - wall times (*_wall_s) are the whole command's, from exec to exit, measured here: the
#    fi_pingpong client's (its server starts 0.5 s earlier), and each probe command's (set up,
#    two cells of warm-up + window, verification of every byte moved, report). The probe's own
#    figure for the same (wall_seconds in its JSON) is printed beside it as dN_self_s/d1_self_s.
#
# Output: comment lines start with '#'. Per round and size, human-readable lines, then one line:
#   RESULT round=R size=S busy_pct=B load1=X pingpong_gbps=X pp_wall_s=X d1_write_gbps=X
#          d1_read_gbps=X d1_wall_s=X d1_self_s=X depth=N dN_ops_in_flight=K dN_write_gbps=X
#          dN_read_gbps=X dN_wall_s=X dN_self_s=X ratio_d1_write=X ratio_d1_read=X
#          ratio_dN_write=X ratio_dN_read=X ratio_d1_min=X
#   (ratio_d1_min: the slower op at depth 1 over pingpong, the round's like-for-like figure)
# then per size, over the rounds (median, then min and max of the rounds' values):
#   MEDIAN size=S runs=R depth=N busy_pct=X load1=X pingpong_gbps=X ratio_d1_write=X ratio_d1_read=X ratio_dN_write=X
#          ratio_dN_read=X ratio_d1_min=X d1_write_gbps=X ... (same keys as RESULT, medians)
#   RANGE  size=S ... (same keys: "min-max")
# (one line each, key=value separated by single spaces; ratio = probe / pingpong of the same
# round; "nan" when pingpong gave nothing). Then, unless skipped, the loop's cost:
#   LOOP depth=N ops=X seconds=X ns_per_op=X   (one per depth probe_loop measures: 1, 16, 64)
#   LOOP budget_400g_64k_ns=1310.7     (65536 x 8 bits / 400e9 bit/s)
# Python: dict(kv.split("=", 1) for kv in line.split()[1:]) for RESULT, MEDIAN and LOOP lines.
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
RUNS=${RUNS:-5}
QUIET=${QUIET:-15}
QUIET_WAIT=${QUIET_WAIT:-60}
ITERS=${ITERS:-1000}
DURATION=${DURATION:-4}
DEPTH=${DEPTH:-16}
LOOP_SECS=${LOOP_SECS:-1}
SIZES=("$@")
[ ${#SIZES[@]} -gt 0 ] || SIZES=(65536 1048576)

load1() { cut -d' ' -f1 /proc/loadavg; }
# Busy % of all CPUs over one second, from /proc/stat (idle + iowait count as idle).
busy_pct() {
  local a b
  a=$(awk '/^cpu /{print $2+$3+$4+$5+$6+$7+$8+$9, $5+$6}' /proc/stat)
  sleep 1
  b=$(awk '/^cpu /{print $2+$3+$4+$5+$6+$7+$8+$9, $5+$6}' /proc/stat)
  awk -v a="$a" -v b="$b" 'BEGIN{split(a,x," "); split(b,y," "); t=y[1]-x[1]; i=y[2]-x[2];
    printf "%d", (t > 0 ? 100 * (t - i) / t : 0)}'
}
# Waits up to QUIET_WAIT s for a second below QUIET % busy; prints the last busy %.
wait_quiet() {
  local b waited=0
  while :; do
    b=$(busy_pct)
    if [ "$b" -lt "$QUIET" ] || [ "$waited" -ge "$QUIET_WAIT" ]; then echo "$b"; return; fi
    waited=$((waited + 1))
  done
}
now() { date +%s.%N; }
echo "# peerpath: $PEERPATH; fi_pingpong -p tcp -e msg -I $ITERS; libfabric $(fi_info --version | awk '/^libfabric:/{print $2}'); cpus $(nproc)"
echo "# uptime: $(uptime)"
echo "# probe: $PEERPATH probe --fabric ofi --provider tcp --memory host --sizes SIZE --duration $DURATION --depth {1,$DEPTH} --format json"
echo "# rounds: $RUNS per size, each started below $QUIET % busy or after $QUIET_WAIT s of waiting"
port=$((47600 + RANDOM % 1000))
results=()
run_pingpong() {
  port=$((port + 1))
  fi_pingpong -p tcp -e msg -S "$size" -I "$ITERS" -B "$port" >/dev/null 2>&1 &
  local srv=$! t0 t1
  sleep 0.5
  t0=$(now)
  # The line after the header: bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec.
  pp=$(fi_pingpong -p tcp -e msg -S "$size" -I "$ITERS" -P "$port" 127.0.0.1 \
         | awk '$1=="bytes"{getline; print $6; exit}')
  t1=$(now)
  wait "$srv" 2>/dev/null || true
  pp_wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", b - a}')
}
run_probe() {  # $1: depth; sets probe_json and probe_wall
  local t0 t1
  t0=$(now)
  probe_json=$("$PEERPATH" probe --fabric ofi --provider tcp --memory host --sizes "$size" \
         --duration "$DURATION" --depth "$1" --format json)
  t1=$(now)
  probe_wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", b - a}')
}
for round in $(seq 1 "$RUNS"); do
for size in "${SIZES[@]}"; do
  busy=$(wait_quiet)
  load=$(load1)
  if [ $((round % 2)) -eq 1 ]; then run_pingpong; fi
  run_probe 1; d1=$probe_json; d1_wall=$probe_wall
  run_probe "$DEPTH"; dn=$probe_json; dn_wall=$probe_wall
  if [ $((round % 2)) -eq 0 ]; then run_pingpong; fi
  line=$(PP="${pp:-0}" SIZE="$size" DEPTH="$DEPTH" LOAD1="$load" BUSY="$busy" ROUND="$round" \
    PP_WALL="$pp_wall" D1_WALL="$d1_wall" DN_WALL="$dn_wall" D1="$d1" DN="$dn" python3 -c '
import json, os
e = os.environ
size, depth = int(e["SIZE"]), int(e["DEPTH"])
pp = float(e["PP"]) / 1000.0
def cells(doc):
    d = json.loads(doc)
    out = {}
    for r in d["results"]:
        if r["message_bytes"] == size:
            if not r["verified"]:
                raise SystemExit("probe cell not verified: %s" % r["reason"])
            out[r["op"]] = r
    return out, d.get("wall_seconds")
(d1, d1_self), (dn, dn_self) = cells(e["D1"]), cells(e["DN"])
ratio = lambda g: "%.3f" % (g / pp) if pp > 0 else "nan"
f = lambda x: "nan" if x is None else "%.3f" % x
print("# round %s size %d (busy %s %%, load %s): fi_pingpong %.3f GB/s (one message at a time), client %s s wall"
      % (e["ROUND"], size, e["BUSY"], e["LOAD1"], pp, e["PP_WALL"]))
for name, d, wall in (("depth 1", d1, e["D1_WALL"]), ("depth %d" % depth, dn, e["DN_WALL"])):
    for op in ("write", "read"):
        r = d[op]
        print("#   probe %-8s %-5s %8.3f GB/s  ops_in_flight %2d  ratio %s  (command %s s wall)"
              % (name, op, r["gbytes_per_s"], r["ops_in_flight"], ratio(r["gbytes_per_s"]), wall))
print(" ".join([
    "RESULT", "round=" + e["ROUND"], "size=%d" % size, "busy_pct=" + e["BUSY"], "load1=" + e["LOAD1"],
    "pingpong_gbps=" + f(pp), "pp_wall_s=" + e["PP_WALL"],
    "d1_write_gbps=" + f(d1["write"]["gbytes_per_s"]), "d1_read_gbps=" + f(d1["read"]["gbytes_per_s"]),
    "d1_wall_s=" + e["D1_WALL"], "d1_self_s=" + f(d1_self),
    "depth=%d" % depth, "dN_ops_in_flight=%d" % dn["write"]["ops_in_flight"],
    "dN_write_gbps=" + f(dn["write"]["gbytes_per_s"]), "dN_read_gbps=" + f(dn["read"]["gbytes_per_s"]),
    "dN_wall_s=" + e["DN_WALL"], "dN_self_s=" + f(dn_self),
    "ratio_d1_write=" + ratio(d1["write"]["gbytes_per_s"]), "ratio_d1_read=" + ratio(d1["read"]["gbytes_per_s"]),
    "ratio_dN_write=" + ratio(dn["write"]["gbytes_per_s"]), "ratio_dN_read=" + ratio(dn["read"]["gbytes_per_s"]),
    "ratio_d1_min=" + ratio(min(d1["write"]["gbytes_per_s"], d1["read"]["gbytes_per_s"])),
]))
')
  printf '%s\n' "$line"
  results+=("$(grep '^RESULT' <<<"$line")")
done
done
printf '%s\n' "${results[@]}" | python3 -c '
import sys, statistics
rows = [dict(kv.split("=", 1) for kv in l.split()[1:]) for l in sys.stdin if l.startswith("RESULT")]
skip = {"round", "size", "depth", "dN_ops_in_flight"}
for size in dict.fromkeys(r["size"] for r in rows):
    rs = [r for r in rows if r["size"] == size]
    keys = [k for k in rs[0] if k not in skip]
    def vals(k):
        v = [float(r[k]) for r in rs if r[k] != "nan"]
        return v
    head = ["size=" + size, "runs=%d" % len(rs), "depth=" + rs[0]["depth"]]
    med, rng = ["MEDIAN"] + head, ["RANGE"] + head
    for k in keys:
        v = vals(k)
        med.append("%s=%s" % (k, "%.3f" % statistics.median(v) if v else "nan"))
        rng.append("%s=%s" % (k, "%.3f-%.3f" % (min(v), max(v)) if v else "nan"))
    print(" ".join(med))
    print(" ".join(rng))
'
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
