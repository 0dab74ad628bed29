/*
 * module.c — tfm's entry point: _PG_init defines the settings
 * (runtime/settings.c) and installs the ExecutorFinish hook that stores
 * tokenizers trained by the aggregate (sql/tokenizers/tokenizer_agg.c); when loaded
 * by shared_preload_libraries, it sets up the background job workers
 * (runtime/jobs/job_slots.c, job_launcher.c, job_worker.c), which run the
 * jobs' run loop (runtime/jobs/job_run.c).
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"

#include "runtime/runtime.h"
#include "runtime/jobs/job_slots.h"
#include "sql/tokenizers/tokenizer_agg.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

void
_PG_init(void)
{
	tfm_settings_define();
	tfm_tokenizer_init_hooks();
	if (process_shared_preload_libraries_in_progress && tfm_job_workers > 0)
		tfm_job_workers_init();
}
