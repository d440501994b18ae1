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
mkdir -p "$TMP/bin" && ln -s "$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")" "$TMP/bin/peerpath"
"$BIN" fixture hgx-h100 -o "$FX" 2>/dev/null
"$BIN" fixture misplaced-nic -o "$MIS" 2>/dev/null
"$BIN" fixture vm-flat -o "$VM" 2>/dev/null
export PATH="$PWD/target/ci-venv/bin:$PATH"   # kubernetes-validate, as .ci/run installs it
# Fixture paths in the output are shown as the command line a reader would type.
show() { sed -e "s#$FX#hgx-h100.tar.gz#g" -e "s#$MIS#misplaced-nic.tar.gz#g" -e "s#$VM#vm-flat.tar.gz#g" -e "s#$TMP/##g"; }
# A consumer's verdict: the command as typed, its output and exit status.
consumer() { # fence language, shell command (run in $TMP)
  local lang=$1; shift
  echo '```console'
  echo "\$ $*"
  echo '```'
  echo "\`\`\`$lang"
  (cd "$TMP" && { PATH="$TMP/bin:$PATH" bash -c "$*" 2>&1 && rc=0 || rc=$?; echo "(exit $rc)"; }) | show
  echo '```'
}
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

`export KEY=value` lines (values quoted for a POSIX shell); `--rank R` prints only that local
rank's, so `eval` reaches the program the shell starts. `NCCL_IB_HCA` uses the `=` exact-match
prefix so `mlx5_1` cannot match `mlx5_10`; `PEERPATH_BIND` is a numactl prefix for those who
have numactl (`peerpath launch` binds without it). Without `--rank`, one block per rank.

MD
run sh place -i "$FX" --ranks 8 --format env --rank 3
cat <<'MD'

Loaded in its consumer, a shell and the program it starts:

MD
consumer text "eval \"\$(peerpath place -i hgx-h100.tar.gz --ranks 8 --format env --rank 3)\"; sh -c 'echo \$CUDA_VISIBLE_DEVICES \$NCCL_IB_HCA \$UCX_NET_DEVICES'"
cat <<'MD'

### `--format json` (`peerpath.placement/1`)

`ranks[]`: `rank`, `gpu` (PCI address), `cuda_index` (PCI bus order: set
`CUDA_DEVICE_ORDER=PCI_BUS_ID`, which `env` does), `nic` (RDMA device), `nic_bdf`, `nic_port`,
`netdev`, `path` (nvidia-smi label), `bottleneck_gbps`, `nic_shared_with`, `numa_node`, `cpus`
(cpulist), `cores`, `env` (variable → value), `env_notes` (what `env` leaves out for the
rank's NIC and why, on an HPE Slingshot NIC; absent otherwise), `bind` (argv), `why` (one line
per choice);
`drive` (with storage, below); `notes[]`: node-wide caveats.

MD
echo '```console'; echo '$ peerpath place -i hgx-h100.tar.gz --ranks 1 --format json'; echo '```'
echo '```json'; "$BIN" place -i "$FX" --ranks 1 --format json | show; echo '```'
cat <<'MD'

### `--storage`: each rank's nearest data drive (GPUDirect Storage)

Each rank also gets its GPU's nearest data NVMe drive (one holding a mounted file system other
than `/` and `/boot…`), chosen as its NIC is: best path label, then the drive fewest ranks
share, then address (`analysis::storage::assign_drives`). The rank's `drive` object (`gpu`,
`drive`, `nvme`, `label`, `mounts`), a `Drive:` why line, and `PEERPATH_GDS_DRIVE` (the
controller) and `PEERPATH_GDS_DIR` (its data mount) in `env`, so a job can read its data from
the file system next to its GPU. On by default where GDS is configured (nvidia-fs loaded or
`/etc/cufile.json` present), as on the synthesized `hgx-h100-gds` (a data drive under every GPU
switch, one md RAID0 per socket); `--storage` asks for it anywhere.

MD
GDS=$TMP/hgx-h100-gds.tar.gz
"$BIN" fixture hgx-h100-gds -o "$GDS" 2>/dev/null
echo '```console'; echo '$ peerpath place -i hgx-h100-gds.tar.gz --ranks 8 | grep -A4 "^rank 5"'; echo '```'
echo '```text'; "$BIN" place -i "$GDS" --ranks 8 | grep -A4 '^rank 5' | sed -e "s#$GDS#hgx-h100-gds.tar.gz#g"; echo '```'
cat <<'MD'

