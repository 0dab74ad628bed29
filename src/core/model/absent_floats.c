/*
 * absent_floats.c — float32 values a model leaves to its kept GGUF blocks
 * (tfm/kept_block.h).  At TFM_PREC_GGUF a K-quant or Q8_0 matrix runs its
 * blocks and an embedding is only looked up by rows, so a model loaded to
 * run there need not make their float32 values (7 times a Q4_K_M file's
 * size): they stay absent, their place in the parameter block untouched.
 * Here: which tensors may stay so, a tensor's values or an embedding's rows
 * made from the blocks when read (the values the import checked bit for
 * bit: tfm_gguf_to_f32), and every absent value made when the model leaves
 * gguf (another precision, training).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tfm/gguf_quants.h"
#include "tfm/kept_block.h"
#include "tfm/kquant.h"
#include "tfm/precision.h"
#include "tfm/status.h"
#include "model_internal.h"

#define GGML_Q4_0 2

/* entry k's layout: true when its columns are the rows of the tensor (a table) */
static bool
entry_rows(const tfm_model *m, const tfm_int4_kept *k, int *N)
{
	bool		transposed = true;

	if (k->rows_only)
		return true;
	if (!tfm_model_kept_matrix(m, k, N, &transposed))
		return false;
	return transposed;
}

/* whether entry k of m lies at tensor p */
static bool
entry_of(const tfm_int4_kept *k, const tfm_param_info *p)
{
	return k->offset == p->offset && p->ndim == 2;
}

/* an embedding table read by lookups (tfm_model_embedding_forward) */
static bool
is_table(const tfm_model *m, const tfm_param_info *p)
{
	const float *x = m->params + p->offset;

	return x == m->w.tok_emb || x == m->w.tgt_emb || x == m->w.pos_emb || x == m->w.dec_pos_emb;
}

int
tfm_model_leave_absent(tfm_model *m, const bool *want)
{
	const struct tfm_int4_kept_set *s = m->int4_kept;
	int			n = 0;

	if (!s || !want)
		return 0;
	for (int i = 0; i < m->n_tensors; i++)
	{
		const tfm_param_info *p = &m->info[i];
		size_t		covered = 0;
		bool		ok = want[i] && p->ndim == 2 && p->size > 0,
					run,
					rows_all = true;
		int			uses;

		for (int j = 0; ok && j < s->n; j++)
		{
			const tfm_int4_kept *k = &s->k[j];
			int			N;

			if (!entry_of(k, p))
				continue;
			if (k->type == GGML_Q4_0 || !tfm_kq_supported(k->type) || tfm_kept_bytes(k) == 0)
				ok = false;
			covered += (size_t) k->K * (size_t) k->cols;
			if (!entry_rows(m, k, &N))
				rows_all = false;
		}
		if (!ok || covered != p->size)
			continue;
		uses = tfm_model_matrix_uses(m, m->params + p->offset, &run);
		if (uses < 0)
			return -1;
		/* matrices run by their parts only; a table's rows looked up from row entries */
		if ((uses > 0 && !run) || (is_table(m, p) && !rows_all) || (uses == 0 && !is_table(m, p)))
			continue;
		if (!m->absent && !(m->absent = calloc(m->n_tensors > 0 ? m->n_tensors : 1, 1)))
			return -1;
		m->absent[i] = 1;
		m->make_floats = tfm_model_make_floats;
		m->absent_floats += p->size;
		n++;
	}
	/* packed copies made before read values that are no longer there */
	if (n > 0 && tfm_model_precision(m) != TFM_PREC_GGUF)
		tfm_model_set_precision(m, TFM_PREC_FP32);
	return n;
}

void
tfm_model_release_values(tfm_model *m, int i)
{
	if (i >= 0 && i < m->n_tensors)
		tfm_model_release_range(m, m->info[i].offset, m->info[i].size);
}

void
tfm_model_release_range(tfm_model *m, size_t offset, size_t n)
{
	uintptr_t	page = (uintptr_t) sysconf(_SC_PAGESIZE),
				from,
				to;

	if (!m->params_mapped || page == 0 || (page & (page - 1)) || offset > m->n_floats ||
		n > m->n_floats - offset)
		return;
	from = ((uintptr_t) (m->params + offset) + page - 1) & ~(page - 1);
	to = (uintptr_t) (m->params + offset + n) & ~(page - 1);
	/* a private anonymous mapping: the pages read as zeros after, and take no memory */
	if (to > from)
		(void) madvise((void *) from, to - from, MADV_DONTNEED);
}

