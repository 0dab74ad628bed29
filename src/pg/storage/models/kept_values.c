/*
 * kept_values.c — the float32 values of an imported GGUF model's tensors
 * that are stored as the file's blocks only (tfm.gguf_tensors, no
 * tfm.tensors rows): a tensor whose columns the kept blocks cover wholly,
 * each value their exact dequantization (checked at import), is stored
 * that way (an untied embedding of a kept type too, its rows the blocks'
 * rows though no matrix runs them), and its values are made again from
 * the blocks when the model is loaded (catalog.c) for fp32, bf16, int8,
 * int4 and training; which tensors a version stores so (tfm_copy_model).
 * Also the check of a kept row against the model (one entry, its rows in
 * Hugging Face's order) and that no two cover the same columns, which
 * storage/models/gguf_kept.c shares.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"

#include "tfm/gguf.h"
#include "tfm/gguf_quants.h"
#include "tfm/precision.h"
#include "tfm/status.h"
#include "storage/models/models.h"

/*
 * columns dequantized at a time (then written or compared row by row): as
 * many as fit 4 MB of float32 values, at least 32.  A row of a (K, N)
 * tensor then gives 1 kB or so a pass instead of 128 bytes, one page's
 * worth of its rows read a pass instead of 8 passes (the 3B import spent
 * a quarter of its time here, most of it on translation misses)
 */
#define TFM_KEPT_TILE_BYTES ((size_t) 4 << 20)
#define TFM_KEPT_TILE_MIN 32

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
tfm_kept_entry(const tfm_model *m, const TfmGgufTensorRow *r, const char *model, tfm_int4_kept *k)
{
	const tfm_param_info *p = r->tensor ? tfm_model_find(m, r->tensor) : NULL;
	int64		type = type_of(r->gguf_type);

	*k = (tfm_int4_kept) {p ? p->offset : 0, r->inputs, r->first_column, r->columns, NULL,
	(uint32) Max(type, 0), r->rows_only};
	if (!p || type < 0 || !tfm_gguf_kept((uint32) type) || tfm_kept_bytes(k) == 0 ||
		r->bytes != tfm_kept_bytes(k) ||
		(r->rope_heads > 0 && r->columns % (2 * r->rope_heads) != 0))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("the kept blocks of GGUF tensor \"%s\" of model \"%s\" do not fit tensor \"%s\"",
						r->gguf_name, model, r->tensor ? r->tensor : "")));
	k->blocks = r->blocks;
	if (r->rope_heads > 0)
	{
		/* the rows back in Hugging Face's order, as their float32 values are */
		uint8	   *b = palloc_extended(r->bytes, MCXT_ALLOC_HUGE);

		tfm_gguf_unpermute_rows(b, r->blocks, r->columns, r->bytes / r->columns, r->rope_heads);
		k->blocks = b;
	}
}

/* kept rows in the order of their tensor, kind (rows or columns) and first column */
static int
row_order(const void *a, const void *b)
{
	const TfmGgufTensorRow *x = *(const TfmGgufTensorRow *const *) a,
			   *y = *(const TfmGgufTensorRow *const *) b;
	int			c = strcmp(x->tensor, y->tensor);

	if (c != 0)
		return c;
	if (x->rows_only != y->rows_only)
		return x->rows_only ? 1 : -1;
	return x->first_column < y->first_column ? -1 : x->first_column > y->first_column;
}

void
tfm_kept_check_disjoint(const TfmGgufTensorRow *rows, int n, const char *model)
{
	const TfmGgufTensorRow **o;

	if (n < 2)
		return;
	o = palloc(sizeof(*o) * n);
	for (int i = 0; i < n; i++)
		o[i] = &rows[i];
	qsort(o, n, sizeof(*o), row_order);
	for (int i = 1; i < n; i++)
		if (strcmp(o[i - 1]->tensor, o[i]->tensor) == 0 && o[i - 1]->rows_only == o[i]->rows_only &&
			(int64) o[i - 1]->first_column + o[i - 1]->columns > o[i]->first_column)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("the kept blocks of GGUF tensors \"%s\" and \"%s\" of model \"%s\" overlap in tensor \"%s\"",
							o[i - 1]->gguf_name, o[i]->gguf_name, model, o[i]->tensor)));
	pfree(o);
}

/* the tensor at k's offset whose rows k's blocks' rows are: its rows in *N */
static bool
rows_tensor(const tfm_model *m, const tfm_int4_kept *k, int *N)
{
	for (int i = 0; i < m->n_tensors; i++)
	{
		const tfm_param_info *p = &m->info[i];

		if (p->offset == k->offset && p->ndim == 2 && p->dims[1] == k->K && k->col0 >= 0 &&
			(long) k->col0 + k->cols <= p->dims[0] && tfm_kept_bytes(k) > 0)
		{
			*N = p->dims[0];
			return true;
		}
	}
	return false;
}

