#!/bin/bash
# bench/run.sh — the one command: tfm's numeric core against PyTorch on the
# reference encoder classifier (vocab 8000, d 128, 8 heads, 4 layers, d_ff
# 512, length 256, batch 32, post-LN, dropout 0.1), training step and
# inference forward, with 1 and 2 threads, in one run on this machine.
#
#   bench/run.sh [--seconds S] [--min-iters K] [--rounds R] [--threads "1 2"]
#                [--profile] [--perf] [--no-wait]
#
#   --seconds S    time each measurement for about S seconds (default 4),
#   --min-iters K  and at least K iterations (default 3), after 1 untimed one
#   --rounds R     rounds of (tfm train, torch train, tfm infer, torch infer)
#                  per thread count (default 3)
#   --threads L    thread counts to run (default "1 2")
#   --profile      also run bench_core's per-operation profile of the tfm
#                  training step and inference for each thread count
#   --perf         also sample the tfm training step and inference with perf
#                  (bench/perf_profile.sh) and print where the time goes
#   --quiet-wait S before each measurement, wait up to S s (default 120) for
#                  other processes to use < 15% of the CPUs (measured over 2 s)
#   --no-wait      wait for nothing (neither the load average nor quiet)
#
# Prints the side-by-side table at the end; the whole log is kept in
# bench/last-run.log.  Needs the build tools of the top-level Makefile
# (make, cc, BLIS) and /usr/bin/python3 with PyTorch.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
secs=4
iters=3
rounds=3
quiet_wait=120
threads="1 2"
profile=0
perf=0
wait_load=1
while [ $# -gt 0 ]; do
	case "$1" in
		--seconds) secs="$2"; shift 2 ;;
		--rounds) rounds="$2"; shift 2 ;;
		--min-iters) iters="$2"; shift 2 ;;
		--threads) threads="$2"; shift 2 ;;
		--profile) profile=1; shift ;;
		--perf) perf=1; shift ;;
		--no-wait) wait_load=0; quiet_wait=0; shift ;;
		--quiet-wait) quiet_wait="$2"; shift 2 ;;
		-h|--help) sed -n '2,25p' "$0"; exit 0 ;;
		*) echo "unknown option $1" >&2; exit 2 ;;
	esac
done

PY=/usr/bin/python3
log="$here/last-run.log"
: > "$log"

say() { echo "$@" | tee -a "$log"; }

# ---- build -------------------------------------------------------------------
say "== building bench/bench_core (core objects through the top-level Makefile)"
make -s -C "$here" bench_core >>"$log" 2>&1 || { cat "$log"; echo "build failed" >&2; exit 1; }
"$PY" -c 'import torch' 2>/dev/null || { echo "$PY cannot import torch" >&2; exit 1; }

# ---- the machine ---------------------------------------------------------------
load1() { cut -d' ' -f1 /proc/loadavg; }
say "== machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), kernel $(uname -r)"
say "== $(date -u '+%Y-%m-%d %H:%M:%S UTC'); uptime:$(uptime | sed 's/.*up/ up/')"
if [ "$wait_load" = 1 ]; then
	waited=0
	while awk -v l="$(load1)" 'BEGIN { exit !(l > 0.5) }' && [ $waited -lt 60 ]; do
		[ $waited = 0 ] && say "   load $(load1) > 0.5: waiting up to 60 s for it to drop"
		sleep 5
		waited=$((waited + 5))
	done
	if awk -v l="$(load1)" 'BEGIN { exit !(l > 0.5) }'; then
		say "WARNING: load average still $(load1) after 60 s: other processes compete for the 2 cores; figures below are pessimistic and noisy"
		busy="$(ps -eo pcpu=,comm= --sort=-pcpu | head -3 | tr -s ' ' | tr '\n' ';')"
		say "   busiest processes: $busy"
	else
		say "   load average $(load1): starting"
	fi
fi

