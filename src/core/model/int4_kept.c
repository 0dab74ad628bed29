/*
 * int4_kept.c — blocks a model keeps as a file gave them (a GGUF file's
 * Q4_0, Q8_0, Q4_K, Q5_K and Q6_K tensors, tfm/precision.h): checked and
 * copied into the model.  model/precision.c writes the Q4_0 ones over the
 * columns they cover when it packs the model for int4, so those columns
 * run the file's blocks byte for byte rather than a requantization of
 * their dequantized values; the others are what TFM_PREC_GGUF runs
 * (tfm_kept_parts gives a matrix's).
 */
#include <stdlib.h>
#include <string.h>

#include "tfm/kquant.h"
#include "tfm/status.h"
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
tfm_model_keep_int4(tfm_model *m, const tfm_int4_kept *k, int n)
{
	struct tfm_int4_kept_set *s = NULL;
	size_t		bytes = 0;
	uint8_t    *p;

	for (int i = 0; i < n; i++)
	{
		if (!k[i].blocks || !tfm_model_int4_fits(m, &k[i]))
			return TFM_EINVAL;
		bytes += tfm_kept_bytes(&k[i]);
	}
	if (n > 0)
	{
		if (!(s = malloc(sizeof(*s) + sizeof(tfm_int4_kept) * (size_t) n + bytes)))
			return TFM_ENOMEM;
		s->n = n;
		s->columns = 0;
		p = (uint8_t *) (s->k + n);
		for (int i = 0; i < n; i++)
		{
			s->k[i] = k[i];
			memcpy(p, k[i].blocks, tfm_kept_bytes(&k[i]));
			s->k[i].blocks = p;
			p += tfm_kept_bytes(&k[i]);
			s->columns += k[i].cols;
		}
	}
	free(m->int4_kept);
	m->int4_kept = s;
	/* copies packed before no longer say what the model keeps */
	if (tfm_model_precision(m) == TFM_PREC_INT4 || tfm_model_precision(m) == TFM_PREC_GGUF)
		tfm_model_set_precision(m, TFM_PREC_FP32);
	return 0;
}

long
tfm_model_int4_kept_columns(const tfm_model *m)
{
	return m->int4_kept ? m->int4_kept->columns : 0;
}

int
tfm_kept_parts(const tfm_model *m, const float *W, int K, int N, tfm_kq_part *out)
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

			if (k->type != GGML_Q4_0 && W == m->params + k->offset && k->K == K &&
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
