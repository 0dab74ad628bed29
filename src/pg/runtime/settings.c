/*
 * settings.c — tfm's settings (GUCs), defined by _PG_init (module.c), and
 * the lazy start of BLIS.
 *
 *   tfm.threads          threads for BLIS and the core's parallel loops
 *   tfm.blis_arch        BLIS kernel set: auto (default) or a name
 *   tfm.progress         training progress as NOTICE lines
 *   tfm.precision        inference products: auto, fp32, bf16, int8, int4, gguf (infer/inference_precision.c)
 *   tfm.share_weights    one read-only copy of loaded weights (shared_weights.c)
 *   tfm.train_chunk_rows rows training reads at a time (train_loop.c)
 *   tfm.work_mem         the memory of a call's batches (limits.c)
 *   tfm.max_parameters   the largest model made or copied (limits.c)
 *   tfm.max_model_bytes  the largest import, in bytes stored (limits.c)
 *   tfm.gguf_row_bytes   the most bytes of blocks a row of tfm.gguf_tensors holds
 *   tfm.gguf_slice_bytes the float32 values an import makes of a kept tensor at a time
 *   tfm.job_workers      background job workers when preloaded (job_slots.c)
 *   tfm.job_naptime      how long an idle job worker sleeps (job_worker.c, job_launcher.c)
 *
 * BLIS is initialised lazily, on a backend's first computation, never in
 * the postmaster or _PG_init: an OpenMP team started before fork() hangs the
 * child's next threaded call.
 */
#include "postgres.h"

#include <unistd.h>

#include "access/parallel.h"
#include "miscadmin.h"
#include "utils/guc.h"

#include "tfm/blas.h"
#include "tfm/precision.h"
#include "runtime/runtime.h"

int			tfm_threads = 2;
bool		tfm_progress = true;
int			tfm_train_chunk_rows = 8192;
double		tfm_max_parameters = TFM_PARAMS_DEFAULT;
int			tfm_max_model_bytes = 16 * 1024 * 1024;	/* kB: 16 GB */
int			tfm_gguf_row_bytes = 32 * 1024;	/* kB: 32 MB */
int			tfm_gguf_slice_bytes = 64 * 1024;	/* kB: 64 MB */
char	   *tfm_blis_arch = NULL;
int			tfm_work_mem = 1024 * 1024;	/* kB */
int			tfm_max_work_mem = MAX_KILOBYTES;	/* kB: the ceiling of tfm.work_mem */
int			tfm_precision_setting = -1;	/* -1 = auto */
bool		tfm_share_weights = true;
bool		tfm_split_special_tokens = false;
int			tfm_job_workers = 2;
int			tfm_job_naptime = 1000;	/* ms */
int			tfm_job_batch_timeout = 10 * 60 * 1000;	/* ms */

static bool blas_started = false;

static const struct config_enum_entry precision_options[] = {
	{"auto", -1, false},
	{"fp32", TFM_PREC_FP32, false},
	{"bf16", TFM_PREC_BF16, false},
	{"int8", TFM_PREC_INT8, false},
	{"int4", TFM_PREC_INT4, false},
	{"gguf", TFM_PREC_GGUF, false},
	{NULL, 0, false}
};

static bool
check_blis_arch(char **newval, void **extra, GucSource source)
{
	(void) extra;
	(void) source;
	if (*newval == NULL || (*newval)[0] == '\0' || strcmp(*newval, "auto") == 0)
		return true;
	if (!tfm_blas_arch_supported(*newval))
	{
		GUC_check_errdetail("Valid values are %s, limited to kernel sets this CPU can run.",
							tfm_blas_arch_names());
		return false;
	}
	if (blas_started && strcmp(*newval, tfm_blas_arch()) != 0)
	{
		GUC_check_errdetail("BLIS is already initialised in this session; set tfm.blis_arch in postgresql.conf or before the first tfm call.");
		return false;
	}
	return true;
}

/* a boolean setting without hooks; its boot value is the variable's initializer */
static void
define_bool(const char *name, const char *desc, const char *detail, bool *var, GucContext context)
{
	DefineCustomBoolVariable(name, desc, detail, var, *var, context, 0, NULL, NULL, NULL);
}

