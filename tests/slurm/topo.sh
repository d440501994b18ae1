#!/usr/bin/env bash
# Real Slurm (Debian 12's slurmctld 22.05) loading peerpath's topology.conf for topology/tree,
# run by tests/sched_topology.rs as root in private mount and PID namespaces like run.sh (the
# daemons end when this script, PID 1 there, exits).
#
# Usage: topo.sh WORKDIR TOPOLOGY_CONF CTLD_PORT SLURMD_PORT LIVE_NODE...
# Every node the file's leaf switches name is declared (1 CPU each); the LIVE_NODEs get a
# slurmd each (one port each, `Port=`), the rest stay UNKNOWN. Prints `scontrol show topology`,
# the nodes a plain scheduler would take first (`flat:`, the first two idle nodes by index), and
# where a 2-node job with --switches=1 ran (`job:`).
set -euo pipefail
. "$(dirname "$0")/conf.sh"
W=$1 TOPO=$2 CPORT=$3 DPORT=$4
shift 4
LIVE=("$@")
mkdir -p "$W"/{etc,spool,state,log,run}
if [ "$$" != 1 ]; then echo "topo.sh: not PID 1 of its own PID namespace; refusing to start daemons" >&2; exit 2; fi
H=$(hostname)
export SLURM_CONF=$W/etc/slurm.conf
cp "$TOPO" "$W/etc/topology.conf"
ALL=$(grep -h '^SwitchName=.* Nodes=' "$TOPO" | sed 's/.* Nodes=//' | paste -sd, -)
base_conf | sed -e "s|^SlurmdSpoolDir=.*|SlurmdSpoolDir=$W/spool/%n|" \
  -e "s|^SlurmdPidFile=.*|SlurmdPidFile=$W/run/slurmd-%n.pid|" \
  -e "s|^SlurmdLogFile=.*|SlurmdLogFile=$W/log/slurmd-%n.log|" > "$SLURM_CONF"
# scontrol expands hostlists once slurm.conf names a cluster.
REST=$(scontrol show hostnames "$ALL" | grep -vxF -f <(printf '%s\n' "${LIVE[@]}") | paste -sd, -)
{ echo "TopologyPlugin=topology/tree"
  echo "NodeName=DEFAULT CPUs=1 RealMemory=1 State=UNKNOWN"
  echo "NodeName=$REST NodeAddr=127.0.0.1"
  p=$((DPORT + 1))
  for n in "${LIVE[@]}"; do
    echo "NodeName=$n NodeHostname=$H NodeAddr=127.0.0.1 Port=$p"
    p=$((p + 1))
  done
  echo "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP"
} >> "$SLURM_CONF"
slurmctld -D -i >"$W/log/ctld.out" 2>&1 &
for _ in $(seq 1 60); do scontrol ping >/dev/null 2>&1 && break; sleep 0.25; done
echo "topology:"
scontrol show topology
for n in "${LIVE[@]}"; do
  mkdir -p "$W/spool/$n"
  slurmd -D -N "$n" >"$W/log/d-$n.out" 2>&1 &
done
for _ in $(seq 1 80); do
  [ "$(sinfo -h -N -t idle -o %N | wc -l)" -ge "${#LIVE[@]}" ] && break
  sleep 0.5
done
echo "idle: $(sinfo -h -N -t idle -o %N | paste -sd, -)"
echo "flat: $(sinfo -h -N -t idle -o %N | head -2 | paste -sd, -)"
echo "job: $(timeout 60 srun -N2 --switches=1 sh -c 'echo $SLURM_JOB_NODELIST' | head -1)"
echo done