### `--format slurm`

A POSIX `sh` script for `srun`: it picks the rank's variables by `$SLURM_LOCALID`, binds with
`numactl` (CPUs and memory), or with `taskset` when numactl is missing (CPUs only, said on
stderr), or not at all when neither exists (said on stderr), and execs the command after it.
Save it, make it executable, and put it before the program: `srun --ntasks-per-node=8
./peerpath-place.sh python train.py` (arguments keep their quoting: the command is `"$@"`).

MD
run sh place -i "$FX" --ranks 2 --format slurm
cat <<'MD'

## `peerpath launch`

Runs a command as one local rank: takes the rank from the launcher (`SLURM_LOCALID`,
`LOCAL_RANK` for torchrun, `OMPI_COMM_WORLD_LOCAL_RANK`, `MPI_LOCALRANKID`, in that order, or
`--rank`) and the number of local ranks from the same launcher (`SLURM_STEP_TASKS_PER_NODE`,
`LOCAL_WORLD_SIZE`, `OMPI_COMM_WORLD_LOCAL_SIZE`, `MPI_LOCALNRANKS`; else `--ranks`, else one
per GPU), computes the same placement as `place`, sets the rank's variables, binds its CPUs
(`sched_setaffinity`) and memory (`set_mempolicy` `MPOL_BIND` to its NUMA node; a failure
there is said on stderr and the run goes on) itself — no numactl — and execs the command.

```sh
srun --ntasks-per-node=8 peerpath launch -- python train.py
torchrun --nproc-per-node=8 --no-python peerpath launch -- python train.py
mpirun -np 8 peerpath launch -- ./app
```

`--dry-run` prints the rank's `KEY=VALUE` lines, the binding and the command, and runs nothing:

MD
echo '```console'; echo '$ SLURM_LOCALID=5 peerpath launch -i hgx-h100.tar.gz --ranks 8 --dry-run -- python train.py'; echo '```'
echo '```sh'; SLURM_LOCALID=5 "$BIN" launch -i "$FX" --ranks 8 --dry-run -- python train.py | show; echo '```'
cat <<'MD'

Binding CPUs planned on a snapshot is refused unless the snapshot's NUMA nodes, CPU lists and
cores are this machine's (`--no-bind` sets the variables only):

MD
echo '```console'; echo '$ SLURM_LOCALID=5 peerpath launch -i hgx-h100.tar.gz -- python train.py'; echo '```'
echo '```text'; SLURM_LOCALID=5 "$BIN" launch -i "$FX" -- python train.py 2>&1 | show | sed -E 's/this machine.s \(node0: [^)]*\)/this machine'"'"'s (…)/'; echo '```'
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

Loaded in its consumer: `tests/consumer_slurm.rs` starts Debian's Slurm 22.05 (slurmctld and
slurmd) on one machine with slurmd's hwloc reading the fixture (`HWLOC_FSROOT`), this
gres.conf, and `/dev/nvidia0-7` faked in a private mount namespace (`tests/slurm/run.sh`).
`sinfo` shows the GPUs with their socket affinity, `slurmd -G` the `Cores=` it read, a one-GPU
job gets `CUDA_VISIBLE_DEVICES`, and with socket 0's CPUs taken by another job a GPU-bound job
gets a socket-1 GPU:

MD
if [ "$(id -u)" = 0 ] && command -v slurmd >/dev/null && command -v unshare >/dev/null; then
  "$BIN" fixture hgx-h100 -o "$TMP/fxdir" 2>/dev/null
  "$BIN" export -i "$TMP/fxdir" --format gres -o "$TMP/gres.conf" 2>/dev/null
  echo '```text'
  unshare -m -p -f --mount-proc --propagation private bash tests/slurm/run.sh "$TMP/slurm" "$TMP/fxdir" "$TMP/gres.conf" 46817 46818 2>&1 \
    | sed -e 's/ ID=[0-9]* / /' -e '/^done$/d'
  echo '```'
else
  echo '(not regenerated here: needs root, slurmd and unshare)'
fi
cat <<'MD'

## `peerpath export --format nfd`

