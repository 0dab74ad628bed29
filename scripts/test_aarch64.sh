#!/usr/bin/env bash
# test_aarch64.sh — tfm on AArch64 without Arm hardware: cross-builds the
# numeric core and its unit tests with Debian's aarch64 cross compiler
# against Debian's arm64 BLIS, runs them under qemu-aarch64 (user mode) on
# each path of the low-precision products — NEON with the dot-product
# instructions (SDOT, -cpu max), plain NEON (TFM_LOWP_FORCE=neon) and the
# portable fallback (TFM_LOWP_FORCE=fallback) — and builds the extension's
# shared library for arm64 (src/pg against the arm64 server headers).
#
# Installs what is missing (gcc-aarch64-linux-gnu, libc6-dev-arm64-cross,
# qemu-user; root or sudo) and unpacks the arm64 packages it links with
# (libblis4-openmp, libblis-openmp-dev, libpcre2, postgresql-server-dev-15) into a
# sysroot of its own, fetched by a private apt state (the system's apt
# configuration is left alone).  Everything goes to build/aarch64.
#
#   scripts/test_aarch64.sh           the unit tests, quick (TFM_TEST_QUICK=1:
#                                     fewer shapes and steps) on every path
#   scripts/test_aarch64.sh --full    the unit tests as `make unittest` runs them
#   scripts/test_aarch64.sh --smoke   the build, then test_lowp and test_kquant
#                                     on each path (scripts/test.sh runs this)
#
# qemu emulates the instructions, it does not time them: nothing here is a
# measurement of Arm hardware.  Exits non-zero when any test fails.
set -euo pipefail
cd "$(dirname "$0")/.."

QUICK=1
SMOKE=
[ "${1:-}" = "--full" ] && QUICK=
[ "${1:-}" = "--smoke" ] && SMOKE=1
OUT=$PWD/build/aarch64
SYSROOT=$OUT/sysroot
CROSS=aarch64-linux-gnu-gcc
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"

# ---- the cross tools (amd64 packages) ----------------------------------------
missing=()
for p in gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "== installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# ---- the arm64 packages, unpacked into the sysroot -------------------------
if [ ! -f "$SYSROOT/.complete-pcre2" ]; then
  echo "== arm64 BLIS and server headers into $SYSROOT"
  apt_dir=$OUT/apt
  mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/debs" "$SYSROOT"
  apt_opts=(-q -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache"
            -o APT::Architecture=arm64 -o APT::Architectures::=arm64
            -o Dir::State::status=/dev/null -o APT::Sandbox::User=root)
  apt-get "${apt_opts[@]}" update >/dev/null
  (cd "$apt_dir/debs" && apt-get "${apt_opts[@]}" download \
     libblis4-openmp:arm64 libblis-openmp-dev:arm64 libpcre2-8-0:arm64 libpcre2-dev:arm64 \
     postgresql-server-dev-15:arm64 >/dev/null)
  for deb in "$apt_dir"/debs/*.deb; do
    dpkg-deb -x "$deb" "$SYSROOT"
  done
  touch "$SYSROOT/.complete-pcre2"
fi

# ---- build, then run ---------------------------------------------------------
mk=(make -s -f scripts/aarch64.mk CC=$CROSS OUT="$OUT" BLIS_ROOT="$SYSROOT"
    PG_INC="$SYSROOT/usr/include/postgresql/15/server")
echo "== cross-building the core, its unit tests and tfm.so for aarch64"
nproc=$(nproc 2>/dev/null || echo 2)
"${mk[@]}" -j"$nproc" all extension
file -b "$OUT/tfm.so" | grep -q 'ARM aarch64' || { echo "tfm.so is not an arm64 object" >&2; exit 1; }
echo "== the extension: $OUT/tfm.so ($(file -b "$OUT/tfm.so" | cut -d, -f1-2))"

# -cpu max: an Armv8.x+ CPU with the dot-product instructions (SDOT)
if [ -n "$SMOKE" ]; then
  # what scripts/test.sh runs: the low-precision kernels on each path (a
  # few minutes; the whole suite under qemu takes an hour)
  run="qemu-aarch64 -cpu max -L /usr/aarch64-linux-gnu"
  for force in "" neon fallback; do
    echo "== test_lowp and test_kquant under qemu-aarch64 -cpu max${force:+, TFM_LOWP_FORCE=$force} (TFM_TEST_QUICK=1)"
    TFM_TEST_QUICK=1 TFM_LOWP_FORCE=$force $run "$OUT/test/unit/test_lowp" | tail -1
    TFM_TEST_QUICK=1 TFM_LOWP_FORCE=$force $run "$OUT/test/unit/test_kquant" | tail -1
  done
  echo "== the aarch64 build and its low-precision kernels passed"
  exit 0
fi
echo "== unit tests under qemu-aarch64 -cpu max${QUICK:+ (TFM_TEST_QUICK=1)}"
TFM_TEST_QUICK=$QUICK "${mk[@]}" RUN="qemu-aarch64 -cpu max -L /usr/aarch64-linux-gnu" unittest
echo "== all aarch64 unit tests passed"
