#!/usr/bin/env bash
# Regenerates docs/exports.md: one worked example per `peerpath export` format, `place` and
# `rails`, all run on the synthesized HGX H100 layout (`peerpath fixture hgx-h100`).
# Usage: docs/gen-exports.sh [path/to/peerpath]   (default: target/debug/peerpath)
set -eu  # no pipefail: `| head` closing the pipe early is expected
cd "$(dirname "$0")/.."
BIN=${1:-target/debug/peerpath}
[ -x "$BIN" ] || cargo build -q
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
FX=$TMP/hgx-h100.tar.gz
MIS=$TMP/misplaced-nic.tar.gz
VM=$TMP/vm-flat.tar.gz
"$BIN" fixture hgx-h100 -o "$FX" 2>/dev/null
"$BIN" fixture misplaced-nic -o "$MIS" 2>/dev/null
"$BIN" fixture vm-flat -o "$VM" 2>/dev/null
# Fixture paths in the output are shown as the command line a reader would type.
show() { sed -e "s#$FX#hgx-h100.tar.gz#g" -e "s#$MIS#misplaced-nic.tar.gz#g" -e "s#$VM#vm-flat.tar.gz#g"; }
run() { # title, fence language, command args...
  local lang=$1; shift
  echo '```console'
  echo "\$ peerpath $*" | show
  echo '```'
  echo "\`\`\`$lang"
  "$BIN" "$@" 2>&1 | show || true
  echo '```'
}
{
cat <<'MD'
# Placement, rails and scheduler exports

Every example below was produced by `docs/gen-exports.sh`, which runs the `peerpath` binary on
the synthesized HGX H100 layout (`peerpath fixture hgx-h100 -o hgx-h100.tar.gz`: 2 Sapphire
Rapids sockets with 56 cores and SMT each, 8 H100 SXM and 8 ConnectX-7 NDR, each GPU–NIC pair
under its own Broadcom PEX switch). The synthesized tree carries no NVML data, so NVLink state
is "not visible" throughout: outputs say so instead of guessing.

## `peerpath place`

Chooses N GPUs (fewest NVLink domains, then fewest NUMA nodes, then the best GPU–GPU labels),
gives each rank a NIC (best path label, then bandwidth, then spread; a NIC is shared only when
every unshared NIC has a worse path, or there are fewer NICs than ranks — a Kuhn–Munkres
assignment), and whole CPU cores (SMT siblings together, none twice) from the rank's NUMA node.
Each rank gets one line per choice.

MD
run text place -i "$FX" --ranks 4
cat <<'MD'

On a node whose GPU3 NIC sits on the other socket (`misplaced-nic`), the advice routes around
the bad pair and says so:

MD
echo '```console'; echo '$ peerpath place -i misplaced-nic.tar.gz --ranks 8 | grep -A3 "^rank 3"'; echo '```'
echo '```text'; "$BIN" place -i "$MIS" --ranks 8 | grep -A3 '^rank 3' | show; echo '```'
cat <<'MD'

### `--format env`

One block per local rank, `source`-able by a shell (values quoted). `NCCL_IB_HCA` uses the `=`
exact-match prefix so `mlx5_1` cannot match `mlx5_10`; `PEERPATH_BIND` is the binding prefix to
put before the program.

MD
run sh place -i "$FX" --ranks 2 --format env
cat <<'MD'

### `--format json` (`peerpath.placement/1`)

`ranks[]`: `rank`, `gpu` (PCI address), `cuda_index` (PCI bus order: set
`CUDA_DEVICE_ORDER=PCI_BUS_ID`, which `env` does), `nic` (RDMA device), `nic_bdf`, `nic_port`,
`netdev`, `path` (nvidia-smi label), `bottleneck_gbps`, `nic_shared_with`, `numa_node`, `cpus`
(cpulist), `cores`, `env` (variable → value), `bind` (argv), `why` (one line per choice);
`notes[]`: node-wide caveats.

MD
echo '```console'; echo '$ peerpath place -i hgx-h100.tar.gz --ranks 1 --format json'; echo '```'
echo '```json'; "$BIN" place -i "$FX" --ranks 1 --format json | show; echo '```'
cat <<'MD'

### `--format slurm`

One line: a `bash -c` wrapper that picks the rank's environment by `$SLURM_LOCALID`, binds with
`numactl` (falling back to `taskset` when numactl is missing) and execs the rest of the command
line: `srun --ntasks-per-node=8 $(cat wrapper) python train.py`, or paste it in the batch script.

MD
run sh place -i "$FX" --ranks 2 --format slurm
cat <<'MD'

## `peerpath rails`

The scale-up boundary (NVLink domains) and every fabric port that leaves it. Rails come from
the paths model through the one rails matching (one NIC per GPU by path label, then bandwidth):
rail i is GPU i's NIC when it is within PXB of GPU i; a GPU with no NIC within PXB has no port
on its rail, and a NIC within PXB of no GPU is a port on no rail (its leaf cannot be told from
the topology): no rail number is invented. With fewer NICs than GPUs, rails are numbered by the
first GPU each NIC serves. Speed from the RDMA port `rate`; per port one leaf-switch port, one
transceiver at each end and one fibre run, multiplied by `--nodes` and grouped by rail
(= destination leaf). Exit code 1 when the node is not one-NIC-per-GPU within PXB.

MD
run text rails -i "$FX" --nodes 32
echo
echo 'The misplaced node says why it is not rail-optimised:'
echo
run text rails -i "$MIS"
cat <<'MD'

## `peerpath export --format gres`

Slurm `gres.conf`. `Cores=` are Slurm's abstract core ids (core 0 = first core of the first
socket, SMT siblings counted once), derived from `/proc/cpuinfo`: GPU0's OS CPUs
`0-55,112-167` are Slurm cores `0-55`. `Links=` (NVLink counts, -1 for self) is written only
when NVLink state was visible; `--nvswitch-links slurm|fabric` chooses what GPUs joined only
through NVSwitches get (Slurm's own `AutoDetect=nvml` counts GPU-to-GPU links only, so 0).
NIC lines are left as comments: Slurm has no NIC autodetection and the uverbs device file is
not part of the scan.

MD
run ini export -i "$FX" --format gres
cat <<'MD'

## `peerpath export --format nfd`

A Node Feature Discovery local feature file for
`/etc/kubernetes/node-feature-discovery/features.d/`. Every label is checked against NFD's
rules before it is written (name and value ≤ 63 characters of `[A-Za-z0-9._-]`, alphanumeric at
both ends; prefix a DNS subdomain outside `kubernetes.io`); `--ttl` sets the expiry directive.
`gdr-ready` is the audit's GPUDirect RDMA verdict (docs/audit.md, "GPUDirect RDMA
readiness"): `true` only when every GPU's NIC is within PXB and nothing breaks GPUDirect RDMA,
`unknown` when the mechanism is not established (dma-buf only, peermem loaded but not
registered, modules not captured), `false` otherwise.

MD
run ini export -i "$FX" --format nfd
cat <<'MD'

## `peerpath export --format dra`

Kubernetes DRA standard attributes per GPU and NIC, shaped as a ResourceSlice holds them.
`numaNode` is left out for devices whose NUMA node is unknown. `pcieRoots` shows how coarse
`pcieRoot` is here (one switch per root on this Sapphire Rapids layout: `matchAttribute` on
`pcieRoot` means PIX).

MD
echo '```console'; echo '$ peerpath export -i hgx-h100.tar.gz --format dra | head -40'; echo '```'
echo '```json'; "$BIN" export -i "$FX" --format dra | head -40 | show; echo '```'
cat <<'MD'

## `peerpath export --format nccl-xml`

An `NCCL_TOPO_FILE`: one `cpu` per NUMA node (affinity mask, arch, vendor, family, model), one
`pci` per switch (keyed by its upstream port), GPUs and RDMA NICs with NCCL's link attributes
(min of the device's and its parent port's max), `nic`/`net` for RDMA devices, `nvlink` children
when NVLink state is known. `--skeleton` writes only `cpu`/`pci` (NCCL then finds GPUs, NVLinks
and NICs itself). Loading it back with `peerpath scan -i topo.xml` gives the same labels
(tested).

MD
echo '```console'; echo '$ peerpath export -i hgx-h100.tar.gz --format nccl-xml | head -24'; echo '```'
echo '```xml'; "$BIN" export -i "$FX" --format nccl-xml | head -24 | show; echo '```'
cat <<'MD'

### The VM case

A guest's tree is flat: every GPU–NIC pair is PHB, so NCCL turns GPUDirect RDMA off. `--pair
GPU=NIC` declares pairs that share a switch on the *host*; each goes under a synthetic switch
`ffff:ff:NN.0`, so NCCL sees PIX. The file says the pairing is declared, not observed.

MD
run xml export -i "$VM" --format nccl-xml --pair 0000:01:00.0=0000:02:00.0
cat <<'MD'

## `peerpath export --format prom`

A node_exporter textfile (`--collector.textfile.directory`); `-o` writes it atomically
(temporary file in the same directory, then rename). `peerpath_findings{severity}` (the
severities that have findings) and `peerpath_gdr_ready` come from the audit `export` runs; the
library leaves both out, rather than writing zeros, when no audit is passed in.
`peerpath_gdr_ready` is the audit's GPUDirect RDMA verdict (as nfd's `gdr-ready`), written only
when it is known.

MD
echo '```console'; echo '$ peerpath export -i hgx-h100.tar.gz --format prom | grep -v "pcie_link" | head -30'; echo '```'
echo '```text'; "$BIN" export -i "$FX" --format prom | grep -v 'pcie_link' | head -30 | show; echo '```'
echo
echo 'Link width and speed, current and max, for every function on a GPU or NIC path:'
echo
echo '```text'; "$BIN" export -i "$FX" --format prom | grep -A6 'HELP peerpath_pcie_link_width' | show; echo '```'
cat <<'MD'

## `peerpath export --format dot`

Graphviz DOT: NUMA nodes as clusters, switches as boxes, links labelled with their speed and
width (red when running below capability), NVLinks as bold green edges. Render with
`dot -Tsvg`.

MD
echo '```console'; echo '$ peerpath export -i hgx-h100.tar.gz --format dot | head -20'; echo '```'
echo '```dot'; "$BIN" export -i "$FX" --format dot | head -20 | show; echo '```'
} > docs/exports.md
echo "wrote docs/exports.md"
