#!/bin/bash
# bench/tokenizer/run.sh — the one command: tfm's BPE tokenizer on the State
# of the Union corpus (233 speeches, 10.8 MB), side by side with
# SentencePiece's BPE on the same text, in one run on this machine:
#
#   * training time for 8k and 32k vocabularies: the core (a C program
#     linked with the core's tokenizer objects) and SQL (the aggregate
#     tfm_tokenizer_train over a table, in a throwaway cluster);
#   * encode throughput (MB/s of UTF-8 text): the core, speech by speech,
#     and SQL, tfm_tokenize over the table; each with the tokenizer's
#     pre-token cache empty (first pass) and warm (the best of two more
#     passes);
#   * SentencePiece (Debian's python3-sentencepiece, one thread): trained on
#     sentences (it skips lines over 4,192 bytes), encoding timed speech by
#     speech and sentence by sentence.
#
#   bench/tokenizer/run.sh [--sizes "8000 32000"] [--data DIR] [--no-sp] [--no-install]
#
#   --sizes L       vocabulary sizes (default "8000 32000")
#   --data DIR      the shared data folder (default ../shared/data from the
#                   repository root, then /work/shared/data)
#   --no-sp         skip SentencePiece (it takes about a minute)
#   --no-install    do not run `make install` (as root it does by default, so
#                   that SQL runs the code of this checkout)
#
# Prints the table at the end; the whole log is kept in
# bench/tokenizer/last-run.log.  Needs make, cc, PostgreSQL 15 with its
# server headers, and /usr/bin/python3 with sentencepiece.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
sizes="8000 32000"
data=""
sp=1
install=1
while [ $# -gt 0 ]; do
	case "$1" in
		--sizes) sizes="$2"; shift 2 ;;
		--data) data="$2"; shift 2 ;;
		--no-sp) sp=0; shift ;;
		--no-install) install=0; shift ;;
		-h|--help) sed -n '2,25p' "$0"; exit 0 ;;
		*) echo "unknown option $1" >&2; exit 2 ;;
	esac
done
if [ -z "$data" ]; then
	for d in "$root/../shared/data" /work/shared/data; do
		[ -f "$d/sotu.tsv.gz" ] && { data="$(cd "$d" && pwd)"; break; }
	done
fi
sotu="$data/sotu.tsv.gz"
[ -f "$sotu" ] || { echo "sotu.tsv.gz not found (use --data DIR)" >&2; exit 1; }

PY=/usr/bin/python3
log="$here/last-run.log"
: > "$log"
say() { echo "$@" | tee -a "$log"; }
work="$(mktemp -d /tmp/tfm-tokbench.XXXXXX)"
chmod 755 "$work"
results="$work/results"
: > "$results"

say "== machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), kernel $(uname -r)"
say "== $(date -u '+%Y-%m-%d %H:%M:%S UTC'); corpus $sotu ($(gzip -dc "$sotu" | wc -c) bytes with its header and other columns)"
# timings on a busy machine mean little: wait (up to 2 minutes) for the load to drop
load1() { cut -d' ' -f1 /proc/loadavg; }
waited=0
while awk -v l="$(load1)" 'BEGIN { exit !(l > 0.5) }' && [ $waited -lt 120 ]; do
	[ $waited = 0 ] && say "   load $(load1) > 0.5: waiting up to 120 s for it to drop"
	sleep 5
	waited=$((waited + 5))
done
say "== load average $(load1)"

# ---- build -------------------------------------------------------------------
say "== building the core's tokenizer objects and bench_tok"
objs="$(cd "$root" && ls src/core/tokenizer/*.c src/core/tokenizer/*/*.c | sed 's/\.c$/.o/') src/core/util/status.o"
(cd "$root" && make -s $objs) >>"$log" 2>&1 || { cat "$log"; echo "build failed" >&2; exit 1; }
cc -std=gnu11 -O3 -march=x86-64-v2 -mtune=native -Wall -Wextra -I"$root/include" \
	-o "$work/bench_tok" "$here/bench_tok.c" $(cd "$root" && ls "$PWD"/src/core/tokenizer/*.o "$PWD"/src/core/tokenizer/*/*.o "$PWD"/src/core/util/status.o) >>"$log" 2>&1 \
	|| { cat "$log"; echo "bench_tok build failed" >&2; exit 1; }