A Node Feature Discovery local feature file for
`/etc/kubernetes/node-feature-discovery/features.d/`. Every label is checked against NFD's
rules before it is written, as nfd-master's `validate.Label` checks them (name and value ≤ 63
characters of `[A-Za-z0-9._-]`, alphanumeric at both ends; the prefix a DNS subdomain, not
`kubernetes.io` or one of its subdomains except `feature.node.kubernetes.io` and
`profile.node.kubernetes.io` and their subdomains); `--ttl` sets the expiry directive.
`gdr-ready` is the audit's GPUDirect RDMA verdict (docs/audit.md, "GPUDirect RDMA
readiness"): `true` only when every GPU's NIC is within PXB and nothing breaks GPUDirect RDMA,
`unknown` when the mechanism is not established (dma-buf only, peermem loaded but not
registered, modules not captured), `false` otherwise.
`worst-gpu-nic` is the worst class between a GPU and the NIC placed with it (`PIX` … `SYS`),
`none` on a node without an RDMA NIC, where no GPUDirect RDMA path exists.

MD
run ini export -i "$FX" --format nfd
cat <<'MD'

Loaded in its consumer: nfd-worker is a Go daemon with no offline mode, so
`tests/consumer_nfd_prom.rs` parses the file the way its local source does (`parseFeatureFile`,
`parseDirectives`: the expiry directive, expired lines dropped) and validates every label with
nfd-master's rules (`validate.Label`, the Kubernetes `IsQualifiedName`/`IsValidLabelValue`),
for every layout and for `--prefix feature.node.kubernetes.io`; a prefix NFD denies is refused
before anything is written:

MD
consumer text "peerpath export -i hgx-h100.tar.gz --format nfd --prefix node.kubernetes.io"
cat <<'MD'

## `peerpath export --format dra`

Kubernetes Dynamic Resource Allocation: `resource.k8s.io/v1` `ResourceSlice` objects (YAML;
`--json` for JSON), one pool named after the node, at most 128 devices per slice. `--node-name`
is the Kubernetes node name (default: the host name when reading the live machine; a snapshot
does not record it), `--driver` the `spec.driver` domain (default `peerpath.io`). Each GPU and
RDMA NIC carries the standard attributes `resource.kubernetes.io/pcieRoot` (the host bridge,
`pciDDDD:BB`), `resource.kubernetes.io/pciBusID` and `resource.kubernetes.io/numaNode` (left
out when the kernel reports -1), and the driver's own: `type` (`gpu`/`nic`), `pcieSwitch` (the
topmost PCIe switch between the device and its root port), `rail` (a GPU's rail is the NIC it
is matched to, as `rails` and `place` match them; that NIC has the same value), `railPath` (the
GPU–NIC label of that pair), `rdmaDevice` and `netdev`.

MD
echo '```console'; echo '$ peerpath export -i hgx-h100.tar.gz --format dra --node-name gpu-node-01 | head -48'; echo '```'
echo '```yaml'; "$BIN" export -i "$FX" --format dra --node-name gpu-node-01 | head -48 | show; echo '```'
cat <<'MD'

Loaded in its consumer: the Kubernetes API schemas, unknown fields rejected
(`kubernetes-validate --strict`, PyPI; `resource.k8s.io/v1` exists from Kubernetes 1.34):

MD
"$BIN" export -i "$FX" --format dra --node-name gpu-node-01 -o "$TMP/slice.yaml" 2>/dev/null
if command -v kubernetes-validate >/dev/null; then
  consumer text "kubernetes-validate --strict -k 1.34.0 slice.yaml"
else
  echo '(not regenerated here: kubernetes-validate not installed)'
fi
cat <<'MD'

### A GPU and its NIC in one claim

A ResourceClaim asks for a GPU and a NIC and constrains them with `matchAttribute`. The GPU and
the NIC usually come from two drivers (a GPU DRA driver and a NIC one), and only the standard
attributes are shared across drivers, so the portable constraint is `pcieRoot`:

```yaml
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: gpu-with-local-nic
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {deviceClassName: gpu.nvidia.com, count: 1}
      - name: nic
        exactly: {deviceClassName: rdma-nic.example.com, count: 1}
      constraints:
      - requests: [gpu, nic]
        matchAttribute: resource.kubernetes.io/pcieRoot
```

