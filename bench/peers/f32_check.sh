#!/bin/bash
# bench/peers/f32_check.sh — tfm against llama.cpp on one GGUF file of
# make_models.py's big shapes, computed exactly (issue 40): whether tfm's
# graph for the family is llama.cpp's, apart from the weights' rounding.
#
#   make_models.py llama DIR --size 1b|qwen3-0.6b|3b --f32 [--layers N]
#   bench/peers/f32_check.sh DIR [F32 fp32 | Q4_K_M gguf]
#
# The file DIR/model-KIND.gguf (default F32) is run by llama.cpp with an F32
# key/value cache and flash attention off (llama_gen.mjs: the greedy ids of
# prompts.json's generation prompt; llama_probs.mjs: its full distributions
# decoding them, and its prefill of each prefix), and by tfm at
# tfm.precision PREC (default fp32) in a throwaway cluster (scripts/cluster.sh,
# tfm_import_gguf_file): its greedy ids and its distributions teacher-forced
# on llama.cpp's ids (tfm_next_tokens).  Prints the leading greedy ids equal
# and q4km_rounding.py --no-forward --above 1e-30's distances (centred
# log-probabilities: over every id, floored at float32's least normal, and
# over the ids both give p > 1e-30).  llama.cpp decoding against its own
# prefill is the yardstick.  The llama.cpp outputs are kept in DIR and
# reused; tfm's go to DIR/tfm-KIND-PREC.
#
# Environment: PGBIN (tfm installed for it), TOKENS (default 64),
# WORK_MEM (tfm.work_mem, default 16GB).  Heavy: run it under nice; at 1b
# F32 the file is 4.9 GB and tfm's import backend takes several GB.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
cd "$HERE/../.."
D=$(cd "$1" && pwd); KIND=${2:-F32}; PREC=${3:-fp32}; N=${TOKENS:-64}
F=$D/model-$KIND.gguf
[ -f "$F" ] && [ -f "$D/prompts.json" ] || { echo "no $F or $D/prompts.json" >&2; exit 2; }
PY=/usr/bin/python3
PSQL="psql -X -q -At -v ON_ERROR_STOP=1"
# the vocabulary's size, from the file's token list (the output's width)
V=$("$PY" - "$F" <<'PYEOF'
import struct, sys
with open(sys.argv[1], "rb") as f:
    b = f.read(64 << 20)
o = 24
def u(fmt):
    global o
    v = struct.unpack_from("<" + fmt, b, o)[0]; o += struct.calcsize("<" + fmt); return v
def skip(t):
    global o
    if t == 8:
        n = u("Q"); o += n; return
    if t == 9:
        tt, n = u("I"), u("Q")
        if tt == 8:
            for _ in range(n):
                m = u("Q"); o += m
        else: o += n * {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}[tt]
        return n
    o += {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}[t]
nkv = struct.unpack_from("<Q", b, 16)[0]
for _ in range(nkv):
    n = u("Q"); k = b[o:o + n].decode(); o += n
    n = skip(u("I"))
    if k == "tokenizer.ggml.tokens":
        print(n); break
PYEOF
)
log() { echo "[$(date -u '+%H:%M:%S')] $*"; }
T=$D/tfm-$KIND-$PREC; mkdir -p "$T"; chmod a+rx "$D" "$T"
if [ ! -s "$D/llama_prefill-$KIND.jsonl" ]; then
  log "llama.cpp $KIND (F32 cache, flash attention off): greedy ids, distributions decoding and prefilling"
  (cd "$HERE" && node llama_gen.mjs "$F" --threads 1 --prompts "$D/prompts.json" --tokens "$N" --rounds 1 --kv F32 --flash-attention off |
     sed -n 's/^IDS //p' > "$D/llama_ids-$KIND.txt" &&
   node llama_probs.mjs "$F" --prompts "$D/prompts.json" --tokens "$N" --top "$V" --kv F32 --flash-attention off --threads 1 \
     > "$D/llama_decode-$KIND.jsonl" &&
   node llama_probs.mjs "$F" --prompts "$D/prompts.json" --tokens "$N" --top "$V" --kv F32 --flash-attention off --threads 1 \
     --teacher "$D/llama_decode-$KIND.jsonl" > "$D/llama_prefill-$KIND.jsonl")
fi
IDS=$("$PY" -c 'import json, sys; print(",".join(str(json.loads(l)["id"]) for l in open(sys.argv[1])))' "$D/llama_decode-$KIND.jsonl")
P=$("$PY" -c 'import json, sys; print(",".join(map(str, json.load(open(sys.argv[1]))["generate"])))' "$D/prompts.json")
. scripts/cluster.sh
cluster_start "tfm.work_mem=${WORK_MEM:-16GB}"
$PSQL -c "CREATE EXTENSION tfm"
log "tfm: importing $F"
$PSQL -c "SELECT 'imported: ' || parameters || ' parameters' FROM tfm_import_gguf_file('m', '$F')"
log "tfm $PREC: greedy ids, distributions teacher-forced on llama.cpp's"
$PSQL -c "SET tfm.threads = 1" -c "SET tfm.precision = $PREC" \
  -c "SELECT string_agg(id::text, ',' ORDER BY pos) FROM tfm_generate_tokens('m', '{$P}'::int[], max_tokens => $N, temperature => 0)" \
  > "$T/ids.txt"
$PSQL -F ' ' > "$T/probs.txt" <<SQL
SET tfm.threads = 1;
SET tfm.precision = $PREC;
SELECT s, n.id, n.probability FROM generate_series(0, $N - 1) s,
  LATERAL tfm_next_tokens('m', '{$P}'::int[] || ('{$IDS}'::int[])[1:s], k => $V) n;
SQL
cluster_stop
"$PY" -c '
import sys
a, b = sys.argv[1].split(","), open(sys.argv[2]).read().strip().split(",")
k = 0
while k < min(len(a), len(b)) and a[k] == b[k]:
    k += 1
print("greedy ids, tfm %s = llama.cpp %s (F32 cache, flash attention off): %d/%d leading ids equal" % (sys.argv[3], sys.argv[4], k, len(a)))
' "$IDS" "$T/ids.txt" "$PREC" "$KIND" | tee "$T/distances.txt"
echo "teacher-forced on llama.cpp's $N greedy ids:" | tee -a "$T/distances.txt"
"$PY" "$HERE/q4km_rounding.py" "$F" "$D/prompts.json" --no-forward --tokens "$N" --above 1e-30 \
  --llama "$D/llama_decode-$KIND.jsonl" --probs "tfm $PREC=$T/probs.txt" --probs "llama.cpp prefill=$D/llama_prefill-$KIND.jsonl" |
  tee -a "$T/distances.txt"
