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
done
for f in "$ROOT"/fixtures/bundles/*.md; do
  b=$(basename "$f")
  run "bundle.$b.scan" scan -i "$f"
  run "bundle.$b.scan.json" scan -i "$f" --format json
done
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