if [ "$install" = 1 ] && [ "$(id -u)" = 0 ]; then
	say "== make && make install (the SQL part runs this checkout's tfm.so)"
	(cd "$root" && make -s && make -s install) >>"$log" 2>&1 || { cat "$log"; echo "install failed" >&2; exit 1; }
fi

# ---- the core ----------------------------------------------------------------------
say "== core: bench_tok (one thread)"
"$work/bench_tok" "$sotu" $sizes | sed 's/^/core /' | tee -a "$log" >>"$results"

# ---- SQL -----------------------------------------------------------------------------
say "== SQL: a throwaway cluster"
# shellcheck source=../../scripts/cluster.sh
. "$root/scripts/cluster.sh"
cluster_start
trap 'cluster_stop; rm -rf "$work"' EXIT
psql -X -q -v ON_ERROR_STOP=1 <<-EOF >>"$log" 2>&1
	CREATE EXTENSION tfm;
	CREATE TABLE sotu (id bigserial, year int, president text, party text, text text);
	\copy sotu (year, president, party, text) FROM PROGRAM 'gzip -dc $sotu' WITH (FORMAT csv, DELIMITER E'\t', HEADER true, QUOTE E'\x01')
	VACUUM ANALYZE sotu;
EOF
for v in $sizes; do
	psql -X -q -v ON_ERROR_STOP=1 -v v="$v" -At <<-'EOF' | sed 's/^/sql /' | tee -a "$log" >>"$results"
		SET tfm.threads = 1;
		-- read (and detoast) the table once, so that every timing finds it in memory
		SELECT sum(octet_length(text)) / 1e6 AS mb FROM sotu \gset
		SELECT extract(epoch FROM clock_timestamp()) AS t0 \gset
		SELECT tfm_tokenizer_train('sotu_bpe_' || :v, text, 'bpe', :v) FROM sotu \gset
		SELECT extract(epoch FROM clock_timestamp()) AS t1 \gset
		-- the first call reads the tokenizer's rows and builds it
		SELECT tfm_tokenize('sotu_bpe_' || :v, 'x') \gset
		SELECT extract(epoch FROM clock_timestamp()) AS t2 \gset
		SELECT sum(cardinality(tfm_tokenize('sotu_bpe_' || :v, text))) AS tokens FROM sotu \gset
		SELECT extract(epoch FROM clock_timestamp()) AS t3 \gset
		SELECT sum(cardinality(tfm_tokenize('sotu_bpe_' || :v, text))) AS tokens2 FROM sotu \gset
		SELECT extract(epoch FROM clock_timestamp()) AS t4 \gset
		SELECT sum(cardinality(tfm_tokenize('sotu_bpe_' || :v, text))) AS tokens2 FROM sotu \gset
		SELECT extract(epoch FROM clock_timestamp()) AS t5 \gset
		SELECT count(*) FILTER (WHERE tfm_detokenize('sotu_bpe_' || :v, tfm_tokenize('sotu_bpe_' || :v, text)) <> text)
		  AS bad FROM sotu \gset
		SELECT format('vocab=%s ids=%s mb=%s train_s=%s load_s=%s encode_cold_mbs=%s encode_warm_mbs=%s tokens=%s round_trip_failures=%s',
		              :v, (SELECT vocab_size FROM tfm.tokenizers WHERE name = 'sotu_bpe_' || :v), round(:mb, 2),
		              round(:t1 - :t0, 2), round(:t2 - :t1, 3), round(:mb / (:t3 - :t2), 2),
		              round(:mb / least(:t4 - :t3, :t5 - :t4), 2), :tokens, :bad);
	EOF
