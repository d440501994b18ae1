#!/usr/bin/env bash
# One run of peerpath on a machine with an NVIDIA GPU, the machine's own tools beside it, in
# under five minutes. Prepare here with `bash scripts/gpu-check-prepare.sh` (fills .dev/ with a
# stripped release peerpath and the Debian packages used below), then on the GPU machine, from
# the repository root:
#
#   bash scripts/gpu-check.sh                  # results: $OUT (default /tmp/gpu-check-out)
#
# What it runs, one function per phase (PHASES below; GPU_CHECK_PHASES="smi timing" runs a
# subset, and a new phase is one more function and one more name in the list):
#   env_facts      kernel, OS, modules, the RDMA and net classes, what was carried
#   smi            nvidia-smi, -q, -q -x, topo -m/-mp/-p2p r, nvlink -s
#   tools          lspci -tv/-nnD/-vvv, lstopo --whole-io (carried)
#   timing         `peerpath matrix` against `nvidia-smi topo -m`, 10 runs each, interleaved,
#                  with `peerpath matrix -i /` (no NVML) and `nvidia-smi -L` (NVML's start)
#   peerpath_live  every peerpath command on the live node, text and JSON; a capture, read back
#                  and diffed against fixtures/real/h200-vm.tar.gz
#   probes         `probe --memory cuda` with the default fabric and with `--fabric ofi`
#   hip            `probe --memory hip` on this NVIDIA machine: no ROCm, which it must say plainly
#   torch_copy     PyTorch's pinned 64 MiB host↔device copies, the reference for the probe
#   nccl           NCCL (one rank, through PyTorch) with its own detection and with our
#                  NCCL_TOPO_FILE; whether NCCL warned about the file
#   soft_rdma      a software RDMA device (rxe on the default netdev, else siw); where one
#                  appears: peerpath again, `probe --fabric verbs --memory host|cuda` beside
#                  ib_write_bw / ib_read_bw on it; the device is removed afterwards
#   gds            GPUDirect Storage: the audit's gds-* findings, `probe-storage` on a file of
#                  this machine's own disk (no NVMe on the VM: compat mode expected), cuFile's log
#   raw_sysfs      a raw copy of the PCI sysfs (for lspci/lstopo elsewhere)
# Every step is bounded by `timeout` and by what is left of the run's budget (GPU_CHECK_BUDGET_S,
# default 270 s); a step that fails is recorded and the run goes on. Carried packages are
# unpacked into a private prefix and used through LD_LIBRARY_PATH, never installed. Nothing here
# changes the GPU's settings. Results: $OUT/gpu-check.tar.gz (everything), $OUT/summary.txt (the
# key figures) and $OUT/steps.txt (each step: exit code, milliseconds).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-/tmp/gpu-check-out}
BUDGET_S=${GPU_CHECK_BUDGET_S:-270}
PHASES=${GPU_CHECK_PHASES:-"env_facts smi tools timing peerpath_live probes hip torch_copy nccl soft_rdma gds raw_sysfs"}
TOP=$(mktemp -d /tmp/gpu-check.XXXXXX)
R=$TOP/gpu-check          # everything collected, packed as $OUT/gpu-check.tar.gz
X=$TOP/x                  # private prefix of the carried packages
PP=${PEERPATH:-$ROOT/.dev/peerpath}
mkdir -p "$OUT" "$R" "$X/pbin"
now_ms() { echo $(($(date +%s%N) / 1000000)); }
DEADLINE=$(($(now_ms) + BUDGET_S * 1000))

# step NAME SECS CMD…: CMD's stdout and stderr to $R/NAME.out and .err, bounded by SECS and by
# what is left of the budget; one line in steps.txt (rc 124: timed out; skip: no time left).
step() {
  local name=$1 t=$2; shift 2
  local left=$(((DEADLINE - $(now_ms)) / 1000))
  if [ "$left" -lt 3 ]; then
    printf '%-34s rc=%-5s %7sms\n' "$name" skip 0 >> "$R/steps.txt"
    return 124
  fi
  [ "$t" -gt "$left" ] && t=$left
  local s; s=$(now_ms)
  timeout -k 2 "$t" "$@" > "$R/$name.out" 2> "$R/$name.err"
  local rc=$?
  printf '%-34s rc=%-5s %7sms\n' "$name" "$rc" "$(($(now_ms) - s))" >> "$R/steps.txt"
  return $rc
}

