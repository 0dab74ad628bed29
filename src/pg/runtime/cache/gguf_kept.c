/*
 * gguf_kept.c — a model imported from a GGUF file gets the blocks the
 * import kept (tfm.gguf_tensors, storage/models/gguf_tensors.c) when it is
 * loaded, for the version imported only (training makes new weights they
 * no longer describe): int4 packing then takes the Q4_0 columns' blocks as
 * the file has them (tfm_model_keep_int4) instead of requantizing their
 * float32 values, and gguf runs the Q8_0 / Q4_K / Q5_K / Q6_K ones.
 */
#include "postgres.h"

#include "tfm/gguf.h"
#include "tfm/gguf_quants.h"
#include "tfm/precision.h"
#include "runtime/runtime.h"
#include "storage/models/models.h"
#include "runtime/cache/gguf_kept.h"

/* the ggml type named (a name tfm_gguf_type_name gives), or -1 */
static int64
type_of(const char *name)
{
	for (uint32 t = 0; t < 64; t++)
	{
		const char *n = tfm_gguf_type_name(t);

		if (n && strcmp(n, name) == 0)
			return t;
	}
	return -1;
}

void
tfm_attach_kept(tfm_model *m, const TfmModelRow *row)
{
	TfmGgufTensorRow *rows;
	tfm_int4_kept *k;
	int			n = tfm_gguf_kept_read(row->id, row->version, &rows),
				rc;

	if (n == 0)
		return;
	k = palloc0(sizeof(tfm_int4_kept) * n);
	for (int i = 0; i < n; i++)
	{
		const TfmGgufTensorRow *r = &rows[i];
		const tfm_param_info *p = tfm_model_find(m, r->tensor);
		uint8	   *b = (uint8 *) r->blocks;
		int64		type = type_of(r->gguf_type);

		k[i] = (tfm_int4_kept) {p ? p->offset : 0, r->inputs, r->first_column, r->columns, NULL,
		(uint32) Max(type, 0)};
		if (!p || type < 0 || !tfm_gguf_kept((uint32) type) || tfm_kept_bytes(&k[i]) == 0 ||
			r->bytes != tfm_kept_bytes(&k[i]) ||
			(r->rope_heads > 0 && r->columns % (2 * r->rope_heads) != 0))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("the kept blocks of GGUF tensor \"%s\" of model \"%s\" do not fit tensor \"%s\"",
							r->gguf_name, row->name, r->tensor)));
		if (r->rope_heads > 0)
		{
			/* the rows back in Hugging Face's order, as their float32 values are */
			b = palloc_extended(r->bytes, MCXT_ALLOC_HUGE);
			tfm_gguf_unpermute_rows(b, r->blocks, r->columns, r->bytes / r->columns, r->rope_heads);
		}
		k[i].blocks = b;
	}
	rc = tfm_model_keep_int4(m, k, n);
	if (rc == TFM_EINVAL)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("the kept blocks of model \"%s\" do not fit its matrices", row->name)));
	if (rc != 0)
		tfm_raise_code(rc, "out of memory");
	for (int i = 0; i < n; i++)
	{
		if (k[i].blocks != rows[i].blocks)
			pfree((void *) k[i].blocks);
		pfree((char *) rows[i].blocks - VARHDRSZ);	/* the bytea read */
	}
	pfree(k);
}
