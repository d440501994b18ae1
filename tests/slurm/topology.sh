#!/usr/bin/env bash
# Real Slurm of a Debian root (tests/slurm/chroot.sh) reading a topology.conf or topology.yaml,
# run by tests/consumer_slurm_topology.rs as root, as PID 1 of private mount, PID and UTS
# namespaces (`unshare -m -p -u -f --propagation private`): when this script exits, the kernel
# ends every daemon and job step, and every mount made here goes with the namespace.
#
# Usage: topology.sh ROOT WORK CTLD_PORT
#   ROOT  a finished root (ROOT/.peerpath-root present), or / for this system's own Slurm
#   WORK  the test's directory, mounted at /run/peerpath in the root; the test has written
#         WORK/etc/topology.conf or WORK/etc/topology.yaml, WORK/cluster.conf (TopologyPlugin,
#         NodeName and PartitionName lines; host name `pp-slurm`, address 127.0.0.1, one
#         Port= per node that runs a slurmd), WORK/slurmd.nodes (the nodes whose slurmd starts,
#         one a line) and WORK/steps.sh (bash run once every started node is idle; it may call
#         `hold NODE` and `placed SRUN_ARGS...`, below).
# Several slurmd run on this one host: Debian builds Slurm with --enable-multiple-slurmd
# (`scontrol show config`: MULTIPLE_SLURMD = yes), each with its own Port, spool and log.
# Prints what Slurm says, then `done`; the daemons' logs stay in WORK/log.
set -euo pipefail
if [ "${1-}" = inner ]; then
  # Inside the root.
  W=/run/peerpath CPORT=$2
  export SLURM_CONF=$W/etc/slurm.conf
  mkdir -p $W/{spool,state,log,run}
  while read -r n; do mkdir -p "$W/spool/$n"; done < $W/slurmd.nodes
  cat > "$SLURM_CONF" <<CONF
ClusterName=peerpath
SlurmctldHost=pp-slurm(127.0.0.1)
SlurmctldPort=$CPORT
AuthType=auth/none
CredType=cred/none
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$W/state
SlurmdSpoolDir=$W/spool/%n
SlurmctldPidFile=$W/run/slurmctld.pid
SlurmdPidFile=$W/run/slurmd.%n.pid
SlurmctldLogFile=$W/log/slurmctld.log
SlurmdLogFile=$W/log/slurmd.%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
MpiDefault=none
ReturnToService=2
JobCompType=jobcomp/none
MailProg=/bin/true
AccountingStorageType=accounting_storage/none
CONF
  cat $W/cluster.conf >> "$SLURM_CONF"
  # A built root mounts no cgroup hierarchy: Slurm is told to use none (23.11+; linuxproc tracks
  # the processes). This system's root (/) has its own, which Slurm 22.05 requires.
  if [ -z "$(ls -A /sys/fs/cgroup 2>/dev/null)" ]; then echo CgroupPlugin=disabled > $W/etc/cgroup.conf; fi
  echo "version: $(slurmctld -V)"
  slurmctld -D -i > $W/log/ctld.out 2>&1 &
  for _ in $(seq 1 150); do scontrol ping 2>/dev/null | grep -q UP && break; sleep 0.2; done
  want=0
  while read -r n; do
    slurmd -D -N "$n" > "$W/log/d.$n.out" 2>&1 &
    want=$((want + 1))
  done < $W/slurmd.nodes
  nodes=$(paste -sd, $W/slurmd.nodes)
  for _ in $(seq 1 300); do
    [ "$(sinfo -h -N -n "$nodes" -t idle -o '%N' 2>/dev/null | sort -u | wc -l)" = "$want" ] && break
    sleep 0.2
  done
  echo "idle: $(sinfo -h -N -n "$nodes" -t idle -o '%N' | sort -u | paste -sd,)"
  # Holds NODE with a job that sleeps until the namespace ends; returns once it runs.
  hold() {
    sbatch -o /dev/null -N1 -w "$1" --wrap 'sleep 600' > /dev/null
    for _ in $(seq 1 150); do
      squeue -h -t R -w "$1" -o %i | grep -q . && return 0
      sleep 0.2
    done
    echo "hold: $1 never ran its job"
  }
  # Prints `scontrol show topology [NAME]`, each line after `LABEL: `.
  topo() {
    local label=$1; shift
    scontrol show topology "$@" 2>&1 | sed "s/^/$label: /"
  }
  # Runs one task per node with srun's own arguments; prints the sorted node names it ran on.
  placed() {
    timeout 60 srun -l "$@" printenv SLURMD_NODENAME 2>> $W/log/srun.err | sed 's/^[0-9]*: //' | sort -u | paste -sd,
  }
  . $W/steps.sh
  scancel -u root 2>/dev/null || true
  # What srun said (queued, allocated, errors), for the test's failure messages.
  sed 's/^/srun-stderr: /' $W/log/srun.err 2>/dev/null || true
  echo done
  exit 0
fi

ROOT=$1 WORK=$2 CPORT=$3
if [ "$$" != 1 ]; then echo "topology.sh: not PID 1 of its own PID namespace; refusing to start daemons" >&2; exit 2; fi
if [ "$ROOT" != / ] && [ ! -f "$ROOT/.peerpath-root" ]; then
  echo "topology.sh: $ROOT is not a finished root (tests/slurm/chroot.sh)" >&2; exit 2
fi
echo pp-slurm > /proc/sys/kernel/hostname
# The root's /proc shows this PID namespace; its /dev is a fresh tmpfs with the few device
# files the daemons open (the host's /dev is not shown); a tmpfs /run holds the test's
# directory at /run/peerpath (so a root needs no mount point of its own, / included).
mount -t proc proc "$ROOT/proc"
mount -t tmpfs -o mode=755 tmpfs "$ROOT/dev"
for d in null:1:3 zero:1:5 full:1:7 random:1:8 urandom:1:9 tty:5:0; do
  IFS=: read -r name maj min <<< "$d"
  mknod -m 666 "$ROOT/dev/$name" c "$maj" "$min"
done
mkdir -p "$ROOT/dev/shm" && mount -t tmpfs tmpfs "$ROOT/dev/shm"
mount -t tmpfs tmpfs "$ROOT/run"
mkdir "$ROOT/run/peerpath"
mount --bind "$WORK" "$ROOT/run/peerpath"
cp "$0" "$WORK/topology.sh"
exec chroot "$ROOT" /bin/bash /run/peerpath/topology.sh inner "$CPORT"
