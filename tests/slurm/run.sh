#!/usr/bin/env bash
# Real Slurm (slurmctld + slurmd) reading peerpath's gres.conf, run by tests/consumer_slurm.rs
# as root in private mount and PID namespaces (`unshare -m -p -f --mount-proc --propagation
# private`): when this script (PID 1 there) exits, the kernel ends every daemon and job step.
#
# Usage: run.sh WORKDIR FIXTURE_ROOT GRES_CONF CTLD_PORT SLURMD_PORT
#   FIXTURE_ROOT  a synthesized sysfs root; slurmd's hwloc reads it (HWLOC_FSROOT)
#   GRES_CONF     `peerpath export --format gres` of that root
# Prints what Slurm says (sinfo, slurmd -G, the jobs' CUDA_/ROCR_VISIBLE_DEVICES) for the test
# to check. The device files gres.conf names are created in an overlay on /dev visible only in this namespace.
set -euo pipefail
. "$(dirname "$0")/conf.sh"
W=$1 FX=$2 GRES=$3 CPORT=$4 DPORT=$5
mkdir -p "$W"/{etc,spool,state,log,run,devup}
if [ "$$" != 1 ]; then echo "run.sh: not PID 1 of its own PID namespace; refusing to start daemons" >&2; exit 2; fi

# Fake GPU device files: an overlay over /dev, private to this mount namespace.
mount -t tmpfs tmpfs "$W/devup"
mkdir -p "$W/devup/u" "$W/devup/w"
mount -t overlay overlay -o "lowerdir=/dev,upperdir=$W/devup/u,workdir=$W/devup/w" /dev
n=$(grep -c '^Name=gpu' "$GRES")
# Every device file gres.conf names (NVIDIA: /dev/nvidiaN, char 195; AMD: /dev/dri/renderDN,
# char 226), as the driver would create it.
i=0
for f in $(grep '^Name=gpu' "$GRES" | grep -o 'File=[^ ]*' | cut -d= -f2); do
  mkdir -p "$(dirname "$f")"
  case $f in
    /dev/dri/renderD*) mknod "$f" c 226 "${f#/dev/dri/renderD}" 2>/dev/null || touch "$f" ;;
    *) mknod "$f" c 195 "$i" 2>/dev/null || touch "$f" ;;
  esac
  i=$((i + 1))
done

export HWLOC_FSROOT=$FX HWLOC_COMPONENTS=-x86
H=$(hostname)
# The node line as slurmd's own hwloc sees the fixture.
NODE=$(slurmd -C | head -1 | sed -e 's/^NodeName=[^ ]*//' -e 's/RealMemory=[0-9]*/RealMemory=1/')
export SLURM_CONF=$W/etc/slurm.conf
cp "$GRES" "$W/etc/gres.conf"
{ base_conf; cat <<CONF
GresTypes=gpu
NodeName=pp NodeHostname=$H NodeAddr=127.0.0.1 $NODE Gres=gpu:$n State=UNKNOWN
PartitionName=debug Nodes=pp Default=YES MaxTime=INFINITE State=UP
CONF
} > "$SLURM_CONF"
echo "node: $NODE"
slurmctld -D -i >"$W/log/ctld.out" 2>&1 &
sleep 1
slurmd -D -N pp >"$W/log/d.out" 2>&1 &
for _ in $(seq 1 60); do
  sinfo -h -o '%t' 2>/dev/null | grep -q idle && break
  sleep 0.5
done
echo "sinfo: $(sinfo -h -N -o '%N %c %G %t')"
echo "gres: $(scontrol show node pp | grep -o 'Gres=[^ ]*')"
slurmd -G -N pp 2>&1 | sed -n 's/^slurmd: Gres \(Name=gpu .*File=[^ ]* Cores=[^ ]*\).*/G \1/p'
echo "job1: $(timeout 60 srun -N1 -n1 --gres=gpu:1 sh -c 'echo CVD=$CUDA_VISIBLE_DEVICES ROCR=${ROCR_VISIBLE_DEVICES-unset}')"
# Hold every CPU of socket 0; a one-GPU job bound to its cores must get a socket-1 GPU.
half=$(( $(sinfo -h -o '%c') / 2 ))
sbatch -o /dev/null -c "$half" --gres=gpu:1 --gres-flags=enforce-binding --wrap 'sleep 30' >/dev/null
for _ in $(seq 1 40); do squeue -h -t R | grep -q . && break; sleep 0.5; done
echo "job2: $(timeout 60 srun -N1 -n1 -c 2 --gres=gpu:1 --gres-flags=enforce-binding sh -c 'echo CVD=$CUDA_VISIBLE_DEVICES ROCR=${ROCR_VISIBLE_DEVICES-unset}')"
scancel -u root || true
echo done
