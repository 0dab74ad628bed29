/*
 * int4_kept.c — blocks a model keeps as a file gave them (a GGUF file's
 * Q4_0, Q8_0, Q4_K, Q5_K and Q6_K tensors, tfm/precision.h): checked and
 * copied into the model.  model/precision.c writes the Q4_0 ones over the
 * columns they cover when it packs the model for int4, so those columns
 * run the file's blocks byte for byte rather than a requantization of
 * their dequantized values; the others are what TFM_PREC_GGUF runs
 * (kept_block.c: a matrix's parts, an entry's bytes).
 */
#include <stdlib.h>
#include <string.h>

#include "tfm/kept_block.h"
#include "tfm/kquant.h"
#include "tfm/precision.h"
#include "tfm/status.h"
#include "model_internal.h"

#define GGML_Q4_0 2

/* a rows_only entry: rows col0 .. of the 2-D tensor at its offset, K its width */
static bool
rows_fit(const tfm_model *m, const tfm_int4_kept *k)
{
	for (int i = 0; i < m->n_tensors; i++)
	{
		const tfm_param_info *p = &m->info[i];

		if (p->offset == k->offset && p->ndim == 2 && p->dims[1] == k->K && k->col0 >= 0 &&
			(long) k->col0 + k->cols <= p->dims[0] && tfm_kept_bytes(k) > 0)
			return true;
	}
	return false;
}

int
tfm_model_keep_int4(tfm_model *m, const tfm_int4_kept *k, int n)
{
	struct tfm_int4_kept_set *s = NULL;
	size_t		bytes = 0;
	uint8_t    *p;

	/* the blocks about to go are the only copy of the values left absent */
	if (m->absent && tfm_model_make_floats(m) != 0)
		return TFM_EINVAL;
	for (int i = 0; i < n; i++)
	{
		if (!k[i].blocks || (k[i].rows_only ? !rows_fit(m, &k[i]) : !tfm_model_int4_fits(m, &k[i])))
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
			s->columns += k[i].rows_only ? 0 : k[i].cols;
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
tfm_model_keep_kept_view(tfm_model *m, const tfm_int4_kept *k, int n)
{
	struct tfm_int4_kept_set *s = NULL;

	if (m->absent && tfm_model_make_floats(m) != 0)
		return TFM_EINVAL;
	for (int i = 0; i < n; i++)
		if (!k[i].blocks || (k[i].rows_only ? !rows_fit(m, &k[i]) : !tfm_model_int4_fits(m, &k[i])))
			return TFM_EINVAL;
	if (n > 0)
	{
		if (!(s = malloc(sizeof(*s) + sizeof(tfm_int4_kept) * (size_t) n)))
			return TFM_ENOMEM;
		s->n = n;
		s->columns = 0;
		for (int i = 0; i < n; i++)
		{
			s->k[i] = k[i];
			s->columns += k[i].rows_only ? 0 : k[i].cols;
		}
	}
	free(m->int4_kept);
	m->int4_kept = s;
	if (tfm_model_precision(m) == TFM_PREC_INT4 || tfm_model_precision(m) == TFM_PREC_GGUF)
		tfm_model_set_precision(m, TFM_PREC_FP32);
	return 0;
}
