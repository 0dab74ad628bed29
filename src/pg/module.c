/*
 * module.c — tfm's entry point: _PG_init defines the settings
 * (runtime/settings.c) and installs the ExecutorFinish hook that stores
 * tokenizers trained by the aggregate (sql/tokenizer_agg.c).
 */
#include "postgres.h"

#include "fmgr.h"

#include "runtime/runtime.h"
#include "sql/tokenizer_agg.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

void
_PG_init(void)
{
	tfm_settings_define();
	tfm_tokenizer_init_hooks();
}