# /proc/stat deltas around each run: how much of the CPUs the hypervisor
# took (steal) and how busy the machine was (this run included)
tag_and_log() { sed -u "s/^RESULT /RESULT round=${round:-0} /" | tee -a "$log"; }
stat_now() { awk '/^cpu /{ t=0; for (i=2;i<=NF;i++) t+=$i; print t, $5+$6, $9 }' /proc/stat; }
# Before each measurement: how busy are the CPUs while this benchmark is
# idle (2 s of /proc/stat)?  Wait up to $quiet_wait s for other processes to
# use less than 15% of the machine; go on regardless after that, noting it.
others_busy() {
	local a b
	a="$(stat_now)"; sleep 2; b="$(stat_now)"
	awk -v a="$a" -v b="$b" 'BEGIN { split(a, x, " "); split(b, y, " ");
		t = y[1] - x[1]; if (t <= 0) t = 1; printf "%.0f", 100 * (1 - (y[2] - x[2]) / t) }'
}
wait_quiet() {
	local waited=0 busy
	busy="$(others_busy)"
	while [ "$busy" -ge 15 ] && [ "$waited" -lt "$quiet_wait" ]; do
		sleep 8
		waited=$((waited + 10))
		busy="$(others_busy)"
	done
	if [ "$busy" -ge 15 ]; then
		say "   WARNING: other processes use ${busy}% of the CPUs (waited ${waited} s): this measurement is disturbed"
	elif [ "$waited" -gt 0 ]; then
		say "   (waited ${waited} s for other processes to go quiet)"
	fi
	others="$busy"
}
run_one() {			# label threads command...
	local label="$1" n="$2"; shift 2
	local s0 s1 l0
	wait_quiet
	l0="$(load1)"
	s0="$(stat_now)"
	say ""
	say "---- $label, $n thread(s) (load before: $l0; other processes: ${others}% of the CPUs)"
	env OMP_NUM_THREADS="$n" BLIS_NUM_THREADS="$n" OPENBLAS_NUM_THREADS="$n" \
		MKL_NUM_THREADS="$n" "$@" 2>&1 | tag_and_log ||
		say "FAILED: $label, $n thread(s) (exit status ${PIPESTATUS[0]})"
	s1="$(stat_now)"
	awk -v a="$s0" -v b="$s1" -v label="$label" -v n="$n" -v others="$others" 'BEGIN {
		split(a, x, " "); split(b, y, " ");
		t = y[1] - x[1]; if (t <= 0) t = 1;
		printf "MACHINE label=\"%s\" threads=%s busy_pct=%.0f steal_pct=%.1f others_before_pct=%s\n", label, n,
			100 * (1 - (y[2] - x[2]) / t), 100 * (y[3] - x[3]) / t, others }' | tee -a "$log"
}

# ---- the runs ---------------------------------------------------------------------
# Per thread count: the measured peak, then ROUNDS rounds of tfm train,
# PyTorch train, tfm inference, PyTorch inference, tfm inference at bf16,
# int8 and int4 (tfm.precision), one fresh process each.
# The speed of this (virtual) machine drifts by up to 2x over minutes with
# the load of its neighbours, so the two sides are interleaved closely and
# compared round by round: each side's figure is the median over the rounds
# of its per-round median, and each ratio the median of the per-round ratios.
for n in $threads; do
	round=0
	run_one "tfm measured peak" "$n" "$here/bench_core" --threads "$n" --seconds 3 --what peak
	for r in $(seq 1 "$rounds"); do
		round=$r
		run_one "tfm train (round $r)" "$n" "$here/bench_core" --threads "$n" --seconds "$secs" \
			--min-iters "$iters" --warmup 1 --what train
		run_one "torch train (round $r)" "$n" "$PY" "$here/torch_core.py" --threads "$n" --seconds "$secs" \
			--min-iters "$iters" --warmup 1 --what train
		run_one "tfm infer (round $r)" "$n" "$here/bench_core" --threads "$n" --seconds "$secs" \
			--min-iters "$iters" --warmup 1 --what infer
		run_one "torch infer (round $r)" "$n" "$PY" "$here/torch_core.py" --threads "$n" --seconds "$secs" \
			--min-iters "$iters" --warmup 1 --what infer
		for prec in bf16 int8 int4; do
			run_one "tfm infer $prec (round $r)" "$n" "$here/bench_core" --threads "$n" --seconds "$secs" \
				--min-iters "$iters" --warmup 1 --what infer --precision "$prec"
		done
	done
done
if [ "$profile" = 1 ]; then
	round=0
	for n in $threads; do
		st="$(awk -v n="$n" '/^RESULT .*impl=tfm kind=train /{ if ($0 ~ "threads=" n " ") for (i=1;i<=NF;i++) if ($i ~ /^step_ms=/) { sub("step_ms=", "", $i); print $i } }' "$log" | tail -1)"
		si="$(awk -v n="$n" '/^RESULT .*impl=tfm kind=infer /{ if ($0 ~ "threads=" n " ") for (i=1;i<=NF;i++) if ($i ~ /^step_ms=/) { sub("step_ms=", "", $i); print $i } }' "$log" | tail -1)"
		run_one "tfm ops profile" "$n" env BENCH_STEP_MS="${st:-0}" BENCH_INFER_MS="${si:-0}" \
			"$here/bench_core" --threads "$n" --what ops
	done
fi
if [ "$perf" = 1 ]; then
	for n in $threads; do
		for w in train infer; do
			say ""
			say "---- perf profile: tfm $w, $n thread(s) (load before: $(load1))"
			"$here/perf_profile.sh" "$n" "$w" "$secs" 2>&1 | grep -v '^RESULT' | tee -a "$log"
		done
	done
fi
say ""
say "== finished $(date -u '+%H:%M:%S UTC'); uptime:$(uptime | sed 's/.*up/ up/')"

# ---- the table ----------------------------------------------------------------------
"$PY" "$here/summarise.py" "$log" | tee -a "$log"