Equal `pcieRoot` means the two share a host bridge: the pair is PIX, PXB or PHB, never
NODE/SYS. Whether that is the GPU's own NIC depends on the platform:

- On this Sapphire Rapids layout each root port is its own host bridge with one switch under
  it, so equal `pcieRoot` is PIX: the claim gets a GPU and its rail NIC.
- Where one host bridge holds several switches (AMD EPYC; the DGX A100 layout below), or two
  switches sit under one root port, equal `pcieRoot` admits PXB pairs (below: GPU0 can be
  given NIC1, one switch level up) and, where a host bridge has several root ports, PHB pairs,
  which get no GPUDirect RDMA under NCCL's default `NCCL_NET_GDR_LEVEL` (PXB). When both devices come from slices that carry them, `pcieSwitch` (equal ⇔ within PXB)
  or `rail` (exactly the matched pair) are the tighter constraints: `matchAttribute:
  peerpath.io/rail`.
- ConnectX-8 and later with Data Direct: the NIC's DMA goes through a separate PCIe function
  under the GPU's switch, while the NIC's own PF can sit under a different root; the root to
  match is the Data Direct function's, not the PF's (NVIDIA Network Operator, DRA SR-IOV
  driver docs), and a driver that publishes the PF's root makes `pcieRoot` equality miss the
  right pair.

MD
echo '```console'; echo '$ peerpath export -i dgx-a100.tar.gz --format dra --node-name n1 --json   # the devices under pci0000:00, attributes shown one line each'; echo '```'
echo '```text'
"$BIN" fixture dgx-a100 -o "$TMP/dgx-a100.tar.gz" 2>/dev/null
"$BIN" export -i "$TMP/dgx-a100.tar.gz" --format dra --node-name n1 --json | python3 -c '
import json, sys
def v(a, k):
    x = a.get(k)
    return "-" if x is None else str(list(x.values())[0])
for d in json.load(sys.stdin)["spec"]["devices"]:
    a = d["attributes"]
    if v(a, "resource.kubernetes.io/pcieRoot") != "pci0000:00":
        continue
    print("%-18s pcieRoot=%s pcieSwitch=%s rail=%s railPath=%s" % (d["name"], v(a, "resource.kubernetes.io/pcieRoot"), v(a, "pcieSwitch"), v(a, "rail"), v(a, "railPath")))
'
echo '```'
cat <<'MD'

## `peerpath export --format nccl-xml`

An `NCCL_TOPO_FILE`: one `cpu` per NUMA node as NCCL numbers them (affinity mask, arch, vendor,
family, model; `numaid="-1"` without a mask where `numa_node` reads -1, below), one
`pci` per switch (keyed by its upstream port), GPUs and RDMA NICs with NCCL's link attributes
(min of the device's and its parent port's max), `nic`/`net` for RDMA devices, `nvlink` children
when NVLink state is known. `--skeleton` writes only `cpu`/`pci` (NCCL then finds GPUs, NVLinks
and NICs itself). Loading it back with `peerpath scan -i topo.xml` gives the same labels
(tested).

NCCL reads the file with its own small parser (`src/graph/xml.cc`), not an XML library, so the
file keeps to what that parser and XML both accept: no `<?xml …?>` declaration (NCCL stops at
its `?`: "XML Parse : expected >, got '?'"), no `--` in comments, one space between
attributes, double-quoted values with no character that needs an XML entity (NCCL does not
decode them), and within the limits of every NCCL from 2.18 to 2.30: at most 255 elements
(`NCCL_TOPO_XML_MAX_NODES` 256), 32 children per element (`MAX_SUBS` in 2.18–2.20), 16
attributes, values of 253 characters. A topology beyond them is refused with the limit named.

MD
echo '```console'; echo '$ peerpath export -i hgx-h100.tar.gz --format nccl-xml | head -24'; echo '```'
echo '```xml'; "$BIN" export -i "$FX" --format nccl-xml | head -24 | show; echo '```'
cat <<'MD'

### `numaid` and `link_width`: what NCCL itself would write

The file carries what NCCL's own detection would put there, so that NCCL takes the same
decisions from the file as without it (NCCL 2.18–2.30, `src/graph/xml.cc` and `topo.cc`; found on
a real H200 VM whose NCCL 2.28.9 dump is `fixtures/real/h200-vm.nccl-2.28.9-topo-dump.xml`):

