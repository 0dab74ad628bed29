#!/bin/bash
# bench/perf_profile.sh — where the time of tfm's training step or inference
# forward goes: perf samples (software cpu-clock event, which works in VMs
# without hardware counters; DWARF call graphs) of bench_core, grouped by
# what the time is spent on.
#
#   bench/perf_profile.sh THREADS train|infer [SECONDS [MODEL]]
#
# MODEL is bench_core's --model (classify, the default; lm; seq2seq).
#
# Needs /usr/bin/perf and bench/bench_core (make -C bench).  Shares are of
# all samples of the process, every thread; set-up (model init, the first
# touch of the workspace) is a few percent and shown as such.  libblis is
# stripped, so BLIS is split by its callers: products called from inside
# attention (tfm_gemm_strided) and the rest (the linear layers' tfm_gemm).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
n="${1:-1}"; what="${2:-train}"; secs="${3:-6}"; model="${4:-classify}"
PERF="${PERF:-/usr/bin/perf}"
[ -x "$PERF" ] || { echo "perf not found at $PERF" >&2; exit 1; }
[ -x "$here/bench_core" ] || make -s -C "$here" bench_core >/dev/null
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
env OMP_NUM_THREADS="$n" BLIS_NUM_THREADS="$n" "$PERF" record -q -e cpu-clock -F 199 \
	--call-graph dwarf,16384 -o "$tmp/perf.data" "$here/bench_core" --threads "$n" \
	--model "$model" --what "$what" --seconds "$secs" --min-iters 3 --warmup 1 2>/dev/null | grep '^RESULT' || true
"$PERF" report -i "$tmp/perf.data" --no-children --sort dso,symbol --stdio -g none 2>/dev/null > "$tmp/flat.txt"
"$PERF" report -i "$tmp/perf.data" --children --sort symbol --stdio -g none 2>/dev/null > "$tmp/incl.txt"
/usr/bin/python3 - "$tmp/flat.txt" "$tmp/incl.txt" "$n" "$what" <<'PYEOF'
import re, sys
flat_f, incl_f, n, what = sys.argv[1:]
flat = []
for line in open(flat_f):
    m = re.match(r"\s*([0-9.]+)%\s+(\S+)\s+\[[^\]]+\]\s+(\S+)", line)
    if m:
        flat.append((float(m.group(1)), m.group(2), m.group(3)))
incl = {}
for line in open(incl_f):
    m = re.match(r"\s*([0-9.]+)%\s+([0-9.]+)%\s+\[[^\]]+\]\s+(\S+)", line)
    if m:
        incl[m.group(3)] = max(incl.get(m.group(3), 0.0), float(m.group(1)))

def has(s, *keys):
    return any(k in s for k in keys)

cats = [
    ("BLIS", lambda d, s: "libblis" in d),
    ("attention's own loops: softmax, dropout of the weights, softmax backward",
     lambda d, s: has(s, "tfm_attention", "masked_softmax_row", "dropout_weights", "softmax_backward_row")),
    ("layer norm", lambda d, s: "tfm_layernorm" in s),
    ("dropout / residual / ReLU / GELU (elementwise)",
     lambda d, s: d.startswith("bench_core") and has(s, "tfm_dropout", "tfm_residual", "tfm_activation",
                                                   "drop", "add", "accumulate", "relu", "gelu")),
    ("linear: bias copy, bias gradient", lambda d, s: "tfm_linear" in s),
    ("memset / memcpy (zeroing and copying buffers)", lambda d, s: has(s, "memset", "memmove", "memcpy")),
    ("optimizer: grad norm, clip, AdamW", lambda d, s: has(s, "tfm_adam", "tfm_grad_norm", "tfm_clip")),
    ("embedding, pooling, head, loss", lambda d, s: has(s, "tfm_embedding", "pool", "tfm_cross", "tfm_softmax",
                                                      "ce_row", "logsumexp")),
    ("OpenMP runtime (threads waiting: barriers, serial sections)", lambda d, s: "libgomp" in d),
    ("kernel (page faults, scheduling)", lambda d, s: "kernel" in d),
    ("bench set-up (model init, random data)",
     lambda d, s: has(s, "tfm_model_init", "tfm_rng", "measured_ghz", "random_batches") or
     (d.startswith("libm") and has(s, "cos", "log", "sin"))),
]
tot = {c[0]: 0.0 for c in cats}
other = {}
for pct, d, s in flat:
    for name, f in cats:
        if f(d, s):
            tot[name] += pct
            break
    else:
        other[f"{d}:{s}"] = other.get(f"{d}:{s}", 0.0) + pct

attn_gemm = incl.get("tfm_gemm_strided", 0.0)
blis = tot.pop("BLIS")
print(f"perf profile of tfm {what}, {n} thread(s) (share of all samples, every thread):")
print(f"  {blis - attn_gemm:5.1f}%  BLIS products of the linear layers (QKV, attention out, FF1, FF2)")
print(f"  {attn_gemm:5.1f}%  BLIS products inside attention (Q·Kᵀ, P·V and, in training, their backward;"
      " per batch row and head)")
for name, _ in cats[1:]:
    if tot[name] >= 0.05:
        print(f"  {tot[name]:5.1f}%  {name}")
rest = sum(other.values())
top = sorted(other.items(), key=lambda kv: -kv[1])[:4]
tops = ", ".join("%s %.1f%%" % (k, v) for k, v in top)
print(f"  {rest:5.1f}%  other ({tops})")
hot = sorted(((p, d, s) for p, d, s in flat if "libblis" not in d and "kernel" not in d), reverse=True)[:8]
name = lambda d, s: f"{d.split('.')[0]}:{s}" if s.startswith("0x") else s.split(".")[0]
print("  hottest functions outside BLIS: " + ", ".join(f"{name(d, s)} {p:.1f}%" for p, d, s in hot))
PYEOF
