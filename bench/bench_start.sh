# bench_start.sh — sourced by bench/lm/run.sh and bench/seq2seq/run.sh after
# they set ROOT, THREADS, DATA and OUT: the output directory, the thread
# environment, the build (unless SKIP_BUILD=1), a throwaway cluster with the
# extension, and the helpers log and PSQL.
mkdir -p "$OUT"; chmod 755 "$OUT"
log() { echo "[$(date '+%H:%M:%S')] $*"; }
export BLIS_NUM_THREADS=$THREADS OMP_NUM_THREADS=$THREADS THREADS DATA

if [ "${SKIP_BUILD:-0}" != 1 ]; then
  log "build + install"
  # without DATA: PGXS reads it as the list of files to install
  (cd "$ROOT" && env -u DATA make -s && env -u DATA make -s install)
fi
. "$ROOT/scripts/cluster.sh"
cluster_start
log "cluster at $PGHOST; output in $OUT; threads $THREADS; data $DATA"
PSQL="psql -X -q -v ON_ERROR_STOP=1"
$PSQL -c "CREATE EXTENSION tfm"
$PSQL -At -c "SELECT version, blis_kernels FROM tfm_info()" | tee "$OUT/info.txt"
