#!/usr/bin/env bash
# Runs every read-only command over a fixed set of inputs and writes each output to DIR, so a
# refactor can be checked for output changes: `scripts/golden-outputs.sh BIN DIR`, before and
# after, then `diff -r`. Timestamps (nfd expiry, prom now) are masked.
set -u
BIN=${1:?peerpath binary}; OUT=${2:?output dir}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$OUT"; TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
"$BIN" fixture hgx-h100 -o "$TMP/hgx-faults.tar.gz" --fault acs-redirect=0000:39:01.0 \
  --fault link-width=0000:ac:00.0,8 --fault aer=0000:ba:00.0,12,0,0 >/dev/null 2>&1
INPUTS=(
  "$ROOT/fixtures/synth/hgx-h100.tar.gz" "$ROOT/fixtures/synth/dgx-a100.tar.gz"
  "$ROOT/fixtures/synth/misplaced-nic.tar.gz" "$ROOT/fixtures/synth/vm-flat.tar.gz"
  "$TMP/hgx-faults.tar.gz"
  "$ROOT/fixtures/hwloc/32em64t-2n8c+dax+nvme+mic+dimms.tar.bz2"
  "$ROOT/fixtures/hwloc/nvidiagpunumanodes.tar.bz2"
  "$ROOT/fixtures/hwloc/40intel64-2g2n4c+pcilocality.tar.bz2"
  "$ROOT/fixtures/hwloc/nvidiaDGX2.xml" "$ROOT/fixtures/hwloc/power8gpudistances.xml"
  "$ROOT/fixtures/nccl/azure-ndv4-a100.nccl-topo.xml"
  "$ROOT/fixtures/nccl/hgx-a100-icelake-bcm-5bond.nccl-topo-dump.xml"
)
mask() { sed -E 's/(expir[a-z-]*[=:" ]+)[0-9T:.Z-]+/\1MASK/g; s/ [0-9]{10,}$/ MASK/; s/"now_unix": [0-9]+/"now_unix": MASK/'; }
run() { local name=$1; shift; { "$BIN" "$@" 2>&1; echo "exit=$?"; } | sed "s#$TMP#TMP#g; s#$ROOT#ROOT#g" | mask > "$OUT/$name"; }
for in in "${INPUTS[@]}"; do
  b=$(basename "$in"); b=${b%%.*}
  run "$b.scan" scan -i "$in"
  run "$b.scan.json" scan -i "$in" --format json
  run "$b.scan-all" scan -i "$in" --all
  run "$b.matrix" matrix -i "$in"
  run "$b.matrix.json" matrix -i "$in" --format json
  run "$b.matrix-2.19" matrix -i "$in" --nccl-version 2.19
  run "$b.explain" explain GPU0 NIC0 -i "$in"
  run "$b.explain.json" explain GPU0 NIC0 -i "$in" --json
  run "$b.explain-gpu" explain GPU0 GPU1 -i "$in"
  run "$b.audit" audit -i "$in"
  run "$b.audit.json" audit -i "$in" --format json
  run "$b.place" place -i "$in" --ranks 2
  run "$b.place.env" place -i "$in" --ranks 2 --format env
  run "$b.place.json" place -i "$in" --ranks 2 --format json
  run "$b.place.slurm" place -i "$in" --ranks 2 --format slurm
  run "$b.rails" rails -i "$in"
  run "$b.rails.json" rails -i "$in" --format json --nodes 4
  for f in gres nfd nccl-xml prom dot; do run "$b.export.$f" export -i "$in" --format $f; done
  run "$b.export.dra" export -i "$in" --format dra --node-name node-01
  run "$b.report.svg" report -i "$in" -o /dev/stdout --format svg
  run "$b.report.html" report -i "$in" -o /dev/stdout --format html