pack() {
  cp "$R/steps.txt" "$OUT/steps.txt" 2>/dev/null
  tar -C "$TOP" -czf "$OUT/gpu-check.tar.gz.part" gpu-check && mv "$OUT/gpu-check.tar.gz.part" "$OUT/gpu-check.tar.gz"
}

# The carried packages, unpacked with dpkg-deb, or by Python where dpkg is absent.
unpack() {
  local f n=0
  for f in "$ROOT"/.dev/debs/*.deb; do
    [ -f "$f" ] || continue
    if command -v dpkg-deb > /dev/null; then
      dpkg-deb -x "$f" "$X"
    else
      python3 - "$f" "$X" << 'PY'
import io, sys, tarfile
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"!<arch>\n", "not a .deb"
i = 8
while i < len(data):
    name, size = data[i:i + 16].decode().strip().rstrip("/"), int(data[i + 48:i + 58])
    body = data[i + 60:i + 60 + size]
    if name.startswith("data.tar"):
        tarfile.open(fileobj=io.BytesIO(body)).extractall(sys.argv[2])
    i += 60 + size + (size & 1)
PY
    fi && n=$((n + 1))
  done
  # What the packages' maintainer scripts would have linked (alternatives, kmod's applets).
  [ -f "$X/usr/lib/libpsm1/libpsm_infinipath.so.1.16" ] &&
    ln -sf libpsm_infinipath.so.1.16 "$X/usr/lib/libpsm1/libpsm_infinipath.so.1"
  local a
  for a in modprobe lsmod modinfo; do [ -x "$X/bin/kmod" ] && ln -sf "$X/bin/kmod" "$X/pbin/$a"; done
  echo "$n packages unpacked into $X"
}

# The environment of a command that uses the carried libraries (verbs providers, libfabric).
XENV=(env
  "LD_LIBRARY_PATH=$X/usr/lib/x86_64-linux-gnu:$X/lib/x86_64-linux-gnu:$X/usr/lib/libpsm1:$X/usr/lib/x86_64-linux-gnu/libibverbs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  "RDMAV_DRIVERS=rxe:siw" "FI_PROVIDER_PATH=$X/usr/lib/x86_64-linux-gnu/libfabric"
  "PCI_IDS=$X/usr/share/misc/pci.ids")

# A tool: the machine's own, else the carried one.
tool() {
  local p
  p=$(command -v "$1" 2> /dev/null) && { echo "$p"; return; }
  for p in "$X/pbin/$1" "$X/usr/bin/$1" "$X/usr/sbin/$1" "$X/sbin/$1" "$X/bin/$1"; do
    [ -x "$p" ] && { echo "$p"; return; }
  done
  echo "$1"
}
# A carried tool (the machine's own may be a different version, or absent).
xtool() {
  local p
  for p in "$X/pbin/$1" "$X/usr/bin/$1" "$X/usr/sbin/$1" "$X/sbin/$1" "$X/bin/$1"; do
    [ -x "$p" ] && { echo "$p"; return; }
  done
  tool "$1"
}

pp() { step "$1" "$2" "${XENV[@]}" "$PP" "${@:3}"; }

env_facts() {
  step uname 5 uname -a
  step os-release 5 cat /etc/os-release
  step cmdline 5 cat /proc/cmdline
  step proc-modules 5 cat /proc/modules
  step nproc 5 nproc
  step meminfo 5 head -3 /proc/meminfo
  step net-class 5 ls -la /sys/class/net
  step rdma-class 5 ls -la /sys/class/infiniband
  step ip-addr 5 "$(tool ip)" addr
  step kernel-rdma-modules 20 sh -c 'd=/lib/modules/$(uname -r); ls -d "$d" && find "$d" -name "rdma_rxe*" -o -name "siw.ko*" -o -name "ib_uverbs*"; for m in rdma_rxe siw ib_core ib_uverbs; do [ -d /sys/module/$m ] && echo "/sys/module/$m present"; done; true'
  step python-versions 60 python3 -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version())'
  step peerpath-commit 5 cat "$ROOT/.dev/peerpath.commit"
  step carried 5 ls -l "$ROOT/.dev/debs"
  local s; s=$(now_ms)
  unpack > "$R/unpack.out" 2> "$R/unpack.err"
  printf '%-34s rc=%-5s %7sms\n' unpack "$?" "$(($(now_ms) - s))" >> "$R/steps.txt"
}

smi() {
  step smi 20 nvidia-smi
  step smi-q 30 nvidia-smi -q
  step smi-qx 30 nvidia-smi -q -x
  step smi-topo-m 20 nvidia-smi topo -m
  step smi-topo-mp 20 nvidia-smi topo -mp
  step smi-topo-p2p-r 20 nvidia-smi topo -p2p r
  step smi-nvlink 20 nvidia-smi nvlink -s
  step smi-state-before 20 nvidia-smi --query-gpu=name,pci.bus_id,driver_version,pstate,clocks.sm,pcie.link.gen.current,pcie.link.width.current,temperature.gpu --format=csv
}

tools() {
  step lspci-tv 20 "${XENV[@]}" "$(xtool lspci)" -tv
  step lspci-nnD 20 "${XENV[@]}" "$(xtool lspci)" -nnD
  step lspci-vvv 20 "${XENV[@]}" "$(xtool lspci)" -vvv
  step lstopo 30 "${XENV[@]}" "$(xtool lstopo-no-graphics)" --whole-io -v
  step lstopo-xml 30 "${XENV[@]}" "$(xtool lstopo-no-graphics)" --whole-io --of xml
}

# Wall time of one run of a command, in ms, appended to timing.txt as `NAME MS RC`.
time_one() {
  local name=$1; shift
  local s; s=$(date +%s%N)
  timeout 20 "$@" > /dev/null 2>&1
  local rc=$?
  echo "$name $((($(date +%s%N) - s) / 1000)) $rc" | awk '{printf "%s %.1f %s\n", $1, $2 / 1000, $3}' >> "$R/timing.txt"
}

timing() {
  local s; s=$(now_ms)
  # One warm-up each (page cache, NVML's first open), then 10 interleaved rounds.
  # peerpath runs as a user runs it: no carried library is involved in `matrix`.
  timeout 20 "$PP" matrix > /dev/null 2>&1
  timeout 20 nvidia-smi topo -m > /dev/null 2>&1
  local i
  for i in 1 2 3 4 5 6 7 8 9 10; do
    [ $(((DEADLINE - $(now_ms)) / 1000)) -lt 60 ] && break
    time_one pp-matrix "$PP" matrix
    time_one smi-topo-m nvidia-smi topo -m
    time_one pp-matrix-sysfs-only "$PP" matrix -i /
    time_one smi-list nvidia-smi -L
  done
  printf '%-34s rc=%-5s %7sms\n' timing 0 "$(($(now_ms) - s))" >> "$R/steps.txt"
}

peerpath_live() {
  pp pp-version 5 --version
  pp pp-scan 60 scan
  pp pp-scan-json 60 scan --format json
  pp pp-scan-all 60 scan --all
  pp pp-matrix 60 matrix
  pp pp-matrix-json 60 matrix --format json
  pp pp-matrix-json-detail 60 matrix --format json --detail
  pp pp-explain 60 explain GPU0 NIC0
  pp pp-explain-json 60 explain GPU0 NIC0 --format json
  pp pp-audit 60 audit
  pp pp-audit-json 60 audit --format json
  pp pp-audit-job 60 audit --job
  pp pp-place 60 place --ranks 1
  pp pp-place-json 60 place --ranks 1 --format json
  pp pp-place-env 60 place --ranks 1 --format env
  pp pp-place-slurm 60 place --ranks 1 --format slurm
  pp pp-rails 60 rails
  pp pp-rails-json 60 rails --format json
  pp pp-report-html 60 report -o "$R/report.html"
  pp pp-report-svg 60 report -o "$R/report.svg"
  pp pp-report-png 60 report -o "$R/report.png"
  local f
  for f in gres nfd prom dot nccl-xml; do pp "pp-export-$f" 60 export --format "$f" -o "$R/export.$f"; done
  pp pp-export-dra 60 export --format dra --node-name gpu-check -o "$R/export.dra"
  pp pp-export-nccl-skeleton 60 export --format nccl-xml --skeleton -o "$R/export-skeleton.nccl-xml"
  pp pp-launch 60 launch --rank 0 -- env
  pp pp-capture 60 capture -o "$R/capture.tar.gz"
  pp pp-scan-capture 60 scan -i "$R/capture.tar.gz" --format json
  pp pp-matrix-capture 60 matrix -i "$R/capture.tar.gz"
  pp pp-audit-capture 60 audit -i "$R/capture.tar.gz" --format json
  pp pp-diff-fixture 60 diff "$ROOT/fixtures/real/h200-vm.tar.gz" "$R/capture.tar.gz"
  mkdir -p "$TOP/fleet" && cp "$R/capture.tar.gz" "$TOP/fleet/now.tar.gz" &&
    cp "$ROOT/fixtures/real/h200-vm.tar.gz" "$TOP/fleet/before.tar.gz"
  pp pp-fleet-json 60 fleet "$TOP/fleet" --format json
}

probes() {
  pp probe-cuda 40 probe --memory cuda --format json --duration 10
  pp probe-cuda-text 30 probe --memory cuda --duration 8
  pp probe-ofi-cuda 40 probe --fabric ofi --provider tcp --memory cuda --format json --duration 10
  pp probe-ofi-cuda-text 30 probe --fabric ofi --provider tcp --memory cuda --duration 8
}

hip() {
  pp hip-probe 20 probe --memory hip --format json --duration 2
  pp hip-probe-text 20 probe --memory hip --duration 2
}

torch_copy() {
  cat > "$R/torch-copy.py" << 'PY'
import torch
n = 64 << 20
h = torch.empty(n, dtype=torch.uint8, pin_memory=True)
d = torch.empty(n, dtype=torch.uint8, device="cuda")
def bw(f):
    best = 0.0
    for _ in range(3):
        f()
    torch.cuda.synchronize()
    for _ in range(20):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); f(); e.record(); e.synchronize()
        best = max(best, n / (s.elapsed_time(e) / 1e3) / 1e9)
    return best
print(f"torch h2d_gbps={bw(lambda: d.copy_(h, non_blocking=True)):.2f}")
print(f"torch d2h_gbps={bw(lambda: h.copy_(d, non_blocking=True)):.2f}")
print(f"torch {torch.__version__} cuda {torch.version.cuda} nccl {torch.cuda.nccl.version()}")
PY
  step torch-copy 90 python3 "$R/torch-copy.py"
}

nccl() {
  cat > "$R/nccl1.py" << 'PY'
import os, torch, torch.distributed as dist
os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ.setdefault("MASTER_PORT", "29555")
dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda:0"))
t = torch.ones(1 << 20, device="cuda"); dist.all_reduce(t); torch.cuda.synchronize()
print("allreduce ok", float(t[0])); dist.destroy_process_group()
PY
  local ne=(env NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,GRAPH,ENV,NET)
  step nccl-own 90 "${ne[@]}" NCCL_TOPO_DUMP_FILE="$R/nccl-dump-own.xml" python3 "$R/nccl1.py"
  step nccl-ours 90 "${ne[@]}" NCCL_TOPO_FILE="$R/export.nccl-xml" \
    NCCL_TOPO_DUMP_FILE="$R/nccl-dump-ours.xml" MASTER_PORT=29556 python3 "$R/nccl1.py"
  pp pp-matrix-ncclown 30 matrix -i "$R/nccl-dump-own.xml"
  pp pp-matrix-ncclours 30 matrix -i "$R/nccl-dump-ours.xml"
  pp pp-evidence-nccl 30 evidence "$R/nccl-ours.out" "$R/nccl-ours.err" -i "$R/capture.tar.gz"
}

# The first RDMA device's RoCE v2 GID index with an IPv4-mapped address (what ib_*_bw -x takes).
gid_index() {
  local dev=$1 f t g
  for f in /sys/class/infiniband/"$dev"/ports/1/gid_attrs/types/*; do
    t=$(cat "$f" 2> /dev/null) || continue
    g=$(cat "/sys/class/infiniband/$dev/ports/1/gids/${f##*/}" 2> /dev/null)
    case "$t:$g" in "RoCE v2:0000:0000:0000:0000:0000:ffff:"*) echo "${f##*/}"; return ;; esac
  done
  echo 0
}

