/*
 * kept_plans.c — the plans of tfm's own catalog SQL, kept per backend.
 *
 * tfm_spi_exec runs the same few statements (a model's row, its tokenizer's,
 * the grants) at the start of every call; planned afresh each time they
 * cost more than a small model's inference (0.4 ms of a single-row
 * tfm_classify, most of postgres_fdw's per-FETCH cost on a shard).  Each
 * distinct text is prepared once and kept (SPI_keepplan: the plan cache
 * replans it after DDL, a role change under row security, or an extension
 * update, as it does for PL/pgSQL).  The table holds at most
 * TFM_KEPT_PLANS_MAX texts; others run unprepared.
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "executor/spi.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

#include "storage/storage.h"

#define TFM_KEPT_PLANS_MAX 96

typedef struct KeptPlan
{
	uint32		hash;			/* key: the text's hash */
	char	   *sql;			/* the text (a different text of that hash is not kept) */
	int			nargs;
	Oid		   *types;
	SPIPlanPtr	plan;
} KeptPlan;

static HTAB *kept_plans = NULL;

SPIPlanPtr
tfm_kept_plan(const char *sql, int nargs, const Oid *types)
{
	uint32		h = hash_bytes((const unsigned char *) sql, (int) strlen(sql));
	KeptPlan   *e;
	bool		found;
	SPIPlanPtr	p;

	if (kept_plans == NULL)
	{
		HASHCTL		ctl = {.keysize = sizeof(uint32), .entrysize = sizeof(KeptPlan),
		.hcxt = TopMemoryContext};

		kept_plans = hash_create("tfm kept plans", TFM_KEPT_PLANS_MAX, &ctl,
								 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	e = hash_search(kept_plans, &h, HASH_FIND, NULL);
	if (e != NULL)
	{
		if (e->nargs != nargs || strcmp(e->sql, sql) != 0 ||
			(nargs > 0 && memcmp(e->types, types, sizeof(Oid) * nargs) != 0))
			return NULL;
		return e->plan;
	}
	if (hash_get_num_entries(kept_plans) >= TFM_KEPT_PLANS_MAX)
		return NULL;
	if ((p = SPI_prepare(sql, nargs, (Oid *) types)) == NULL)
		return NULL;			/* the unprepared path reports the error */
	if (SPI_keepplan(p) != 0)
		return NULL;
	e = hash_search(kept_plans, &h, HASH_ENTER, &found);
	e->sql = MemoryContextStrdup(TopMemoryContext, sql);
	e->nargs = nargs;
	e->types = nargs > 0 ? MemoryContextAlloc(TopMemoryContext, sizeof(Oid) * nargs) : NULL;
	if (nargs > 0)
		memcpy(e->types, types, sizeof(Oid) * nargs);
	e->plan = p;
	return p;
}
