/*
 * attention.c — multi-head scaled dot-product attention over views into
 * fused Q/K/V buffers, with causal and key-padding masks, a stable softmax
 * and dropout on the attention weights.
 *
 * Each (batch, head) pair is independent: the loops run over the B·h pairs
 * on the core's threads, and each pair does its products on one thread
 * (head j of a fused buffer is a strided view): through BLIS's micro-kernel
 * on panels packed in the thread's scratch, or BLIS's gemm, whichever is
 * faster for the product (head_gemm).  Results do not depend on the number
 * of threads.
 * With the causal mask the queries go in blocks of CAUSAL_BLOCK rows and
 * each block's products stop at the last key its last row sees, so about
 * half of the masked square is never computed (the weights there are 0).
 *
 * Forward, per pair:  S = Q·Kᵀ/√s,  P = softmax(mask(S)),  O = drop(P)·V.
 * Backward:           dPd = dO·Vᵀ,  dV += drop(P)ᵀ·dO,  dP = drop'(dPd),
 *                     dS = P ⊙ (dP − rowsum(dP ⊙ P)),
 *                     dQ += dS·K/√s,  dK += dSᵀ·Q/√s.
 * Masked weights are exactly 0, so they pass no gradient.  The row sums
 * and maxima are vector reductions (`omp simd`): their order is fixed by
 * the code, not by the threads.
 */
#include <math.h>
#include <omp.h>
#include <string.h>

#include "tfm/blas.h"
#include "tfm/layers.h"
#include "tfm/rng.h"
#include "../vecmath.h"

#define BSQ(sh) ((sh)->bsq ? (size_t) (sh)->bsq : (size_t) (sh)->Tq * (sh)->rsq)
#define BSK(sh) ((sh)->bsk ? (size_t) (sh)->bsk : (size_t) (sh)->Tk * (sh)->rsk)
#define BSV(sh) ((sh)->bsv ? (size_t) (sh)->bsv : (size_t) (sh)->Tk * (sh)->rsv)
#define BSO(sh) ((sh)->bso ? (size_t) (sh)->bso : (size_t) (sh)->Tq * (sh)->rso)
#define BSPAD(sh) ((sh)->bspad ? (size_t) (sh)->bspad : (size_t) (sh)->Tk)

/*
 * One product of a head: through tfm_gemm_packed where that wins — B read
 * through a transposed view (Q·Kᵀ, dO·Vᵀ: BLIS's gemm is 2-2.6× slower
 * there at head sizes 16-32) or a short inner dimension (BLIS's per-call
 * set-up dominates) — else BLIS's gemm, which beats packing on P·V-like
 * products with a long K (bench/attn_products).
 */
#define ATTN_PACK_K 32

static inline void
head_gemm(int M, int N, int K, float alpha, const float *A, ptrdiff_t rsa, ptrdiff_t csa,
		  const float *B, ptrdiff_t rsb, ptrdiff_t csb, float beta, float *C, ptrdiff_t rsc,
		  float *pack)
{
	if ((rsb == 1 && csb != 1) || K <= ATTN_PACK_K)
		tfm_gemm_packed(M, N, K, alpha, A, rsa, csa, B, rsb, csb, beta, C, rsc, 1, pack);
	else
		tfm_gemm_strided(M, N, K, alpha, A, rsa, csa, B, rsb, csb, beta, C, rsc, 1);
}

/*
 * Per thread: dP and drop(P) (Tq × Tk each), then panels for the packed
 * products — head_gemm packs only products whose inner dimension is the
 * head size or at most ATTN_PACK_K, so that bounds K.
 */
static inline size_t
thread_scratch(const tfm_attn_shape *sh)
{
	int			mx = sh->Tq > sh->Tk ? sh->Tq : sh->Tk,
				k = sh->s > ATTN_PACK_K ? sh->s : ATTN_PACK_K;

	mx = mx > sh->s ? mx : sh->s;
	return (size_t) 2 * sh->Tq * sh->Tk + tfm_gemm_packed_floats(mx, mx, k);
}

size_t
tfm_attention_scratch(const tfm_attn_shape *sh, int threads)
{
	return (size_t) threads * thread_scratch(sh);
}

static inline uint32_t
drop_threshold(float p)
{
	double		t = (double) p * 4294967296.0;

	return t >= 4294967295.0 ? 4294967295u : (uint32_t) t;
}

/* number of keys query r may see (causal), before padding */
static inline int
visible_keys(const tfm_attn_shape *sh, int r)
{
	if (!sh->causal)
		return sh->Tk;
	return sh->Tk - sh->Tq + r + 1;
}