# perftest on DEV, loopback over 127.0.0.1: OP (write|read) at SIZE bytes; the server is ours
# and is stopped when the client is done.
perftest_one() {
  local dev=$1 op=$2 size=$3 gid=$4 bin
  bin=$(xtool "ib_${op}_bw")
  local args=(-d "$dev" -i 1 -x "$gid" -s "$size" -D 2 -F --report_gbits)
  timeout 12 "${XENV[@]}" "$bin" "${args[@]}" > "$R/perftest-$op-$size-server.out" 2>&1 &
  local server=$! rc
  sleep 1
  step "perftest-$op-$size" 12 "${XENV[@]}" "$bin" "${args[@]}" 127.0.0.1
  rc=$?
  kill "$server" 2> /dev/null
  wait "$server" 2> /dev/null
  return $rc
}

soft_rdma() {
  local netdev modprobe rdma dev created=""
  netdev=$(awk '$2 == "00000000" { print $1; exit }' /proc/net/route)
  [ -n "$netdev" ] || netdev=$(ls /sys/class/net | grep -v '^lo$' | head -n1)
  modprobe=$(tool modprobe)
  rdma=$(xtool rdma)
  echo "netdev=$netdev modprobe=$modprobe rdma=$rdma" > "$R/soft-rdma.txt"
  if [ -z "$(ls /sys/class/infiniband 2> /dev/null)" ]; then
    step rxe-modprobe 15 "$modprobe" -a ib_uverbs rdma_rxe
    step rxe-link-add 15 "${XENV[@]}" "$rdma" link add rxe0 type rxe netdev "$netdev" && created=rxe0
    if [ -z "$(ls /sys/class/infiniband 2> /dev/null)" ]; then
      step siw-modprobe 15 "$modprobe" -a ib_uverbs siw
      step siw-link-add 15 "${XENV[@]}" "$rdma" link add siw0 type siw netdev "$netdev" && created=siw0
    fi
  fi
  dev=$(ls /sys/class/infiniband 2> /dev/null | head -n1)
  if [ -z "$dev" ]; then
    echo "soft RDMA: none" >> "$R/soft-rdma.txt"
    return 0
  fi
  echo "soft RDMA: $dev (created: ${created:-no, it was there})" >> "$R/soft-rdma.txt"
  step rdma-link-show 10 "${XENV[@]}" "$rdma" link show
  step ibv-devinfo 10 "${XENV[@]}" "$(xtool ibv_devinfo)" -v
  step smi-topo-m-rdma 20 nvidia-smi topo -m
  pp pp-scan-rdma 60 scan
  pp pp-matrix-rdma 60 matrix
  pp pp-matrix-rdma-json 60 matrix --format json
  pp pp-audit-rdma 60 audit --format json
  pp pp-capture-rdma 60 capture -o "$R/capture-rdma.tar.gz"
  pp probe-verbs-host 30 probe --fabric verbs --memory host --format json --duration 8
  pp probe-verbs-host-text 30 probe --fabric verbs --memory host --duration 6
  pp probe-verbs-cuda 40 probe --fabric verbs --memory cuda --format json --duration 10
  pp probe-verbs-cuda-text 30 probe --fabric verbs --memory cuda --duration 8
  local gid op size
  gid=$(gid_index "$dev")
  echo "gid index=$gid" >> "$R/soft-rdma.txt"
  # A first failure usually repeats (no GID, no loopback): the rest is skipped, not waited for.
  for op in write read; do
    for size in 65536 8388608; do perftest_one "$dev" "$op" "$size" "$gid" || break 2; done
  done
  pp pp-evidence-perftest 30 evidence "$R"/perftest-{write,read}-{65536,8388608}.out -i "$R/capture-rdma.tar.gz"
  if [ -n "$created" ]; then
    step rdma-link-delete 15 "${XENV[@]}" "$rdma" link delete "$created"
  fi
}

