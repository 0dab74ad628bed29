/*
 * lowp_set.c — the active set of packed weights and the linear products
 * through it (see lowp_set.h): the set is found by a pass's scope, a
 * weight in it by the fp32 matrix's address.
 */
#include <stdlib.h>

#include "lowp_set.h"

static const struct tfm_lowp_set *active = NULL;

void
tfm_lowp_set_free(struct tfm_lowp_set *s)
{
	if (!s)
		return;
	if (active == s)
		active = NULL;
	free(s->e);
	if (s->release)
		s->release(s->packed, s->release_arg);
	else
		free(s->packed);
	free(s->work);
	free(s->act);
	free(s);
}

static tfm_lowp_entry *
find(const struct tfm_lowp_set *s, const float *W, int in, int o)
{
	for (int i = 0; i < s->n; i++)
		if (s->e[i].W == W && s->e[i].K == in && s->e[i].N == o)
			return &s->e[i];
	return NULL;
}

/* *buf holds at least need bytes (64-byte aligned); false if out of memory */
static bool
reserve(void **buf, size_t *cap, size_t need)
{
	void	   *w;

	if (need <= *cap)
		return true;
	if (!(w = aligned_alloc(64, tfm_lowp_align64(need))))
		return false;
	free(*buf);
	*buf = w;
	*cap = tfm_lowp_align64(need);
	return true;
}

tfm_precision
tfm_lowp_in_effect(void)
{
	return active ? active->prec : TFM_PREC_FP32;
}

const struct tfm_lowp_set *
tfm_lowp_activate(const struct tfm_lowp_set *s)
{
	const struct tfm_lowp_set *prev = active;

	active = s;
	return prev;
}

void
tfm_lowp_restore(const struct tfm_lowp_set *prev)
{
	active = prev;
}

bool
tfm_lowp_linear(float *out, const float *inp, const float *W,
				const float *b, int N, int in, int o)
{
	return tfm_lowp_linear_act(out, inp, W, b, N, in, o, NULL);
}

bool
tfm_lowp_linear_act(float *out, const float *inp, const float *W,
					const float *b, int N, int in, int o, tfm_row_fn act)
{
	struct tfm_lowp_set *s = (struct tfm_lowp_set *) active;
	tfm_lowp_entry *e;
	size_t		need;
	float		beta = 0.0f;

	if (!s || N <= 0 || !(e = find(s, W, in, o)))
		return false;
	need = s->prec == TFM_PREC_BF16 ? tfm_bf16_work_bytes(N, in) : tfm_int8_work_bytes(N, in);
	if (!reserve(&s->work, &s->work_cap, need))
		return false;			/* the fp32 product still works */
	if (s->prec == TFM_PREC_BF16)
	{
		/* the bias and the activation in the product's blocks (AMX) */
		tfm_bf16_gemm_fused(N, o, in, inp, in, &e->b, b, act, out, o, s->work);
		return true;
	}
	if (b)
	{
		tfm_lowp_rows_set(out, o, N, o, b);
		beta = 1.0f;
	}
	tfm_int8_gemm(N, o, in, 1.0f, inp, in, &e->q, beta, out, o, s->work);
	if (act)
		tfm_lowp_rows_apply(act, out, o, N, o);
	return true;
}

bool
tfm_lowp_linear_backward(float *dinp, float beta_in, float *dW,
						 const float *dout, const float *inp,
						 const float *W, int N, int in, int o)
{
	struct tfm_lowp_set *s = (struct tfm_lowp_set *) active;
	tfm_lowp_entry *e;
	size_t		need = 0;

	if (!s || !s->training || N <= 0 || !(e = find(s, W, in, o)))
		return false;
	if (dinp)
		need = tfm_bf16_work_bytes(N, o);
	if (dW)
	{
		size_t		w = e->transposed ? tfm_bf16_work_bytes(o, N) : tfm_bf16_work_bytes(in, N);

		need = need > w ? need : w;
		if (!reserve(&s->act, &s->act_cap,
					 e->transposed ? tfm_bf16_pack_bytes(N, in) : tfm_bf16_pack_bytes(N, o)))
			return false;
	}
	if (!reserve(&s->work, &s->work_cap, need))
		return false;

	/* dinp (N × in) = beta_in·dinp + dout (N × o) · Wᵀ (o × in) */
	if (dinp)
		tfm_bf16_gemm(N, in, o, 1.0f, dout, o, &e->bt, beta_in, dinp, in, s->work);
	if (dW && !e->transposed)
	{
		/* dW (in × o) += inpᵀ (in × N, read in place) · dout (N × o) */
		tfm_bf16_weights dy;

		tfm_bf16_pack(&dy, s->act, dout, o, 1, N, o);
		tfm_bf16_gemm_strided(in, o, N, 1.0f, inp, 1, in, &dy, 1.0f, dW, o, s->work);
	}
	else if (dW)
	{
		/* the tied head's dE (o × in) += doutᵀ (o × N) · inp (N × in) */
		tfm_bf16_weights x;

		tfm_bf16_pack(&x, s->act, inp, in, 1, N, in);
		tfm_bf16_gemm_strided(o, in, N, 1.0f, dout, 1, o, &x, 1.0f, dW, in, s->work);
	}
	return true;
}