bool
tfm_kept_values(tfm_model *m, const tfm_int4_kept *k, bool rows, bool write)
{
	int			N,
				K = k->K,
				tile;
	bool		transposed,
				same = true;
	size_t		row_bytes;
	float	   *W,
			   *buf;

	/* rows: an untied embedding's rows (stored as the tied head's: transposed) */
	transposed = rows;
	if (rows ? !rows_tensor(m, k, &N) : !tfm_model_kept_matrix(m, k, &N, &transposed))
		return false;
	row_bytes = tfm_kept_bytes(k) / (size_t) k->cols;
	W = m->params + k->offset;
	tile = (int) Max(TFM_KEPT_TILE_BYTES / (sizeof(float) * (size_t) Max(K, 1)), TFM_KEPT_TILE_MIN);
	buf = palloc_extended(sizeof(float) * (size_t) tile * (size_t) K, MCXT_ALLOC_HUGE);
	for (int c0 = 0; c0 < k->cols && same; c0 += tile)
	{
		int			nc = Min(tile, k->cols - c0);

		CHECK_FOR_INTERRUPTS();
		for (int j = 0; j < nc; j++)
			if (tfm_gguf_to_f32(buf + (size_t) j * K, k->blocks + (size_t) (c0 + j) * row_bytes,
								k->type, (uint64) K) != TFM_OK)
				elog(ERROR, "ggml type %u is kept but not converted. Please report a bug.", k->type);
		if (transposed)
		{
			/* the tied head's embedding: column j is its row j */
			float	   *dst = W + (size_t) (k->col0 + c0) * K;

			if (write)
				memcpy(dst, buf, sizeof(float) * (size_t) nc * K);
			else
				same = memcmp(dst, buf, sizeof(float) * (size_t) nc * K) == 0;
			continue;
		}
		/* stored (K, N): column j's value k is W[k·N + j] */
		for (int r = 0; r < K && same; r++)
		{
			float	   *dst = W + (size_t) r * N + k->col0 + c0;

			if (write)
				for (int j = 0; j < nc; j++)
					dst[j] = buf[(size_t) j * K + r];
			else
				for (int j = 0; j < nc; j++)
				{
					uint32		a,
								b;

					/* bit for bit (-0 is not 0): as memcmp, without a call a value */
					memcpy(&a, &dst[j], sizeof(a));
					memcpy(&b, &buf[(size_t) j * K + r], sizeof(b));
					same &= a == b;
				}
		}
	}
	pfree(buf);
	return same;
}

void
tfm_kept_fill(tfm_model *m, const TfmModelRow *row, size_t *filled)
{
	TfmGgufTensorRow *rows;
	int			n = tfm_gguf_kept_read(row->id, row->version, &rows);
	bool	   *had;

	if (n == 0)
		return;
	tfm_kept_check_disjoint(rows, n, row->name);
	had = palloc(sizeof(bool) * Max(m->n_tensors, 1));
	for (int i = 0; i < m->n_tensors; i++)
		had[i] = filled[i] > 0;
	for (int j = 0; j < n; j++)
	{
		const TfmGgufTensorRow *r = &rows[j];
		const tfm_param_info *p = r->tensor ? tfm_model_find(m, r->tensor) : NULL;
		tfm_int4_kept k;

		/* float32 rows stored: a tensor the blocks do not cover wholly */
		if (p && !had[p - m->info])
		{
			tfm_kept_entry(m, r, row->name, &k);
			if (!tfm_kept_values(m, &k, r->rows_only, true))
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("the kept blocks of GGUF tensor \"%s\" of model \"%s\" do not fit tensor \"%s\"",
								r->gguf_name, row->name, r->tensor)));
			filled[p - m->info] += (size_t) k.K * (size_t) k.cols;
			m->floats_made += (size_t) k.K * (size_t) k.cols;
			if (k.blocks != r->blocks)
				pfree((void *) k.blocks);
		}
		pfree((char *) r->blocks - VARHDRSZ);	/* the bytea read */
	}
	pfree(had);
	pfree(rows);
}

bool *
tfm_kept_blocks_only(const TfmModelRow *row, const tfm_model *m)
{
	Oid			types[2] = {INT4OID, INT8OID};
	Datum		args[2] = {Int32GetDatum(row->id), Int64GetDatum(row->version)};
	MemoryContext cxt = CurrentMemoryContext;
	bool	   *only = NULL;
	TfmAsOwner	as;
	uint64		n;

	tfm_spi_connect_owner(&as);
	n = tfm_spi_exec("SELECT DISTINCT g.tensor FROM tfm.gguf_tensors g "
					 "WHERE g.model_id = $1 AND g.version = $2 AND g.blocks IS NOT NULL "
					 "AND NOT EXISTS (SELECT 1 FROM tfm.tensors t WHERE t.model_id = $1 AND t.name = g.tensor)",
					 2, types, args, NULL, true, 0, SPI_OK_SELECT, "cannot read tfm.gguf_tensors");
	if (n > 0)
	{
		only = MemoryContextAllocZero(cxt, sizeof(bool) * Max(m->n_tensors, 1));
		for (uint64 i = 0; i < n; i++)
		{
			bool		isnull;
			Datum		d = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull);
			const tfm_param_info *p = isnull ? NULL : tfm_model_find(m, TextDatumGetCString(d));

			if (p)
				only[p - m->info] = true;
		}
	}
	tfm_spi_finish_owner(&as);
	return only;
}

bool
tfm_kept_stored(const TfmModelRow *row)
{
	Oid			types[2] = {INT4OID, INT8OID};
	Datum		args[2] = {Int32GetDatum(row->id), Int64GetDatum(row->version)};
	TfmAsOwner	as;
	uint64		n;

	tfm_spi_connect_owner(&as);
	n = tfm_spi_exec("SELECT 1 FROM tfm.gguf_tensors g "
					 "WHERE g.model_id = $1 AND g.version = $2 AND g.blocks IS NOT NULL "
					 "AND NOT EXISTS (SELECT 1 FROM tfm.tensors t WHERE t.model_id = $1 AND t.name = g.tensor) "
					 "LIMIT 1",
					 2, types, args, NULL, true, 1, SPI_OK_SELECT, "cannot read tfm.gguf_tensors");
	tfm_spi_finish_owner(&as);
	return n > 0;
}