# GPUDirect Storage. No NVMe here, so probe-storage reads a file it creates in a folder of the
# disk holding $TOP (--dir); without nvidia-fs every cell must say compat. cuFile registers a
# file only where udev has a record of its disk (cufile.log otherwise: `udev property not found:
# ID_FS_USAGE`); a VM that runs no udevd has no /run/udev/data at all, and only then is that one
# record written (gds-udev-record.txt says so). cuFile writes cufile.log in its working folder.
gds() {
  local d="$TOP/gds" dev fs
  mkdir -p "$d"
  dev=$(findmnt -no MAJ:MIN -T "$d" 2>/dev/null | head -1 | tr -d ' ')
  fs=$(findmnt -no FSTYPE -T "$d" 2>/dev/null | head -1)
  if [ -n "$dev" ] && [ ! -d /run/udev/data ]; then
    mkdir -p /run/udev/data &&
      printf 'E:ID_FS_USAGE=filesystem\nE:ID_FS_TYPE=%s\n' "$fs" > "/run/udev/data/b$dev" &&
      echo "wrote /run/udev/data/b$dev (ID_FS_TYPE=$fs): no udev database on this machine" > "$R/gds-udev-record.txt"
  fi
  pp gds-audit 30 audit --format json
  (cd "$d" && pp gds-probe 90 probe-storage --dir "$d" --size 268435456 --passes 3 --format json)
  (cd "$d" && pp gds-probe-text 60 probe-storage --dir "$d" --size 134217728 --passes 2)
  cp "$d/cufile.log" "$R/gds-cufile.log" 2>/dev/null
}

