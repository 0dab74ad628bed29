/*
 * gguf_kept.c — a model imported from a GGUF file gets the blocks the
 * import kept (tfm.gguf_tensors, storage/models/gguf_tensors.c) when it is
 * loaded, for the version imported only (training makes new weights they
 * no longer describe): int4 packing then takes the Q4_0 columns' blocks as
 * the file has them (tfm_model_keep_int4) instead of requantizing their
 * float32 values, and gguf runs the Q8_0 / Q4_K / Q5_K / Q6_K ones (each
 * row checked and put in Hugging Face's order by tfm_kept_entry,
 * storage/models/kept_values.c).
 */
#include "postgres.h"

#include "tfm/precision.h"
#include "base/base.h"
#include "storage/models/models.h"
#include "storage/models/gguf_kept.h"

void
tfm_attach_kept(tfm_model *m, const TfmModelRow *row, bool with_rows)
{
	bool		keep_rows = with_rows;
	TfmGgufTensorRow *rows;
	tfm_int4_kept *k,
			   *run;
	int			n = tfm_gguf_kept_read(row->id, row->version, &rows),
				runs = 0,
				rc;

	if (n == 0)
		return;
	tfm_kept_check_disjoint(rows, n, row->name);
	for (int i = 0; i < n; i++)
		runs += rows[i].rows_only && !keep_rows ? 0 : 1;
	run = palloc0(sizeof(tfm_int4_kept) * Max(runs, 1));
	k = palloc0(sizeof(tfm_int4_kept) * n);
	for (int i = 0; i < n; i++)
		tfm_kept_entry(m, &rows[i], row->name, &k[i]);
	/*
	 * the blocks kept for storage only (an untied embedding) run nowhere:
	 * kept (rows_only) where they serve the lookups of absent values
	 */
	for (int i = 0, j = 0; i < n; i++)
		if (!rows[i].rows_only || keep_rows)
			run[j++] = k[i];
	rc = tfm_model_keep_int4(m, run, runs);
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
	pfree(run);
}
