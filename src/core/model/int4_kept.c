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

#include "tfm/kquant.h"
#include "tfm/precision.h"
#include "tfm/status.h"
#include "model_internal.h"

#define GGML_Q4_0 2

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