raw_sysfs() {
  step raw-sysfs 60 python3 - "$R/raw-sysfs.tar.gz" << 'PY'
import os, sys, tarfile, io
out = tarfile.open(sys.argv[1], "w:gz"); seen = set()
def add_file(p):
    try:
        with open(p, "rb") as f: b = f.read(1 << 20)
    except Exception: return
    ti = tarfile.TarInfo(p.lstrip("/")); ti.size = len(b); out.addfile(ti, io.BytesIO(b))
def add_link(p):
    ti = tarfile.TarInfo(p.lstrip("/")); ti.type = tarfile.SYMTYPE; ti.linkname = os.readlink(p); out.addfile(ti)
def walk(d, depth=0):
    if d in seen or depth > 12: return
    seen.add(d)
    try: names = os.listdir(d)
    except Exception: return
    for n in names:
        p = os.path.join(d, n)
        if os.path.islink(p):
            try: add_link(p)
            except Exception: pass
        elif os.path.isdir(p):
            if n not in ("power", "msi_irqs", "wakeup", "consumers", "suppliers"): walk(p, depth + 1)
        elif n not in ("rom", "remove", "rescan", "reset") and not n.startswith("resource"):
            add_file(p)
for n in os.listdir("/sys/bus/pci/devices"): add_link("/sys/bus/pci/devices/" + n)
for root in os.listdir("/sys/devices"):
    if root.startswith("pci"): walk("/sys/devices/" + root)
for n in os.listdir("/sys/class/net"): add_link("/sys/class/net/" + n)
out.close(); print("dirs", len(seen))
PY
  step smi-state-after 20 nvidia-smi --query-gpu=name,pci.bus_id,pstate,clocks.sm,temperature.gpu --format=csv
}

