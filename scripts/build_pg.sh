#!/usr/bin/env bash
# build_pg.sh — build a PostgreSQL server of another major version from
# Debian's source package, for testing tfm against it; prints its pg_config.
#
#   scripts/build_pg.sh VERSION        (17 or 18; 15 is Debian 12's own)
#
# The server goes into $TFM_PG_CACHE/pg-VERSION (default /var/cache/tfm),
# reused when present: a second call only prints the path.  The source comes
# from Debian's archive with apt-get source, through a sources list, state
# and cache of its own under $TFM_PG_CACHE/apt (the system's apt
# configuration is not touched): postgresql-17 from trixie, postgresql-18
# from sid.  No suite has a postgresql-16 source package.
#
# Only what tfm's tests use is built: the server, its client programs,
# PL/pgSQL, pg_regress and PGXS, and postgres_fdw from contrib
# (test/cluster/test_scaleout.sh); no documentation,
# no other contrib module, no ICU, readline, NLS, JIT or debug symbols.
# PGXS takes CFLAGS from pg_config, so the server is built -O2 (configure's
# default) and tfm with it.  Needs root (or sudo) for the build dependencies
# only (bison, flex, zlib1g-dev, dpkg-dev).  Progress goes to stderr; the
# pg_config path alone to stdout.
#
#   scripts/build_pg.sh --deps         only installs the build dependencies
#                                      (scripts/test.sh, before it builds in
#                                      the background)
set -euo pipefail
version=${1:?usage: build_pg.sh VERSION}
log() { echo "build_pg.sh: $*" >&2; }
install_deps() {
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  missing=()
  for p in bison flex zlib1g-dev dpkg-dev build-essential; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    log "installing ${missing[*]}"
    $SUDO apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
  fi
}
[ "$version" = --deps ] && { install_deps; exit 0; }
# pinned: the version fetched by its address when the archive's index names
# files the mirror does not serve (trixie's index named 17.12 on 2026-12-02,
# the pool held 17.11; sid's 18.6-3 pinned the same way, 2026-12-02); the
# .dsc's sha256 was read from the pool that day,
# and dpkg-source checks the tarballs against the .dsc
pinned_dsc="" pinned_sha=""
case "$version" in
  17) suite=trixie
      pinned_dsc=pool/main/p/postgresql-17/postgresql-17_17.11-0+deb13u1.dsc
      pinned_sha=bf148ae423a982707c3f60672c3a072ef62b701bd9f5df847d9f4b8c9b3e3b18 ;;
  18) suite=sid
      pinned_dsc=pool/main/p/postgresql-18/postgresql-18_18.6-3.dsc
      pinned_sha=a4254c4548ebeea683832de193460ee8a9f1271418e884803b44ded1aead1776 ;;
  16) echo "build_pg.sh: no Debian suite has a postgresql-16 source package" >&2; exit 2 ;;
  *)  echo "build_pg.sh: no source for PostgreSQL $version (17 or 18; 15 is Debian 12's package)" >&2; exit 2 ;;
esac
cache=${TFM_PG_CACHE:-/var/cache/tfm}
prefix=$cache/pg-$version
if [ -x "$prefix/bin/pg_config" ] && [ -f "$prefix/.complete" ]; then
  echo "$prefix/bin/pg_config"
  exit 0
fi
mkdir -p "$cache"
# one build of a version at a time: a second caller waits, then finds it built
exec 9>"$cache/pg-$version.lock"
flock 9
if [ -f "$prefix/.complete" ]; then echo "$prefix/bin/pg_config"; exit 0; fi

install_deps

# apt's own tree for Debian's source packages: the system's lists stay as they are
apt=$cache/apt
mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial"
echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $suite main" \
  > "$apt/$suite.list"
aptopts=(-o "Dir::Etc::SourceList=$apt/$suite.list" -o Dir::Etc::SourceParts=/dev/null
         -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache" -o APT::Sandbox::User=root)
log "fetching the source of postgresql-$version ($suite)"
apt-get "${aptopts[@]}" -qq update >&2
work=$(mktemp -d "$cache/build-$version.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"
if ! apt-get "${aptopts[@]}" -qq source --download-only "postgresql-$version" >&2; then
  [ -n "$pinned_dsc" ] || exit 1
  log "the archive does not serve the version its index names: fetching ${pinned_dsc##*/}"
  rm -f ./*.dsc
  mirror=http://deb.debian.org/debian
  dsc=${pinned_dsc##*/}
  /usr/lib/apt/apt-helper download-file "$mirror/$pinned_dsc" "$dsc" "SHA256:$pinned_sha" >&2
  # the tarballs the .dsc names, each checked against its sha256 there
  sed -n '/^Checksums-Sha256:/,/^[^ ]/p' "$dsc" | awk 'NF == 3 { print $1, $3 }' |
  while read -r sha file; do
    /usr/lib/apt/apt-helper download-file "$mirror/${pinned_dsc%/*}/$file" "$file" "SHA256:$sha" >&2
  done
fi
dpkg-source --no-check -x postgresql-"$version"_*.dsc src >&2
src=$work/src
log "building $(cd "$src" && dpkg-parsechangelog -S Version 2>/dev/null || echo "postgresql-$version") into $prefix"
rm -rf "$prefix"
cd "$src"
start=$SECONDS
./configure --prefix="$prefix" --without-icu --without-readline --without-llvm \
  --disable-nls --with-zlib >"$work/configure.log" 2>&1 || { tail -30 "$work/configure.log" >&2; exit 1; }
log "configured in $((SECONDS - start)) s"
{ make -j2 -s && make -s install && make -j2 -s -C contrib/postgres_fdw install; } >"$work/make.log" 2>&1 || { tail -50 "$work/make.log" >&2; exit 1; }
log "built and installed in $((SECONDS - start)) s"
dpkg-parsechangelog -S Version > "$prefix/.complete" 2>/dev/null || echo "$version" > "$prefix/.complete"
echo "$prefix/bin/pg_config"
