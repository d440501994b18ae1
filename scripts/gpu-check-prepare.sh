#!/usr/bin/env bash
# Fills .dev/ (git-ignored) with what scripts/gpu-check.sh needs on a GPU machine that has no
# network: a stripped release peerpath built from this checkout, and the Debian 12 packages the
# check unpacks into a private prefix there (never into /): rdma-core's verbs libraries and
# providers (rxe, siw), ibverbs-utils, perftest (ib_write_bw, ib_read_bw), iproute2 (its `rdma`
# tool), libfabric with its dependencies, pciutils, hwloc, kmod, and the small libraries they
# link that a non-Debian machine may lack. Run it here, in a checkout, before the device run:
#
#   bash scripts/gpu-check-prepare.sh        # then carry .dev to the device
#
# Needs cargo, strip and apt-get (packages fetched with `apt-get download`: nothing is
# installed here). The whole of .dev stays well under the 64 MiB the device takes.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DEV=$ROOT/.dev
LIMIT_MIB=48
PACKAGES=(
  # RDMA: verbs, providers (librxe, libsiw), rdma_cm, umad, tools
  rdma-core libibverbs1 ibverbs-providers ibverbs-utils librdmacm1 libibumad3 perftest
  # `rdma link add … type rxe`: iproute2's rdma tool and what it links
  iproute2 libmnl0 libbsd0 libmd0 libcap2
  # libfabric 1.17 and its providers' libraries
  libfabric1 libpsm-infinipath1 libpsm2-2 libnuma1 libatomic1 libuuid1
  libnl-3-200 libnl-route-3-200
  # lspci (the last run lacked a library for it), lstopo, modprobe
  pciutils libpci3 pci.ids hwloc-nox libhwloc15 kmod libkmod2
  libudev1 zlib1g liblzma5 libzstd1 libtinfo6 libssl3
)

mkdir -p "$DEV/debs"
echo "== peerpath (release, stripped)"
cargo build --release --manifest-path "$ROOT/Cargo.toml"
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
strip -o "$DEV/peerpath" "$TARGET/release/peerpath"
git -C "$ROOT" rev-parse HEAD > "$DEV/peerpath.commit"
git -C "$ROOT" status --porcelain --untracked-files=no | sed 's/^/dirty: /' >> "$DEV/peerpath.commit"

echo "== Debian packages"
rm -f "$DEV"/debs/*.deb
(cd "$DEV/debs" && apt-get download "${PACKAGES[@]}")
ls -l "$DEV"/debs > "$DEV/debs.txt"

size=$(du -sm "$DEV" | cut -f1)
echo "== .dev: ${size} MiB ($(ls "$DEV"/debs/*.deb | wc -l) packages; peerpath $(du -h "$DEV/peerpath" | cut -f1))"
if [ "$size" -gt "$LIMIT_MIB" ]; then
  echo "error: .dev is ${size} MiB, more than ${LIMIT_MIB} MiB (the device takes 64 MiB in all)" >&2
  exit 1
fi
echo "ready: bash scripts/gpu-check.sh  (carry: .dev)"
