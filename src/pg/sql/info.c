/*
 * info.c — what this build runs on: tfm_info() (version, BLIS kernels,
 * threads, precision and low-precision kernels, attention's kernels, int4's) and tfm_workspace_bytes
 * (what a pass of a given shape needs of tfm.work_mem).
 */
#include "postgres.h"

#include "funcapi.h"
#include "utils/builtins.h"

#include "tfm/blas.h"
#include "tfm/layers.h"
#include "tfm/lowp.h"
#include "runtime/runtime.h"
#include "sql/args.h"
#include "runtime/cache/inference_precision.h"
#include "runtime/cache/model_cache.h"
#include "storage/models/models.h"

PG_FUNCTION_INFO_V1(tfm_info);
Datum
tfm_info(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[11];
	bool		nulls[11] = {false};

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	tfm_backend_ready();
	values[0] = CStringGetTextDatum(TFM_VERSION);
	values[1] = CStringGetTextDatum(tfm_blas_arch());
	values[2] = CStringGetTextDatum(tfm_blas_arch_reason());
	values[3] = Int32GetDatum(tfm_get_threads());
	/* tfm 0.1's tfm_info() has four columns, 0.2's and 0.3's nine: the library serves all */
	if (tupdesc->natts >= 9)
		tfm_precision_info(values + 4);
	if (tupdesc->natts >= 10)
		values[9] = CStringGetTextDatum(tfm_attn_kernels());
	if (tupdesc->natts >= 11)
		values[10] = CStringGetTextDatum(tfm_lowp_int4_kernel());
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls)));
}

/*
 * tfm_workspace_bytes(model, batch, length, target_length, training): what
 * a pass of that shape needs of tfm.work_mem (the figure its error names).
 */
PG_FUNCTION_INFO_V1(tfm_workspace_bytes);
Datum
tfm_workspace_bytes(PG_FUNCTION_ARGS)
{
	char	   *name = tfm_text_arg(fcinfo, 0, "model");
	const TfmModelRow *row;
	tfm_model  *m;
	int			B,
				T,
				Tt;
	bool		training;

	for (int i = 1; i <= 4; i++)
		if (PG_ARGISNULL(i))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("batch, length, target_length and training must not be NULL")));
	B = PG_GETARG_INT32(1);
	T = PG_GETARG_INT32(2);
	Tt = PG_GETARG_INT32(3);
	training = PG_GETARG_BOOL(4);
	tfm_backend_ready();
	m = tfm_cache_get(name, &row);
	if (B < 1 || B > 65536 || T < 1 || T > row->cfg.max_len || Tt < 0 || Tt > row->cfg.max_len)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("batch must be between 1 and 65536, length between 1 and max_len (%d), "
						"target_length between 0 and max_len", row->cfg.max_len)));
	PG_RETURN_INT64((int64) tfm_pass_bytes(m, B, T, Tt, training, false));
}