/*
 * tfm.work_mem past tfm.max_work_mem: refused when a session or a function
 * sets it (the ceiling is what an administrator grants any role); values
 * from the server's files, a role's or a database's defaults are clamped
 * where they are read (limits.c) instead, so a lowered ceiling never stops
 * a session from starting.
 */
static bool
check_work_mem(int *newval, void **extra, GucSource source)
{
	(void) extra;
	if (*newval <= tfm_max_work_mem || source < PGC_S_INTERACTIVE)
		return true;
	GUC_check_errcode(ERRCODE_INSUFFICIENT_PRIVILEGE);
	GUC_check_errmsg("tfm.work_mem cannot be set above tfm.max_work_mem (%d kB)", tfm_max_work_mem);
	GUC_check_errhint("A superuser sets tfm.max_work_mem, the ceiling of every role's tfm.work_mem.");
	return false;
}

void
tfm_settings_define(void)
{
	long		ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	tfm_threads = ncpu < 1 ? 1 : (ncpu > 64 ? 64 : (int) ncpu);
	DefineCustomIntVariable("tfm.threads",
							"Threads tfm uses for matrix products and its parallel loops.",
							"Valid range is 1 .. 64; the default is the number of CPUs. Parallel workers use one thread.",
							&tfm_threads, tfm_threads, 1, 64,
							PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomStringVariable("tfm.blis_arch",
							   "BLIS kernel set: auto, or one of skx, zen3, zen2, zen, haswell, sandybridge, generic.",
							   "auto picks the fastest set the CPU supports. Takes effect before a session's first tfm computation.",
							   &tfm_blis_arch, "auto",
							   PGC_USERSET, 0, check_blis_arch, NULL, NULL);
	define_bool("tfm.progress", "Report training progress as NOTICE lines.",
				"The status line in pg_stat_activity (view tfm.progress) is kept either way.",
				&tfm_progress, PGC_USERSET);
	DefineCustomEnumVariable("tfm.precision",
							 "Precision of inference's matrix products: auto, fp32, bf16, int8 or int4.",
							 "auto is bf16 where the CPU has AVX512_BF16, else fp32 (or a model's own default). Training is always fp32.",
							 &tfm_precision_setting, -1, precision_options,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	define_bool("tfm.split_special_tokens",
				"Read a tokenizer.json's special added tokens in a text as plain text.",
				"Off (Hugging Face's default): \"<|im_start|>\" in a text is that token, as the model's "
				"own control tokens. On: for untrusted text, which then cannot write them.",
				&tfm_split_special_tokens, PGC_USERSET);
	define_bool("tfm.share_weights",
				"Map loaded models' weights from one shared read-only copy instead of a copy per session.",
				"The copy is a file in base/pgsql_tmp, removed at server start.",
				&tfm_share_weights, PGC_SUSET);
	DefineCustomIntVariable("tfm.train_chunk_rows",
							"Rows training reads from its query at a time.",
							"Valid range is 16 .. 1048576. Bounds training's memory; examples are shuffled "
							"within a chunk, and tfm_fit checkpoints between chunks. A resumed run keeps "
							"the value it started with.",
							&tfm_train_chunk_rows, 8192, 16, 1048576,
							PGC_USERSET, 0, NULL, NULL, NULL);
	/* before tfm.work_mem, whose check reads it */
	DefineCustomIntVariable("tfm.max_work_mem",
							"The most that tfm.work_mem may be set to (superuser only).",
							"A role's SET tfm.work_mem above it is refused, and a value already set "
							"(or set before the ceiling was lowered) counts as the ceiling.",
							&tfm_max_work_mem, MAX_KILOBYTES, 1024, MAX_KILOBYTES,
							PGC_SUSET, GUC_UNIT_KB, NULL, NULL, NULL);
	DefineCustomIntVariable("tfm.work_mem",
							"Memory a tfm call may take for its batches: activations, attention weights, decoders' caches.",
							"Training, inference and decoding size each pass before running it and refuse one "
							"that needs more; calls that batch by themselves use smaller batches instead.",
							&tfm_work_mem, 1024 * 1024, 1024, MAX_KILOBYTES,
							PGC_USERSET, GUC_UNIT_KB, check_work_mem, NULL, NULL);
	DefineCustomIntVariable("tfm.max_model_bytes",
							"The most bytes an imported model's rows may take at the precision it is stored at.",
							"tfm_import, tfm_import_files, tfm_import_gguf and tfm_import_gguf_file count "
							"the float32 values and the blocks a GGUF file keeps before any memory is taken.",
							&tfm_max_model_bytes, 16 * 1024 * 1024, 64, MAX_KILOBYTES,
							PGC_SUSET, GUC_UNIT_KB, NULL, NULL, NULL);
	DefineCustomIntVariable("tfm.gguf_row_bytes",
							"The most bytes of a GGUF file's blocks one row of tfm.gguf_tensors holds.",
							"An import stores a tensor whose kept blocks are larger in parts of whole rows, "
							"so that pg_dump (whose text form of a bytea takes twice its bytes) can write "
							"every row, and so that writing a row (the executor copies a value twice) and "
							"loading one take little memory. Valid range is 1 kB .. 256 MB.",
							&tfm_gguf_row_bytes, 32 * 1024, 1, 256 * 1024,
							PGC_SUSET, GUC_UNIT_KB, NULL, NULL, NULL);
	DefineCustomIntVariable("tfm.gguf_slice_bytes",
							"The most bytes of float32 values an import of a GGUF file makes of a tensor copied as it is at a time.",
							"Such a tensor (an embedding) is converted a slice of rows of at most this size at a "
							"time, a cancel served between slices; where the file's blocks cover it wholly each "
							"slice is checked against them and its memory given back, so that its float32 values "
							"are never whole in memory. Valid range is 1 kB .. 2147483647 kB.",
							&tfm_gguf_slice_bytes, 64 * 1024, 1, MAX_KILOBYTES,
							PGC_SUSET, GUC_UNIT_KB, NULL, NULL, NULL);
	DefineCustomRealVariable("tfm.max_parameters",
							 "The most parameters a model may have (tfm_create_model, tfm_copy_model).",
							 "Checked from the config before any memory is taken. Valid range is 0 .. 16e9 "
							 "(tfm's own limit); a count, e.g. 2e9 or 125000000.",
							 &tfm_max_parameters, TFM_PARAMS_DEFAULT, 0.0, (double) TFM_PARAMS_MAX,
							 PGC_SUSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("tfm.job_workers",
							"Background workers that run jobs when tfm is in shared_preload_libraries.",
							"Valid range is 0 .. 64; 0 starts none (run jobs with CALL tfm_job_run). "
							"tfm takes this many background worker slots plus one for its launcher "
							"(max_worker_processes). Without preloading it has no effect.",
							&tfm_job_workers, 2, 0, 64,
	/* PostgreSQL allows a library's PGC_POSTMASTER settings only while preloading */
							process_shared_preload_libraries_in_progress ? PGC_POSTMASTER : PGC_SIGHUP,
							0, NULL, NULL, NULL);
	DefineCustomIntVariable("tfm.job_naptime",
							"How long an idle job worker, and the launcher, sleep between looks for work.",
							"Valid range is 10 ms .. 1 h. A row inserted on an idle server has its output "
							"about this long (plus a batch's computation) later.",
							&tfm_job_naptime, 1000, 10, 3600 * 1000,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable("tfm.job_batch_timeout",
							"The longest a background job worker lets one batch of a job run.",
							"0 = no limit. A batch that runs longer is cancelled (its keys stay queued) "
							"and the job is tried again after a pause, so one job's code cannot hold "
							"a worker and the other jobs of its database.",
							&tfm_job_batch_timeout, 10 * 60 * 1000, 0, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);
	MarkGUCPrefixReserved("tfm");
}

void
tfm_backend_ready(void)
{
	if (!blas_started)
	{
		char		err[256];

		if (tfm_blas_init(tfm_blis_arch, err, sizeof(err)) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("cannot initialise BLIS: %s", err)));
		blas_started = true;
	}
	tfm_set_threads(IsParallelWorker() ? 1 : tfm_threads);
}