/* entry k's columns written into the tensor's values at W */
static int
entry_values(const tfm_model *m, const tfm_int4_kept *k, float *W)
{
	int			N = 0,
				K = k->K;
	bool		rows = entry_rows(m, k, &N);
	size_t		row_bytes = tfm_kept_bytes(k) / (size_t) k->cols;
	float	   *buf;

	if (!rows && N <= 0)
		return TFM_EINVAL;
	if (!(buf = malloc(sizeof(float) * (size_t) K)))
		return TFM_ENOMEM;
	for (int j = 0; j < k->cols; j++)
	{
		if (m->poll && (j & 255) == 255)
			m->poll(m->poll_arg);
		if (rows)
		{
			/* column j of the entry is row col0 + j of the table */
			if (tfm_gguf_to_f32(W + (size_t) (k->col0 + j) * K, k->blocks + (size_t) j * row_bytes,
								k->type, (uint64_t) K) != TFM_OK)
				break;
			continue;
		}
		if (tfm_gguf_to_f32(buf, k->blocks + (size_t) j * row_bytes, k->type, (uint64_t) K) != TFM_OK)
			break;
		/* stored (K, N): column j's value r is W[r·N + j] */
		for (int r = 0; r < K; r++)
			W[(size_t) r * N + k->col0 + j] = buf[r];
	}
	free(buf);
	return 0;
}

int
tfm_model_tensor_read(const tfm_model *m, int i, float *out)
{
	const tfm_param_info *p;

	if (i < 0 || i >= m->n_tensors)
		return TFM_EINVAL;
	p = &m->info[i];
	if (!m->absent || !m->absent[i])
	{
		memcpy(out, m->params + p->offset, sizeof(float) * p->size);
		return 0;
	}
	for (int j = 0; j < m->int4_kept->n; j++)
		if (entry_of(&m->int4_kept->k[j], p))
		{
			int			rc = entry_values(m, &m->int4_kept->k[j], out);

			if (rc != 0)
				return rc;
		}
	return 0;
}

int
tfm_model_make_floats(tfm_model *m)
{
	if (!m->absent)
		return 0;
	if (m->release_params)
		return TFM_EINVAL;
	for (int i = 0; i < m->n_tensors; i++)
		if (m->absent[i])
		{
			const tfm_param_info *p = &m->info[i];
			int			rc = tfm_model_tensor_read(m, i, m->params + p->offset);

			if (rc != 0)
				return rc;
			m->absent[i] = 0;
			m->absent_floats -= p->size;
			m->floats_made += p->size;
		}
	free(m->absent);
	m->absent = NULL;
	m->absent_floats = 0;
	return 0;
}

/* the absent tensor whose values start at x, or NULL */
static const tfm_param_info *
absent_at(const tfm_model *m, const float *x)
{
	if (!m->absent || !x)
		return NULL;
	for (int i = 0; i < m->n_tensors; i++)
		if (m->absent[i] && m->params + m->info[i].offset == x)
			return &m->info[i];
	return NULL;
}

/* row r (d values) of the absent table p into out, from its row entries */
static void
table_row(const tfm_model *m, const tfm_param_info *p, int r, float *out)
{
	for (int j = 0; j < m->int4_kept->n; j++)
	{
		const tfm_int4_kept *k = &m->int4_kept->k[j];

		if (entry_of(k, p) && r >= k->col0 && r < k->col0 + k->cols)
		{
			(void) tfm_gguf_to_f32(out, k->blocks + (size_t) (r - k->col0) * (tfm_kept_bytes(k) / k->cols),
								   k->type, (uint64_t) k->K);
			return;
		}
	}
	memset(out, 0, sizeof(float) * p->dims[1]);	/* not reached: leave_absent checked the cover */
}

int
tfm_model_embedding_forward(const tfm_model *m, float *out, const int32_t *ids, const float *tok,
							int V, const float *pos, float scale, int B, int T, int d, int pos0)
{
	const tfm_param_info *pt = absent_at(m, tok),
			   *pp = absent_at(m, pos);
	float	   *row;
	int			zero = 0;

	if (!pt && !pp)
		return tfm_embedding_forward(out, ids, tok, V, pos, scale, B, T, d, pos0);
	if (tfm_ids_find_bad(ids, (size_t) B * T, V, 0) >= 0)
		return -1;
	if (!(row = malloc(sizeof(float) * 2 * (size_t) d)))
		return -1;
	/* one row at a time, as tfm_embedding_forward computes it */
	for (int b = 0; b < B; b++)
		for (int t = 0; t < T; t++)
		{
			int			id = ids[(size_t) b * T + t];
			const float *e = tok + (size_t) id * d,
					   *q = pos ? pos + (size_t) (pos0 + t) * d : NULL;

			if (pt)
			{
				table_row(m, pt, id, row);
				e = row;
			}
			if (pp)
			{
				table_row(m, pp, pos0 + t, row + d);
				q = row + d;
			}
			(void) tfm_embedding_forward(out + ((size_t) b * T + t) * d, &zero, e, 1, q, scale,
										 1, 1, d, 0);
		}
	free(row);
	return 0;
}