- **`numaid`** is the `numa_node` file of the topmost device NCCL records under the `cpu` (a
  switch's upstream port, else the endpoint), as read: `ncclTopoGetXmlFromSys` copies the file's
  text. A device whose `numa_node` reads -1 (a VM; firmware without proximity data) goes under
  `numaid="-1"` even on a one-node machine where `matrix` and `nvidia-smi topo -m` show NUMA
  affinity 0 (they fall back to the only node; NCCL does not). Such a `cpu` has **no
  `affinity`**: NCCL fills a missing one from `/sys/devices/system/node/node<numaid>/cpumap`
  (`ncclTopoGetXmlFromCpu`), which for -1 never exists, so NCCL's own topology has none and NCCL
  pins nothing ("Affinity for GPU 0 is empty, ignoring"). Writing `numaid="0"` with the node's
  mask, as peerpath did before, made NCCL pin its threads to node 0's CPUs ("Affinity for GPU 0
  is 0-15") — harmless on the one-node VM it was seen on, a different decision wherever the
  process may run elsewhere.
- **`link_width`** is `min(max_link_width, ../max_link_width)` of the device's sysfs directory,
  an unreadable file counting as `strtol("") = 0`. A device directly on a root bus (every device
  of a flat VM) has the host bridge `pci0000:00` as its sysfs parent, which has no link files, so
  NCCL writes `link_width="0"`; its reader (`ncclTopoAddPci`: `if (width == 0) width = 16`) then
  takes it as x16. The file writes 0 there too. The speed differs: an unreadable port speed is
  `FLT_MAX`, so the device's own `max_link_speed` stands, as in the file. Writing the device's
  real width (16 on the H200) would give the same bandwidth for a x16 card, but not for a
  narrower one on a root bus, which NCCL itself treats as x16. NCCL ≥ 2.30.7 asks NVML for a
  GPU's *current* link instead of sysfs; a file's attributes are kept over both, so a GPU
  written `link_width="0"` is x16 to every NCCL version. A device with no link figures at all
  (a conventional-PCI virtio function) gets neither attribute, and NCCL fills both itself.

An NCCL XML input keeps its own figures (it has no root ports, so a top-level element may sit
under one); a `link_width="0"` in it is read as unknown and written back as 0.

Loaded in its consumers: `xmllint` for XML, and `tests/consumer_nccl_xml.rs`, a reader that
follows NCCL's grammar rule by rule (`xmlGetNode`, `xmlGetToken`, `xmlGetValue`,
`xmlSkipComment`, `xmlLoadSub` and its handler tables, then what `ncclTopoAddCpu`/`AddPci`/
`AddNic`/`AddNvLinks` require), run over every synthesized layout, skeletons, the VM pairing,
NVLinks and held-out published nodes, and checked against NCCL's own dumps: for the real H200
VM (`fixtures/real/`), every element of NCCL 2.28.9's dump has the same attributes in the export
of the capture (`real_h200_export_carries_what_nccls_own_dump_says`). Real NCCL loading the file
with `NCCL_TOPO_FILE` is what `scripts/gpu-check.sh` runs on a GPU machine: NCCL 2.28.9 loaded
the file of 6446a8e on that H200 without a warning and built the same paths, and again the
file of 14d5ba4 (after the merges of issues 30–34).

MD
"$BIN" export -i "$FX" --format nccl-xml -o "$TMP/topo.xml" 2>/dev/null
consumer text "xmllint --noout topo.xml"
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
when it is known. `peerpath_gpu_nvme_path{gpu,pci_bus_id,nvme,nvme_pci_bus_id,path,nearest}`
carries every GPU–data-drive label for GPUDirect Storage, `nearest="true"` on each GPU's
nearest drive (the one `place --storage` gives it); left out on a node without NVMe.

MD
echo '```console'; echo '$ peerpath export -i hgx-h100.tar.gz --format prom | grep -v "pcie_link" | head -30'; echo '```'
echo '```text'; "$BIN" export -i "$FX" --format prom | grep -v 'pcie_link' | head -30 | show; echo '```'
echo
echo 'Link width and speed, current and max, for every function on a GPU or NIC path:'
echo
echo '```text'; "$BIN" export -i "$FX" --format prom | grep -A6 'HELP peerpath_pcie_link_width' | show; echo '```'
cat <<'MD'

