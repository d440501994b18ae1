#!/usr/bin/env bash
# Real Slurm (slurmctld + slurmd) running deploy/slurm/peerpath-health as its
# HealthCheckProgram, run by tests/consumer_slurm.rs as root in private mount and PID
# namespaces like run.sh (the daemons end when this script, PID 1 there, exits).
#
# Usage: health.sh WORKDIR PEERPATH CLEAN_SNAPSHOT FAULTY_SNAPSHOT CTLD_PORT SLURMD_PORT INTERVAL
# The check audits WORKDIR/node, a link switched between the clean and the faulty snapshot:
# clean for two intervals (the node must stay idle), faulty (it must drain within one
# interval), clean again (it must return). Prints each state with the seconds it took.
set -euo pipefail
. "$(dirname "$0")/conf.sh"
W=$1 PP=$2 CLEAN=$3 FAULTY=$4 CPORT=$5 DPORT=$6 IV=$7
REPO=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$W"/{etc,spool,state,log,run}
if [ "$$" != 1 ]; then echo "health.sh: not PID 1 of its own PID namespace; refusing to start daemons" >&2; exit 2; fi
H=$(hostname)
NODE=$(slurmd -C | head -1 | sed -e 's/^NodeName=[^ ]*//' -e 's/RealMemory=[0-9]*/RealMemory=1/')
export SLURM_CONF=$W/etc/slurm.conf
ln -sfn "$CLEAN" "$W/node"
# The HealthCheckProgram takes no arguments: a two-line wrapper sets what a site sets in
# /etc/default/peerpath-health, and counts its runs.
cat > "$W/hc" <<HC
#!/bin/sh
echo run >> "$W/log/hc.runs"
export SLURM_CONF="$SLURM_CONF" PEERPATH="$PP" PEERPATH_ARGS="-i $W/node" NODENAME=pp PATH="$PATH"
exec "$REPO/deploy/slurm/peerpath-health"
HC
chmod +x "$W/hc"
{ base_conf; cat <<CONF
HealthCheckProgram=$W/hc
HealthCheckInterval=$IV
HealthCheckNodeState=ANY
NodeName=pp NodeHostname=$H NodeAddr=127.0.0.1 $NODE State=UNKNOWN
PartitionName=debug Nodes=pp Default=YES MaxTime=INFINITE State=UP
CONF
} > "$SLURM_CONF"
state() { sinfo -h -N -n pp -o '%t' 2>/dev/null | head -1; }
runs() { wc -l < "$W/log/hc.runs" 2>/dev/null || echo 0; }
# Waits (at most $2 seconds) until the state matches the pattern $1; prints the seconds taken.
wait_for() {
  local t0 now; t0=$(date +%s.%N)
  while :; do
    now=$(date +%s.%N)
    if [[ "$(state)" =~ $1 ]]; then echo "$now - $t0" | bc; return 0; fi
    if (( $(echo "$now - $t0 > $2" | bc) )); then echo "timeout($(state))"; return 0; fi
    sleep 0.2
  done
}
slurmctld -D -i >"$W/log/ctld.out" 2>&1 &
sleep 1
slurmd -D -N pp >"$W/log/d.out" 2>&1 &
echo "up: $(wait_for '^idle$' 40) s"
# Clean: two intervals, and the check has run at least twice meanwhile, the node idle.
r0=$(runs); sleep $((2 * IV)); r1=$(runs)
echo "clean: state $(state) after $((2 * IV)) s, check ran $((r1 - r0)) time(s)"
ln -sfn "$FAULTY" "$W/node"
echo "drained: $(wait_for 'drain' $((3 * IV))) s, state $(state)"
echo "sinfo -R:"
sinfo -R
ln -sfn "$CLEAN" "$W/node"
echo "returned: $(wait_for '^idle$' $((3 * IV))) s, state $(state)"
echo done