#define CAUSAL_BLOCK 32

/* query rows per product block: all of them, or CAUSAL_BLOCK when causal */
static inline int
row_block(const tfm_attn_shape *sh)
{
	return sh->causal && sh->Tq > CAUSAL_BLOCK ? CAUSAL_BLOCK : sh->Tq;
}

/* mask and softmax one row of scores in place */
TFM_HOT static void
masked_softmax_row(float *row, const uint8_t *pad, int n_visible, int Tk)
{
	float		mx = -INFINITY,
				sum = 0.0f,
				inv;

	if (pad)
		for (int c = 0; c < n_visible; c++)
			row[c] = pad[c] ? -INFINITY : row[c];
#pragma omp simd reduction(max:mx)
	for (int c = 0; c < n_visible; c++)
		mx = row[c] > mx ? row[c] : mx;
	if (mx == -INFINITY)
	{
		/* nothing visible: the row attends to nothing */
		memset(row, 0, sizeof(float) * Tk);
		return;
	}
#pragma omp simd reduction(+:sum)
	for (int c = 0; c < n_visible; c++)
	{
		float		e = tfm_expf(row[c] - mx);

		row[c] = e;
		sum += e;
	}
	for (int c = n_visible; c < Tk; c++)
		row[c] = 0.0f;
	inv = 1.0f / sum;
	for (int c = 0; c < n_visible; c++)
		row[c] *= inv;
}

/* D = dropout(P) for n weights starting at index base */
TFM_HOT static void
dropout_weights(float *D, const float *P, size_t n, uint64_t key, size_t base, uint32_t th,
				float keep_scale)
{
	for (size_t i = 0; i < n; i++)
		D[i] = tfm_drop_bits(key, base + i) >= th ? P[i] * keep_scale : 0.0f;
}

/* through dropout (regenerated mask), then the softmax's Jacobian */
TFM_HOT static void
softmax_backward_row(float *g, const float *p, int Tk, bool dropping, uint64_t key,
					 size_t base, uint32_t th, float keep_scale)
{
	float		dot = 0.0f;

	if (dropping)
		for (int c = 0; c < Tk; c++)
			g[c] = tfm_drop_bits(key, base + (size_t) c) >= th ? g[c] * keep_scale : 0.0f;
#pragma omp simd reduction(+:dot)
	for (int c = 0; c < Tk; c++)
		dot += g[c] * p[c];
	for (int c = 0; c < Tk; c++)
		g[c] = p[c] * (g[c] - dot);
}

void
tfm_attention_forward(float *out, float *probs,
					  const float *q, const float *k, const float *v,
					  const uint8_t *key_pad,
					  const tfm_attn_shape *sh, float *scratch)
{
	const int	B = sh->B,
				Tq = sh->Tq,
				Tk = sh->Tk,
				h = sh->h,
				s = sh->s;
	const float scale = 1.0f / sqrtf((float) s);
	const int	pairs = B * h;
	const bool	dropping = sh->p_drop > 0.0f;
	const uint32_t th = drop_threshold(sh->p_drop);
	const float keep_scale = dropping ? 1.0f / (1.0f - sh->p_drop) : 1.0f;

#pragma omp parallel for num_threads(tfm_get_threads()) schedule(dynamic, 1)
	for (int pr = 0; pr < pairs; pr++)
	{
		int			b = pr / h,
					j = pr % h;
		const float *qb = q + (size_t) b * BSQ(sh) + (size_t) j * s;
		const float *kb = k + (size_t) b * BSK(sh) + (size_t) j * s;
		const float *vb = v + (size_t) b * BSV(sh) + (size_t) j * s;
		float	   *ob = out + (size_t) b * BSO(sh) + (size_t) j * s;
		float	   *P = probs + (size_t) pr * Tq * Tk;
		const uint8_t *pad = key_pad ? key_pad + (size_t) b * BSPAD(sh) : NULL;
		const float *Pd = P;
		float	   *D = scratch + (size_t) omp_get_thread_num() * thread_scratch(sh);
		float	   *pack = D + (size_t) 2 * Tq * Tk;
		const int	rb = row_block(sh);

		for (int r0 = 0; r0 < Tq; r0 += rb)
		{
			int			nr = Tq - r0 < rb ? Tq - r0 : rb,
						nv = visible_keys(sh, r0 + nr - 1);

			head_gemm(nr, nv, s, scale, qb + (size_t) r0 * sh->rsq, sh->rsq, 1, kb, 1, sh->rsk,
					  0.0f, P + (size_t) r0 * Tk, Tk, pack);
		}
		for (int r = 0; r < Tq; r++)
			masked_softmax_row(P + (size_t) r * Tk, pad, visible_keys(sh, r), Tk);

		if (dropping)
		{
			size_t		base = (size_t) pr * Tq * Tk;

			dropout_weights(D, P, (size_t) Tq * Tk, sh->key, base, th, keep_scale);
			Pd = D;
		}
		for (int r0 = 0; r0 < Tq; r0 += rb)
		{
			int			nr = Tq - r0 < rb ? Tq - r0 : rb,
						nv = visible_keys(sh, r0 + nr - 1);

			head_gemm(nr, s, nv, 1.0f, Pd + (size_t) r0 * Tk, Tk, 1, vb, sh->rsv, 1,
					  0.0f, ob + (size_t) r0 * sh->rso, sh->rso, pack);
		}
	}
}