Loaded in its consumer, Prometheus's own linter (silent and exit 0 when it accepts the file):

MD
"$BIN" export -i "$FX" --format prom -o "$TMP/peerpath.prom" 2>/dev/null
consumer text "promtool check metrics < peerpath.prom"
cat <<'MD'

## `peerpath export --format dot`

Graphviz DOT: NUMA nodes as clusters, switches as boxes, links labelled with their speed and
width (red when running below capability), NVLinks as bold green edges. Render with
`dot -Tsvg`.

MD
echo '```console'; echo '$ peerpath export -i hgx-h100.tar.gz --format dot | head -20'; echo '```'
echo '```dot'; "$BIN" export -i "$FX" --format dot | head -20 | show; echo '```'
AMD=$TMP/mi300x-8gpu.tar.gz
"$BIN" fixture mi300x-8gpu -o "$AMD" 2>/dev/null
amd() { # command args..., with the AMD fixture's path shown as typed
  echo '```console'
  echo "\$ peerpath $*" | sed -e "s#$AMD#mi300x-8gpu.tar.gz#g"
  echo '```'
  echo '```text'
  "$BIN" "$@" 2>&1 | sed -e "s#$AMD#mi300x-8gpu.tar.gz#g" || true
  echo '```'
}
cat <<'MD'

## AMD Instinct nodes

The same commands on the synthesized 8× MI300X node (`peerpath fixture mi300x-8gpu`;
docs/amd.md): ranks get `ROCR_VISIBLE_DEVICES` with the GPU's ROCr UUID; gres follows Slurm's
`AutoDetect=rsmi` (`File=/dev/dri/renderD<minor>`, `Links=` recording PCI order only); the DRA
slice names AMD's DRA driver for the GPUs (`gpuDriver: gpu.amd.com`, matched by `pciBusID`) and
their xGMI hive; the topology file carries RCCL's `<xgmi>` elements.

MD
amd place -i "$AMD" --ranks 2 --format env
amd export -i "$AMD" --format gres
echo '```console'; echo '$ peerpath export -i mi300x-8gpu.tar.gz --format dra --node-name node-01 | head -28'; echo '```'
echo '```yaml'; "$BIN" export -i "$AMD" --format dra --node-name node-01 | head -28 | sed -e "s#$AMD#mi300x-8gpu.tar.gz#g"; echo '```'
echo '```console'; echo '$ peerpath export -i mi300x-8gpu.tar.gz --format nccl-xml | head -18'; echo '```'
echo '```xml'; "$BIN" export -i "$AMD" --format nccl-xml | head -18 | sed -e "s#$AMD#mi300x-8gpu.tar.gz#g"; echo '```'
SS=$TMP/cray-ex-a100.tar.gz
"$BIN" fixture cray-ex-a100 -o "$SS" 2>/dev/null
cat <<'MD'

## HPE Slingshot nodes

On a Cassini (Slingshot) NIC `place` gives a rank what libfabric's cxi provider reads,
`FI_CXI_DEVICE_NAME=cxi<N>` (libfabric `prov/cxi/src/cxip_info.c`: it keeps only the CXI devices
named), and neither `NCCL_IB_HCA` nor `UCX_NET_DEVICES`: NCCL and RCCL reach Slingshot through the
aws-ofi-nccl plugin, which reads no NIC list, and UCX has no CXI transport. Each rank's block
says so in a comment (`env_notes` in JSON). Where the input names the NIC only by its netdev
(hwloc XML before 2.14: `hsi<N>`), no NIC variable is exported and the comment says why; NCCL
then picks each GPU's NIC itself from the PCI paths the plugin reports. HPE's documented
settings for the platform (`NCCL_NET_GDR_LEVEL=PHB`, …) are printed as such, not chosen by
peerpath. The synthesized HPE Cray EX A100 node (`peerpath fixture cray-ex-a100`):

MD
echo '```console'; echo '$ peerpath place -i cray-ex-a100.tar.gz --ranks 4 --format env --rank 0'; echo '```'
echo '```sh'; "$BIN" place -i "$SS" --ranks 4 --format env --rank 0 | sed -e "s#$SS#cray-ex-a100.tar.gz#g"; echo '```'
} > docs/exports.md
echo "wrote docs/exports.md"
