/*
 * kept_block.c — the geometry of the blocks a model keeps as a GGUF file
 * gave them (int4_kept.c): an entry's bytes, and the parts (one per kept
 * tensor, each with its ggml type) that cover a matrix's columns, which
 * model/precision.c packs and TFM_PREC_GGUF runs (tfm_kq_gemm).
 */
#include "tfm/kept_block.h"
#include "tfm/kquant.h"
#include "model_internal.h"

#define GGML_Q4_0 2

size_t
tfm_kept_bytes(const tfm_int4_kept *k)
{
	if (k->K <= 0 || k->cols <= 0)
		return 0;
	if (k->type == GGML_Q4_0)
		return k->K % TFM_INT4_BLOCK != 0 ? 0 :
			(size_t) k->cols * (size_t) (k->K / TFM_INT4_BLOCK) * TFM_INT4_BLOCK_BYTES;
	if (!tfm_kq_supported(k->type) || k->K % tfm_kq_act_block_values(k->type) != 0)
		return 0;
	return (size_t) k->cols * tfm_kq_row_bytes(k->type, k->K);
}

int
tfm_kept_parts(const tfm_model *m, const float *W, int K, int N, struct tfm_kq_part *out)
{
	const struct tfm_int4_kept_set *s = m->int4_kept;
	int			n = 0;
	long		next = 0;

	if (!s || N <= 0)
		return 0;
	/* in column order: the part starting where the last one ended, each time */
	while (next < N)
	{
		const tfm_int4_kept *hit = NULL;

		for (int i = 0; i < s->n && !hit; i++)
		{
			const tfm_int4_kept *k = &s->k[i];

			if (k->type != GGML_Q4_0 && !k->rows_only && W == m->params + k->offset && k->K == K &&
				k->col0 == next)
				hit = k;
		}
		if (!hit || (long) hit->col0 + hit->cols > N)
			return 0;
		if (out)
			out[n] = (tfm_kq_part) {hit->type, hit->col0, hit->cols, hit->blocks};
		n++;
		next += hit->cols;
	}
	return n;
}