done
# the plan the aggregate got (the table's heap is 3 pages: the planner keeps it serial)
psql -X -q -At -c "EXPLAIN (COSTS OFF) SELECT tfm_tokenizer_train('x', text, 'bpe', 8000) FROM sotu" >>"$log" 2>&1
cluster_stop

# ---- SentencePiece ---------------------------------------------------------------
if [ "$sp" = 1 ]; then
	say "== SentencePiece BPE ($PY, one thread)"
	"$PY" "$here/sentencepiece_bpe.py" "$sotu" $sizes | sed 's/^/sp /' | tee -a "$log" >>"$results"
fi

# ---- the table -----------------------------------------------------------------------
say ""
"$PY" - "$results" "$sizes" <<-'EOF' | tee -a "$log"
	import sys
	rows = {}
	for line in open(sys.argv[1]):
	    who, *kv = line.split()
	    d = dict(x.split('=', 1) for x in kv)
	    rows[(who, int(d['vocab']))] = d
	sizes = [int(s) for s in sys.argv[2].split()]
	def cell(who, key, v, fmt='{}'):
	    d = rows.get((who, v))
	    return fmt.format(float(d[key])) if d and key in d else '-'
	lines = [
	    ('ids reached', [('tfm', 'core', 'ids', '{:.0f}'), ('SentencePiece', 'sp', 'ids', '{:.0f}')]),
	    ('training, s', [('tfm core (count + merges)', 'core', 'total_s', '{:.2f}'),
	                     ('tfm SQL aggregate over the table', 'sql', 'train_s', '{:.2f}'),
	                     ('SentencePiece (sentences)', 'sp', 'train_s', '{:.2f}')]),
	    ('encode, MB/s', [('tfm core, speeches, first pass', 'core', 'encode_cold_mbs', '{:.1f}'),
	                      ('tfm core, speeches, warm, best of 2', 'core', 'encode_warm_mbs', '{:.1f}'),
	                      ('tfm SQL tfm_tokenize over the table, first pass', 'sql', 'encode_cold_mbs', '{:.1f}'),
	                      ('tfm SQL tfm_tokenize over the table, warm, best of 2', 'sql', 'encode_warm_mbs', '{:.1f}'),
	                      ('SentencePiece, speeches (one call each)', 'sp', 'encode_rows_mbs', '{:.2f}'),
	                      ('SentencePiece, sentences (one batch call)', 'sp', 'encode_sentences_mbs', '{:.2f}')]),
	    ('tokens for the corpus', [('tfm', 'core', 'tokens', '{:.0f}'), ('SentencePiece', 'sp', 'tokens', '{:.0f}')]),
	]
	w = 52
	print('| ' + 'measure'.ljust(w) + ' | ' + ' | '.join(f'{v:>8}' for v in sizes) + ' |')
	print('|' + '-' * (w + 2) + '|' + '|'.join('-' * 10 for _ in sizes) + '|')
	for title, items in lines:
	    print('| ' + f'**{title}**'.ljust(w) + ' | ' + ' | '.join(' ' * 8 for _ in sizes) + ' |')
	    for label, who, key, fmt in items:
	        print('| ' + label.ljust(w) + ' | ' + ' | '.join(f'{cell(who, key, v, fmt):>8}' for v in sizes) + ' |')
	bad = [f'{w} {v}' for (w, v), d in rows.items() if d.get('round_trip_failures', '0') != '0']
	print()
	print('tfm round trips: ' + ('all speeches exact' if not bad else 'FAILURES in ' + ', '.join(bad)))
	sp = [d for (w, v), d in rows.items() if w == 'sp']
	if sp:
	    print(f"SentencePiece {sp[0]['version']}: decode(encode(speech)) exact for {sp[0]['rows_round_trip']} speeches (it normalizes text)")
EOF