summary() {
  cat > "$R/summary.py" << 'PY'
import json, os, re, statistics, sys
R = sys.argv[1]
def text(name):
    try:
        return open(os.path.join(R, name), errors="replace").read()
    except OSError:
        return None
def doc(name):
    t = text(name)
    try:
        return json.loads(t) if t else None
    except ValueError:
        return None
steps = {}
for line in (text("steps.txt") or "").splitlines():
    f = line.split()
    if len(f) >= 2:
        steps[f[0]] = f[1].removeprefix("rc=")
def rc(name):
    return steps.get(name, "not run")
def last_line(name):
    t = (text(name + ".err") or "").strip() or (text(name + ".out") or "").strip()
    return t.splitlines()[-1][:160] if t else ""
out = []
p = out.append
commit = (text("peerpath-commit.out") or "?").split()[:1]
p(f"gpu-check summary — peerpath {commit[0] if commit else '?'}; {last_line('uname')[:80]}")
smi = text("smi-state-before.out")
p("GPU: " + (smi.strip().splitlines()[-1] if smi and smi.strip() else f"nvidia-smi rc={rc('smi')} {last_line('smi')}"))
rdma_before = (text("rdma-class.out") or "").count("->")
p(f"RDMA devices at start: {rdma_before}")

def cuda_of(d):
    c = (d or {}).get("cuda") or {}
    devs = c.get("devices") or []
    return (devs[0] if devs else None), c.get("reason")
def cells(d):
    counts = {}
    for r in (d or {}).get("results") or []:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    return ", ".join(f"{v} {k}" for k, v in sorted(counts.items())) or "none"

torch = text("torch-copy.out") or ""
tv = dict(re.findall(r"torch (h2d|d2h)_gbps=([0-9.]+)", torch))
p(f"PyTorch pinned copy: " + (f"H2D {tv['h2d']} GB/s, D2H {tv['d2h']} GB/s" if len(tv) == 2 else f"n/a (rc={rc('torch-copy')} {last_line('torch-copy')})"))
for name, what in (("probe-cuda", "probe --memory cuda (default fabric)"),
                   ("probe-ofi-cuda", "probe --fabric ofi --memory cuda")):
    d = doc(name + ".out")
    dev, why = cuda_of(d)
    line = f"{what}: rc={rc(name)}"
    if d and d.get("error"):
        line += f"; could not run: {d['error']}"
    elif d:
        line += f"; NIC cells: {cells(d)}"
    if dev and dev.get("h2d_gbytes_per_s"):
        h, g = dev["h2d_gbytes_per_s"], dev["d2h_gbytes_per_s"]
        line += f"; CUDA {dev.get('name')}: H2D {h:.2f}, D2H {g:.2f} GB/s, dma-buf export {dev.get('dma_buf_export')}, GDR attr {dev.get('gpudirect_rdma_supported')}"
        if len(tv) == 2:
            line += f"; ÷ PyTorch: H2D {h / float(tv['h2d']):.3f}, D2H {g / float(tv['d2h']):.3f}"
    elif why:
        line += f"; CUDA probes: {why[:100]}"
    elif not d:
        line += f" ({last_line(name)})"
    p(line)

err = (text("nccl-ours.out") or "") + (text("nccl-ours.err") or "")
if rc("nccl-ours") == "0":
    loaded = "Loading topology file" in err
    warns = [l for l in err.splitlines() if " NCCL WARN " in l]
    p(f"NCCL with our NCCL_TOPO_FILE: rc=0, file loaded: {'yes' if loaded else 'NO'}, WARN lines: {len(warns)}"
      + (f" (first: {warns[0][:120]})" if warns else "") + f" → took our file without a warning: {'yes' if loaded and not warns else 'NO'}")
    aff = re.findall(r"Affinity for GPU \d+ is ([^.]*)\.", err)
    own = (text("nccl-own.out") or "") + (text("nccl-own.err") or "")
    aff_own = re.findall(r"Affinity for GPU \d+ is ([^.]*)\.", own)
    p(f"  NCCL affinity with our file: {aff[:1]}, with its own detection: {aff_own[:1]}")
else:
    p(f"NCCL: rc own={rc('nccl-own')} ours={rc('nccl-ours')} {last_line('nccl-ours')}")

times = {}
for line in (text("timing.txt") or "").splitlines():
    n, ms, code = line.split()
    if code == "0":
        times.setdefault(n, []).append(float(ms))
def med(n):
    v = times.get(n)
    return (statistics.median(v), len(v)) if v else (None, 0)
m, k = med("pp-matrix"); s, j = med("smi-topo-m")
if m is not None:
    line = f"matrix timing: peerpath matrix median {m:.1f} ms ({k} runs)"
    line += f", nvidia-smi topo -m {s:.1f} ms ({j} runs) → {m / s:.2f}×" if s else ", nvidia-smi topo -m n/a"
    for n, what in (("pp-matrix-sysfs-only", "peerpath matrix -i / (no NVML)"), ("smi-list", "nvidia-smi -L")):
        v, c = med(n)
        if v is not None:
            line += f"; {what} {v:.1f} ms"
    p(line)
else:
    p("matrix timing: n/a")

soft = text("soft-rdma.txt") or ""
dev = re.search(r"soft RDMA: (\S+)", soft)
if dev and dev.group(1) != "none":
    p(f"soft RDMA: {dev.group(1)} ({soft.splitlines()[0]})")
    host = doc("probe-verbs-host.out")
    p(f"  probe --fabric verbs --memory host: rc={rc('probe-verbs-host')}; cells: {cells(host)}")
    cud = doc("probe-verbs-cuda.out")
    p(f"  probe --fabric verbs --memory cuda: rc={rc('probe-verbs-cuda')}; cells: {cells(cud)}")
    for op in ("write", "read"):
        for size in (65536, 8388608):
            t = text(f"perftest-{op}-{size}.out") or ""
            pf = None
            for l in t.splitlines():
                f = l.split()
                if len(f) >= 4 and f[0] == str(size):
                    try:
                        pf = float(f[3]) / 8
                    except ValueError:
                        pass
            ours = [r["gbytes_per_s"] for r in (host or {}).get("results") or []
                    if r["direction"] == "host_to_host" and r["op"] == op and r["message_bytes"] == size and r["verified"]]
            line = f"  {op} {size >> 10} KiB: probe {ours[0]:.3f} GB/s" if ours else f"  {op} {size >> 10} KiB: probe n/a"
            line += f", ib_{op}_bw {pf:.3f} GB/s" if pf else f", ib_{op}_bw n/a (rc={rc(f'perftest-{op}-{size}')})"
            if ours and pf:
                line += f" → {ours[0] / pf:.2f}×"
            p(line)
else:
    tried = [f"{n}: rc={rc(n)} {last_line(n)}" for n in ("rxe-modprobe", "rxe-link-add", "siw-modprobe", "siw-link-add") if n in steps]
    p("soft RDMA: none came up" + ("; " + "; ".join(tried) if tried else ""))
    mods = (text("kernel-rdma-modules.out") or "").strip().replace("\n", ", ")
    p(f"  kernel modules seen: {mods[:200] or 'none'}")

gaudit = doc("gds-audit.out")
if gaudit:
    g = [f"{f['id']} {f['severity']}" for f in gaudit.get("findings") or [] if f["id"].startswith("gds-")]
    p(f"GDS audit: {', '.join(g) or 'no gds-* finding'}")
gp = doc("gds-probe.out")
if gp and gp.get("cells"):
    c = gp["cells"][0]
    rate = lambda r: f"{r['gbytes_per_s']:.2f} GB/s {'verified' if r['verified'] else 'UNVERIFIED'}" if r else "not measured"
    p(f"GDS probe-storage: rc={rc('gds-probe')}; cuFile path {c['path']} (compat expected without nvidia-fs: {'yes' if c['path'] == 'compat' else 'NO'}); "
      f"cuFile {rate(c.get('cufile'))}, pread+copy {rate(c.get('posix'))}" + (f"; errors: {'; '.join(c['errors'])[:160]}" if c.get("errors") else ""))
    if text("gds-udev-record.txt"):
        p("  " + text("gds-udev-record.txt").strip())
else:
    p(f"GDS probe-storage: rc={rc('gds-probe')}; " + ((gp or {}).get("unavailable") or last_line("gds-probe"))[:200])

bad = [n for n, c in steps.items() if c not in ("0",)]
p(f"steps: {len(steps)} run, {len(bad)} not rc 0" + (f" ({', '.join(f'{n}={steps[n]}' for n in bad[:14])}{', …' if len(bad) > 14 else ''})" if bad else ""))
print("\n".join(out))
PY
  python3 "$R/summary.py" "$R" > "$R/summary.txt" 2> "$R/summary.err" ||
    { echo "summary.py failed (rc=$?); steps.txt has every step"; cat "$R/summary.err"; } >> "$R/summary.txt"
  cp "$R/summary.txt" "$OUT/summary.txt"
}

trap 'summary; pack' EXIT
trap 'exit 143' TERM INT # a run stopped from outside still writes its summary and tarball
echo "gpu-check: results in $OUT (working folder $TOP), budget ${BUDGET_S}s"
[ -x "$PP" ] || echo "warning: $PP missing: run scripts/gpu-check-prepare.sh first" | tee "$R/peerpath-missing.txt"
for phase in $PHASES; do
  "$phase"
  pack
done
