/*
 * lowp_set.c — sets of packed weights and the linear products through an
 * entry of one (see lowp_set.h).
 *
 * Where bf16 runs on AVX2 (fp32 arithmetic on widened operands, no bf16
 * instruction), an inference product of more than TFM_LOWP_GEMV_ROWS rows
 * (a batched, compute-bound pass) is left to the caller's fp32 product on
 * W itself (BLIS): bf16 gains nothing there, fp32 is at least as fast and
 * exact.  Decoding's few rows keep the packed copy (half the bytes to
 * stream); training sets always use it (bf16 training is their contract).
 */
#include <stdlib.h>
#include <omp.h>

#include "tfm/blas.h"
#include "tfm/kquant.h"
#include "lowp_internal.h"
#include "lowp_set.h"

void
tfm_lowp_set_free(struct tfm_lowp_set *s)
{
	if (!s)
		return;
	free(s->e);
	free(s->index);
	free(s->parts);
	if (s->release)
		s->release(s->packed, s->release_arg);
	else
		free(s->packed);
	for (int i = 0; i < TFM_MAX_THREADS; i++)
		free(s->work[i]);
	free(s->act);
	free(s);
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

/*
 * The calling thread's work buffer of at least need bytes: a thread of a
 * parallel region (each running a pass of its own) has one of its own.
 * NULL if out of memory.
 */
static void *
work_for(struct tfm_lowp_set *s, size_t need)
{
	int			t = omp_in_parallel() ? omp_get_thread_num() : 0;

	if (t >= TFM_MAX_THREADS || !reserve(&s->work[t], &s->work_cap[t], need))
		return NULL;
	return s->work[t];
}

bool
tfm_lowp_linear(const tfm_lowp_entry *e, float *out, const float *inp,
				const float *b, int N, int in, int o)
{
	return tfm_lowp_linear_act(e, out, inp, b, N, in, o, NULL);
}

/*
 * TFM_PREC_GGUF: out = inp · W through the file's blocks, part by part
 * (tfm_kq_gemm quantizes each row of inp on its own and sums each column's
 * blocks in order: row-exact at every N), then b and act
 */
static bool
linear_kq(const tfm_lowp_entry *e, float *out, const float *inp, const float *b, int N, int in,
		  int o, tfm_row_fn act)
{
	void	   *work;
	struct tfm_lowp_set *s = e->set;
	size_t		need = 0;
	float		beta = 0.0f;

	if (e->n_kq <= 0)
		return false;			/* not the file's blocks: fp32 */
	for (int i = 0; i < e->n_kq; i++)
	{
		size_t		w = tfm_kq_work_bytes(e->kq[i].type, N, in);

		need = w > need ? w : need;
	}
	if (!(work = work_for(s, need)))
		return false;
	if (b)
	{
		tfm_lowp_rows_set(out, o, N, o, b);
		beta = 1.0f;
	}
	for (int i = 0; i < e->n_kq; i++)
	{
		const tfm_kq_part *p = &e->kq[i];

		if (!tfm_kq_gemm(p->type, N, p->cols, in, inp, in, p->blocks, 1.0f, beta,
						 out + p->col0, o, work, tfm_get_threads()))
			return false;		/* (the set was made of supported types only) */
	}
	if (act)
		tfm_lowp_rows_apply(act, out, o, N, o);
	return true;
}

/*
 * rows_exact: a row's bits whatever N is.  int8 sums all of K exactly in
 * int32 on every path and quantizes each row against itself, so its one
 * product is row-exact; bf16 and int4 take their row-exact variants, and
 * bf16 on AVX2 the caller's fp32 row-exact product at every N (not only
 * above TFM_LOWP_GEMV_ROWS rows), so that a text of a few tokens gives
 * the bits alone that it gives in a batch.
 */
static bool
linear(const tfm_lowp_entry *e, float *out, const float *inp, const float *b, int N, int in,
	   int o, tfm_row_fn act, bool rows_exact)
{
	void	   *work;
	struct tfm_lowp_set *s;
	size_t		need;
	float		beta = 0.0f;

	if (!e || N <= 0 || e->K != in || e->N != o || e->p32)
		return false;			/* (an fp32 set's panels: the caller's product) */
	s = e->set;
	if (s->prec == TFM_PREC_GGUF)
		return linear_kq(e, out, inp, b, N, in, o, act);
	if (s->prec == TFM_PREC_BF16 && !s->training &&
		(N > TFM_LOWP_GEMV_ROWS || rows_exact) && lowp_bf16_batched_fp32())
		return false;
	need = s->prec == TFM_PREC_BF16 ?
		tfm_bf16_work_bytes(rows_exact && N <= TFM_LOWP_GEMV_ROWS ? TFM_LOWP_GEMV_ROWS + 1 : N, in) :
		s->prec == TFM_PREC_INT4 ? tfm_int4_work_bytes(N, in) : tfm_int8_work_bytes(N, in);
	if (!(work = work_for(s, need)))
		return false;			/* the fp32 product still works */
	if (s->prec == TFM_PREC_BF16)
	{
		/* the bias and the activation in the product's blocks (AMX) */
		if (rows_exact)
			tfm_bf16_gemm_rows(N, o, in, inp, in, &e->b, b, act, out, o, work);
		else
			tfm_bf16_gemm_fused(N, o, in, inp, in, &e->b, b, act, out, o, work);
		return true;
	}
	if (s->prec == TFM_PREC_INT8)
	{
		/* the bias and the activation in the product's blocks */
		tfm_int8_gemm_fused(N, o, in, inp, in, &e->q, b, act, out, o, work);
		return true;
	}
	if (b)
	{
		tfm_lowp_rows_set(out, o, N, o, b);
		beta = 1.0f;
	}
	if (s->prec == TFM_PREC_INT4 && rows_exact)
		tfm_int4_gemm_rows(N, o, in, 1.0f, inp, in, &e->q4, beta, out, o, work);
	else
		tfm_int4_gemm(N, o, in, 1.0f, inp, in, &e->q4, beta, out, o, work);
	if (act)
		tfm_lowp_rows_apply(act, out, o, N, o);
	return true;
}

bool
tfm_lowp_linear_act(const tfm_lowp_entry *e, float *out, const float *inp,
					const float *b, int N, int in, int o, tfm_row_fn act)
{
	return linear(e, out, inp, b, N, in, o, act, false);
}

bool
tfm_lowp_linear_rows(const tfm_lowp_entry *e, float *out, const float *inp,
					 const float *b, int N, int in, int o, tfm_row_fn act)
{
	return linear(e, out, inp, b, N, in, o, act, true);
}

bool
tfm_lowp_linear_backward(const tfm_lowp_entry *e, float *dinp, float beta_in, float *dW,
						 const float *dout, const float *inp, int N, int in, int o)
{
	void	   *work;
	struct tfm_lowp_set *s;
	size_t		need = 0;

	if (!e || !e->set->training || N <= 0 || e->K != in || e->N != o)
		return false;
	s = e->set;
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
	if (!(work = work_for(s, need)))
		return false;

	/* dinp (N × in) = beta_in·dinp + dout (N × o) · Wᵀ (o × in) */
	if (dinp)
		tfm_bf16_gemm(N, in, o, 1.0f, dout, o, &e->bt, beta_in, dinp, in, work);
	if (dW && !e->transposed)
	{
		/* dW (in × o) += inpᵀ (in × N, read in place) · dout (N × o) */
		tfm_bf16_weights dy;

		tfm_bf16_pack(&dy, s->act, dout, o, 1, N, o);
		tfm_bf16_gemm_strided(in, o, N, 1.0f, inp, 1, in, &dy, 1.0f, dW, o, work);
	}
	else if (dW)
	{
		/* the tied head's dE (o × in) += doutᵀ (o × N) · inp (N × in) */
		tfm_bf16_weights x;

		tfm_bf16_pack(&x, s->act, inp, in, 1, N, in);
		tfm_bf16_gemm_strided(o, in, N, 1.0f, dout, 1, o, &x, 1.0f, dW, in, work);
	}
	return true;
}
