/*
 * tensor_values.c — tfm.tensor_values(model, tensor): the float32 values of
 * a tensor an imported GGUF model stores as the file's blocks only (no
 * tfm.tensors rows: storage/models/kept_values.c), made as loading makes
 * them (the model loaded through the cache, use privilege checked), for
 * tfm_tensor; a model loaded for gguf, which never made them, makes the
 * tensor's values from its blocks for the call.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/array.h"
#include "utils/memutils.h"

#include "tfm/kept_block.h"
#include "sql/args.h"
#include "runtime/cache/model_cache.h"
#include "storage/models/models.h"

PG_FUNCTION_INFO_V1(tfm_tensor_values);
Datum
tfm_tensor_values(PG_FUNCTION_ARGS)
{
	char	   *name = tfm_text_arg(fcinfo, 0, "model");
	char	   *tensor = tfm_text_arg(fcinfo, 1, "tensor");
	const TfmModelRow *row;
	tfm_model  *m = tfm_cache_get(name, &row);
	const tfm_param_info *p = tfm_model_find(m, tensor);
	ArrayType  *a;
	Size		nbytes;

	if (!p)
		PG_RETURN_NULL();
	/* a value is at most 1 GB, an array at most MaxArraySize elements */
	if (p->size > (size_t) MaxArraySize ||
		p->size > (MaxAllocSize - ARR_OVERHEAD_NONULLS(1)) / sizeof(float4))
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("tensor \"%s\" of model \"%s\" has %zu values, more than an array holds (%d)",
						tensor, name, p->size, (int) MaxArraySize)));
	nbytes = ARR_OVERHEAD_NONULLS(1) + p->size * sizeof(float4);
	a = (ArrayType *) palloc(nbytes);
	SET_VARSIZE(a, nbytes);
	a->ndim = 1;
	a->dataoffset = 0;
	a->elemtype = FLOAT4OID;
	ARR_DIMS(a)[0] = (int) p->size;
	ARR_LBOUND(a)[0] = 1;
	/* a tensor a gguf load left to its blocks: its values made from them here */
	if (tfm_model_tensor_read(m, (int) (p - m->info), (float *) ARR_DATA_PTR(a)) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("cannot make the values of tensor \"%s\" of model \"%s\" from its blocks",
						tensor, name)));
	PG_RETURN_ARRAYTYPE_P(a);
}