done
run audit.dgx-profile audit -i "$ROOT/fixtures/synth/dgx-a100.tar.gz" --profile dgx-a100
run diff.faults diff "$ROOT/fixtures/synth/hgx-h100.tar.gz" "$TMP/hgx-faults.tar.gz"
run diff.misplaced.json diff "$ROOT/fixtures/synth/hgx-h100.tar.gz" "$ROOT/fixtures/synth/misplaced-nic.tar.gz" --format json
mkdir -p "$TMP/fleet"; cp "$ROOT"/fixtures/synth/*.tar.gz "$TMP/hgx-faults.tar.gz" "$TMP/fleet/"
run fleet fleet "$TMP/fleet"
run fleet.json fleet "$TMP/fleet" --format json
"$BIN" probe --fabric ofi --provider tcp --memory host --format json --duration 0.2 --sizes 4096 2>/dev/null \
  | python3 -c 'import json,sys; d=json.load(sys.stdin); print(sorted(d.keys())); print(sorted(d["results"][0].keys()) if d.get("results") else "none")' > "$OUT/probe.keys" 2>&1
# audit, diff and place inputs (issue 56)
# Layouts with profiles, faults and job settings: audit --profile / --job, nextgen checks (C2C,
# Data Direct, ACS), place's chosen plan, rails and diff across moved and faulted nodes.
G56=(hgx-b300 gb300-tray mi300x-8gpu cray-ex-a100 polaris-a100 mi300a-4apu mi50-rome h200-bond hgx-h100-13nic hgx-h100-field)
for l in "${G56[@]}"; do "$BIN" fixture "$l" -o "$TMP/$l.tar.gz" >/dev/null 2>&1; done
"$BIN" fixture hgx-h100 -o "$TMP/moved.tar.gz" --fault move=0000:2a:00.0,1 --fault link-width=0000:3a:00.0,8 >/dev/null 2>&1
"$BIN" fixture gb300-tray -o "$TMP/gb300-vm.tar.gz" --fault vm --fault no-peermem >/dev/null 2>&1
"$BIN" fixture dgx-a100 -o "$TMP/dgx-faults.tar.gz" --fault move=0000:ba:00.0,0 --fault link-width=0000:46:00.0,4 >/dev/null 2>&1
P56=("${G56[@]/#/$TMP/}"); P56=("${P56[@]/%/.tar.gz}")
P56+=("$TMP/moved.tar.gz" "$TMP/gb300-vm.tar.gz" "$TMP/dgx-faults.tar.gz" "$ROOT/fixtures/diff/hgx-h100-five-faults.tar.gz"
  "$ROOT"/fixtures/platforms/*.xml "$ROOT"/fixtures/nccl/oci-*.xml "$ROOT"/fixtures/amd/rccl-topo-*.xml)
for in in "${P56[@]}"; do
  b=i56.$(basename "$in"); b=${b%%.tar.gz}
  run "$b.audit" audit -i "$in"
  run "$b.audit.json" audit -i "$in" --format json
  run "$b.audit.job" audit -i "$in" --job
  NCCL_NET_GDR_LEVEL=PHB NCCL_IB_HCA==mlx5_0:1,mlx5_5:1 NCCL_NET_GDR_C2C=0 run "$b.audit.job-env" audit -i "$in" --job
  NCCL_IB_HCA=^mlx5_1 NCCL_SOCKET_IFNAME=eth0 NCCL_NET_GDR_LEVEL=LOC run "$b.audit.env2" audit -i "$in" --job --format json
  for p in dgx-h100 dgx-a100 hgx-b300 gb300 rail-optimised; do run "$b.profile.$p" audit -i "$in" --profile $p; done
  run "$b.place4" place -i "$in" --ranks 4 --format json
  run "$b.place8" place -i "$in" --ranks 8
  run "$b.rails" rails -i "$in" --format json --nodes 2
done
for x in "$TMP/moved.tar.gz" "$TMP/dgx-faults.tar.gz" "$ROOT/fixtures/diff/hgx-h100-five-faults.tar.gz" "$TMP/hgx-h100-13nic.tar.gz" "$TMP/hgx-h100-field.tar.gz"; do
  b=$(basename "$x"); b=${b%%.tar.gz}
  run "i56.diff.$b" diff "$ROOT/fixtures/synth/hgx-h100.tar.gz" "$x"
  run "i56.diff.$b.json" diff "$x" "$ROOT/fixtures/synth/hgx-h100.tar.gz" --format json
done
run i56.diff.gb300-vm diff "$TMP/gb300-tray.tar.gz" "$TMP/gb300-vm.tar.gz"
run i56.diff.dgx diff "$ROOT/fixtures/synth/dgx-a100.tar.gz" "$TMP/dgx-faults.tar.gz"

# evidence and fabric maps (issue 56)
OCI="$ROOT/fixtures/evidence/topology/oci-bm-gpu-h100-8.nccl-topo.xml"
EV=()
for f in "$ROOT"/fixtures/evidence/* "$ROOT"/tests/data/evidence/* "$ROOT"/tests/data/evidence-held-out/*; do
  [ -f "$f" ] || continue
  EV+=("$f")
  d=$(basename "$(dirname "$f")"); b=$(basename "$f")
  run "evidence.$d.$b" evidence "$f"
  run "evidence.$d.$b.json" evidence "$f" --format json
  run "evidence.$d.$b.oci" evidence "$f" -i "$OCI" --format json
  run "evidence.$d.$b.8x200" evidence "$f" --nic-gbps 8x200
done
run evidence.all evidence "${EV[@]}"
run evidence.all.json evidence "${EV[@]}" --format json --nic-gbps 8x400
run evidence.hgx-faults evidence "$ROOT/fixtures/evidence/nccl-issue-707-8xa100-18nic.nccl-tests+nccl-info.EXCERPT.log" -i "$TMP/hgx-faults.tar.gz"
for f in "$ROOT"/fixtures/fabric/published/* "$ROOT"/fixtures/fabric/pods/*; do
  b=$(basename "$f")
  run "fabric.$b" rails --fabric-map "$f"
  run "fabric.$b.json" rails --fabric-map "$f" --format json
  run "fabric.$b.hgx" rails -i "$ROOT/fixtures/synth/hgx-h100.tar.gz" --fabric-map "$f"
  run "fabric.$b.hgx.json" rails -i "$ROOT/fixtures/synth/hgx-h100.tar.gz" --fabric-map "$f" --format json
  run "fabric.$b.switch.json" rails --lldp-from switch --fabric-map "$f" --format json
  run "fabric.$b.report.html" report -i "$ROOT/fixtures/synth/hgx-h100.tar.gz" --fabric-map "$f" -o /dev/stdout --format html
  # scheduler and Kubernetes exports from the map (issue 52), and the rails in NFD/DRA (issue 54)
  run "fabric.$b.slurm" export --format slurm-topology --fabric-map "$f"
  run "fabric.$b.slurm-block" export --format slurm-topology --slurm-plugin block --fabric-map "$f"
  run "fabric.$b.slurm-yaml" export --format slurm-topology-yaml --fabric-map "$f"
  run "fabric.$b.k8s" export --format k8s-topology --fabric-map "$f"
  run "fabric.$b.kueue" export --format kueue-topology --fabric-map "$f"
  run "fabric.$b.nfd" export --format nfd -i "$ROOT/fixtures/synth/hgx-h100.tar.gz" --fabric-map "$f"
  run "fabric.$b.dra" export --format dra --node-name n1 -i "$ROOT/fixtures/synth/hgx-h100.tar.gz" --fabric-map "$f"
done
for f in "$ROOT"/fixtures/bundles/*.md; do
  b=$(basename "$f")
  run "bundle.$b.scan" scan -i "$f"
  run "bundle.$b.scan.json" scan -i "$f" --format json
done

# synth layouts and cabling pictures (issue 56)
# Every layout written as a tarball (listing with sizes/modes/mtimes, and the content of every file),
# a few with faults or unprivileged configs. The HTML report's cabling picture from every real map
# is `fabric.*.report.html` above.
LAYOUTS=$("$BIN" fixture --list | awk '/^[a-z]/{print $1}' | grep -v '^any$')
fx() { local name=$1; shift; local d="$TMP/fx-$name"; mkdir -p "$d/x"
  { "$BIN" fixture "$@" -o "$d/t.tar.gz" 2>&1; echo "exit=$?"; } | sed "s#$TMP#TMP#g" > "$OUT/fixture.$name"
  [ -f "$d/t.tar.gz" ] || return
  tar -tvzf "$d/t.tar.gz" >> "$OUT/fixture.$name"; tar -xzf "$d/t.tar.gz" -C "$d/x"
  (cd "$d/x" && find . -type f | LC_ALL=C sort | xargs -d '\n' sha256sum) >> "$OUT/fixture.$name"
  rm -rf "$d"; }
for l in $LAYOUTS scaling-64 many-vfs-4; do fx "$l" "$l"; done
fx hgx-h100-unpriv hgx-h100 --unprivileged
fx hgx-h100-faults hgx-h100 --fault acs-redirect=0000:39:01.0 --fault link-width=0000:ac:00.0,8 \
  --fault aer=0000:ba:00.0,12,0,0 --fault no-peermem --fault vm
fx hgx-h100-gds-faults hgx-h100-gds --fault no-nvidia-fs
fx mi300x-faults mi300x-8gpu --fault no-amdkfd-peer
run fixture.gb300.spec fixture gb300-tray --print-spec

# text sources and platforms (issue 56): lspci text and bug reports (fixtures/bundles), published
# platform and real-world XML, the real H200 VM snapshot, and the other input forms load_input
# reads (a snapshot directory, a directory of text, gzip text, peerpath JSON).
TEXTS=()
for f in "$ROOT"/fixtures/bundles/* "$ROOT"/fixtures/platforms/*.xml "$ROOT"/fixtures/realworld/*.xml \
  "$ROOT"/fixtures/amd/*.xml "$ROOT"/fixtures/real/h200-vm.tar.gz "$ROOT"/fixtures/real/*.xml \
  "$ROOT"/fixtures/gds/h200-vm-gds.tar.gz; do
  case "$f" in *README.md|*cases.json) continue ;; esac
  TEXTS+=("$f")
done
mkdir -p "$TMP/snapdir" "$TMP/textdir"
tar -xzf "$ROOT/fixtures/synth/hgx-h100.tar.gz" -C "$TMP/snapdir" 2>/dev/null
cp "$ROOT/fixtures/bundles/marcredhat-cmlgpu-dell-2s-broadwell-2x-p100.lspci-vvv.txt" "$TMP/textdir/"
gzip -c "$ROOT/fixtures/bundles/marcredhat-cmlgpu-dell-2s-broadwell-2x-p100.lspci-vvv.txt" > "$TMP/lspci-vvv.txt.gz"
"$BIN" scan -i "$ROOT/fixtures/synth/dgx-a100.tar.gz" --format json > "$TMP/dgx-a100.json" 2>/dev/null
TEXTS+=("$TMP/snapdir/hgx-h100" "$TMP/textdir" "$TMP/lspci-vvv.txt.gz" "$TMP/dgx-a100.json")
for in in "${TEXTS[@]}"; do
  b=t56.$(basename "$in")
  run "$b.scan" scan -i "$in"
  run "$b.scan.json" scan -i "$in" --format json
  run "$b.audit" audit -i "$in"
done