void
tfm_attention_backward(float *dq, float *dk, float *dv,
					   const float *dout, const float *probs,
					   const float *q, const float *k, const float *v,
					   const tfm_attn_shape *sh, float *scratch)
{
	const int	B = sh->B,
				Tq = sh->Tq,
				Tk = sh->Tk,
				h = sh->h,
				s = sh->s;
	const float scale = 1.0f / sqrtf((float) s);
	const int	pairs = B * h;
	const bool	dropping = sh->p_drop > 0.0f;
	const uint32_t th = drop_threshold(sh->p_drop);
	const float keep_scale = dropping ? 1.0f / (1.0f - sh->p_drop) : 1.0f;

#pragma omp parallel for num_threads(tfm_get_threads()) schedule(dynamic, 1)
	for (int pr = 0; pr < pairs; pr++)
	{
		int			b = pr / h,
					j = pr % h;
		size_t		qo = (size_t) b * BSQ(sh) + (size_t) j * s;
		size_t		ko = (size_t) b * BSK(sh) + (size_t) j * s;
		size_t		vo = (size_t) b * BSV(sh) + (size_t) j * s;
		const float *dob = dout + (size_t) b * BSO(sh) + (size_t) j * s;
		const float *P = probs + (size_t) pr * Tq * Tk;
		float	   *dP = scratch + (size_t) omp_get_thread_num() * thread_scratch(sh);
		float	   *D = dP + (size_t) Tq * Tk;
		float	   *pack = D + (size_t) Tq * Tk;
		const float *Pd = P;
		size_t		base = (size_t) pr * Tq * Tk;
		const int	rb = row_block(sh);

		if (dropping)
		{
			dropout_weights(D, P, (size_t) Tq * Tk, sh->key, base, th, keep_scale);
			Pd = D;
		}

		for (int r0 = 0; r0 < Tq; r0 += rb)
		{
			int			nr = Tq - r0 < rb ? Tq - r0 : rb,
						nv = visible_keys(sh, r0 + nr - 1);
			float	   *dPb = dP + (size_t) r0 * Tk;
			const float *dob_r = dob + (size_t) r0 * sh->rso;

			/* dPd = dO·Vᵀ */
			head_gemm(nr, nv, s, 1.0f, dob_r, sh->rso, 1, v + vo, 1, sh->rsv,
					  0.0f, dPb, Tk, pack);
			/* dV += Pdᵀ·dO */
			if (dv)
				head_gemm(nv, s, nr, 1.0f, Pd + (size_t) r0 * Tk, 1, Tk, dob_r, sh->rso, 1,
						  1.0f, dv + vo, sh->rsv, pack);
			/* through dropout, then the softmax (0 past what a row sees) */
			for (int r = r0; r < r0 + nr; r++)
			{
				int			n = visible_keys(sh, r);

				softmax_backward_row(dP + (size_t) r * Tk, P + (size_t) r * Tk, n, dropping,
									 sh->key, base + (size_t) r * Tk, th, keep_scale);
				if (nv > n)
					memset(dP + (size_t) r * Tk + n, 0, sizeof(float) * (nv - n));
			}
			/* dQ += dS·K·scale;  dK += dSᵀ·Q·scale */
			if (dq)
				head_gemm(nr, s, nv, scale, dPb, Tk, 1, k + ko, sh->rsk, 1,
						  1.0f, dq + qo + (size_t) r0 * sh->rsq, sh->rsq, pack);
			if (dk)
				head_gemm(nv, s, nr, scale, dPb, 1, Tk, q + qo + (size_t) r0 * sh->rsq, sh->rsq, 1,
						  1.0f, dk + ko, sh->rsk, pack);
		}
	}
}
