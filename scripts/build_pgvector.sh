#!/usr/bin/env bash
# build_pgvector.sh — build pgvector from Debian's source package (trixie's,
# pgvector 0.8.0 now) and install it into the PostgreSQL that PG_CONFIG
# names (15 by default; a server of scripts/build_pg.sh as well).
#
#   PG_CONFIG=/path/to/pg_config scripts/build_pgvector.sh
#
# Debian 12 has no pgvector binary package.  The source is fetched once
# with apt-get source, through a sources list, state and cache of its own
# under $TFM_PG_CACHE/apt-pgvector (default /var/cache/tfm; the system's apt
# configuration is not touched; not scripts/build_pg.sh's apt tree, whose
# lock a concurrent build would hold), unpacked into $TFM_PG_CACHE/pgvector-VERSION
# and reused when present.  Each call builds it with PGXS against PG_CONFIG
# in a scratch copy, unless that server already has this version.  Needs
# root (or sudo) to install into a server it cannot write to.  Progress
# goes to stderr; scripts/setup.sh calls it.
set -euo pipefail
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
cache=${TFM_PG_CACHE:-/var/cache/tfm}
suite=trixie
log() { echo "build_pgvector.sh: $*" >&2; }
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
mkdir -p "$cache" 2>/dev/null || $SUDO mkdir -p "$cache"
lock=$cache/pgvector.lock
# a cache this user cannot write: written through sudo, locked in /tmp
[ -w "$cache" ] || { SUDO_CACHE="$SUDO"; lock=${TMPDIR:-/tmp}/tfm-pgvector.lock; }

# the source, fetched once (one caller at a time: a second waits, then finds it)
exec 9>>"$lock"
flock 9
src=$(ls -d "$cache"/pgvector-*/ 2>/dev/null | sort -V | tail -1 || true)
src=${src%/}
if [ -z "$src" ] || [ ! -f "$src/.complete" ]; then
  missing=()
  for p in dpkg-dev build-essential; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    log "installing ${missing[*]}"
    $SUDO apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
  fi
  apt=$cache/apt-pgvector
  ${SUDO_CACHE:-} mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial"
  echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $suite main" \
    | ${SUDO_CACHE:-} tee "$apt/$suite.list" >/dev/null
  aptopts=(-o "Dir::Etc::SourceList=$apt/$suite.list" -o Dir::Etc::SourceParts=/dev/null
           -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache" -o APT::Sandbox::User=root)
  log "fetching the source of pgvector ($suite)"
  ${SUDO_CACHE:-} apt-get "${aptopts[@]}" -qq update >&2
  work=$(${SUDO_CACHE:-} mktemp -d "$cache/fetch-pgvector.XXXXXX")
  trap '${SUDO_CACHE:-} rm -rf "$work"' EXIT
  (cd "$work" && ${SUDO_CACHE:-} apt-get "${aptopts[@]}" -qq source --download-only pgvector >&2 \
    && ${SUDO_CACHE:-} dpkg-source --no-check -x pgvector_*.dsc src >&2)
  version=$(cd "$work/src" && dpkg-parsechangelog -S Version | sed -e 's/-[^-]*$//')
  src=$cache/pgvector-$version
  ${SUDO_CACHE:-} rm -rf "$src"
  ${SUDO_CACHE:-} mv "$work/src" "$src"
  ${SUDO_CACHE:-} rm -rf "$work"
  echo "$version" | ${SUDO_CACHE:-} tee "$src/.complete" >/dev/null
  log "pgvector $version unpacked into $src"
fi
version=$(cat "$src/.complete")

# the build, against this server, unless it has this version already
ext=$("$PG_CONFIG" --sharedir)/extension
if [ -f "$ext/vector--$version.sql" ] && [ -f "$("$PG_CONFIG" --pkglibdir)/vector.so" ]; then
  log "pgvector $version is installed in $("$PG_CONFIG" --pkglibdir)"
  exit 0
fi
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
cp -a "$src/." "$build"
log "building pgvector $version against $("$PG_CONFIG" --version)"
# OPTFLAGS empty: not pgvector's default -march=native (its vector kernels
# choose AVX/F16C at run time); the server's CFLAGS as PGXS gives them
make -s -C "$build" -j2 PG_CONFIG="$PG_CONFIG" OPTFLAGS="" >&2
$SUDO make -s -C "$build" install PG_CONFIG="$PG_CONFIG" OPTFLAGS="" >&2
log "pgvector $version installed into $("$PG_CONFIG" --pkglibdir)"
