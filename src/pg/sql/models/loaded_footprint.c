/*
 * loaded_footprint.c — tfm.loaded_footprint(model): what this session's
 * loaded copy of a model holds (never loading it): the precision it runs
 * at, the bytes of its kept GGUF blocks, of the float32 values it holds,
 * of the values it left to the blocks (a copy loaded for gguf:
 * tfm_model_leave_absent) and of the values made from the blocks on demand
 * since (another precision, training, tfm_tensor aside).  tfm_model_footprint
 * reports them beside the bytes stored.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"

#include "tfm/kept_block.h"
#include "tfm/precision.h"
#include "sql/args.h"
#include "runtime/cache/model_cache.h"
#include "storage/models/models.h"

PG_FUNCTION_INFO_V1(tfm_loaded_footprint);
Datum
tfm_loaded_footprint(PG_FUNCTION_ARGS)
{
	char	   *name = tfm_text_arg(fcinfo, 0, "model");
	const TfmModelRow *row = NULL;
	TfmModelRow cat;
	tfm_model  *m;
	TupleDesc	tupdesc;
	Datum		values[5];
	bool		nulls[5] = {false, false, false, false, false};
	int64		blocks = 0;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "tfm.loaded_footprint must return a record");
	/* the model as the catalog has it, use checked, loaded or not */
	if (!tfm_catalog_lookup(name, &cat, true))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("model \"%s\" does not exist", name)));
	tfm_check_model_privilege(&cat, TFM_PRIV_USE);
	m = tfm_cache_loaded(cat.name, &row);
	if (!m || row->id != cat.id)
		PG_RETURN_NULL();
	if (m->int4_kept)
		for (int i = 0; i < m->int4_kept->n; i++)
			blocks += (int64) tfm_kept_bytes(&m->int4_kept->k[i]);
	values[0] = CStringGetTextDatum(tfm_precision_name(tfm_model_precision(m)));
	values[1] = Int64GetDatum(blocks);
	values[2] = Int64GetDatum((int64) (m->n_params - m->absent_floats) * (int64) sizeof(float));
	values[3] = Int64GetDatum((int64) m->absent_floats * (int64) sizeof(float));
	values[4] = Int64GetDatum((int64) m->floats_made * (int64) sizeof(float));
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls)));
}
