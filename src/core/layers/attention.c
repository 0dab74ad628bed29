/*
 * attention.c — multi-head scaled dot-product attention over views into
 * fused Q/K/V buffers, with causal (optionally sliding-window) and key-padding masks, a stable softmax
 * and dropout on the attention weights.
 *
 * Each (batch, head) pair is independent: the loops run over the B·h pairs
 * on the core's threads, and each pair does its products on one thread
 * (head j of a fused buffer is a strided view).  With AVX-512 or AVX2 +
 * FMA they go through attention_kernels.c's tfm_attn_gemm, which reads
 * Q, P and the score gradients in place, the operands every block uses
 * (Kᵀ, V; in the backward pass Vᵀ, K, dO, Q) copied contiguous once per
 * pair; elsewhere
 * through BLIS's micro-kernel on panels packed in the thread's scratch
 * (blas.h).  Both give the same bits.  Results do not depend on the
 * number of threads.  The forward pass takes the queries in blocks of
 * CAUSAL_BLOCK rows (a block's scores stay in cache; without probs, as in
 * inference, they are never stored beyond the block).  With the causal
 * mask each block's products stop at the last key its last row sees; the
 * gradients of K and V go in blocks of as many keys, each summed over the
 * queries that see them — about half of the masked square is never
 * computed (the weights there are 0).  A pair with fewer than PANEL_MIN
 * queries (one token at a time while decoding) multiplies the views as
 * they lie instead (tfm_gemv_rows: each score a dot product with a key's
 * row, the output V's rows added up in order): packing the cache would
 * copy as much as it computes, and BLIS's call costs more than the
 * product (6.7 % of a Llama-134M Q4_K_M decoding step went to it).
 *
 * Forward, per pair:  S = Q·Kᵀ/√s,  P = softmax(mask(S)),  O = drop(P)·V.
 * T5 adds its position bias (sh->bias, per head) to S before the softmax,
 * and its backward pass can hand back dS (sh->dscores) for the bias's gradient.
 * Backward:           dPd = dO·Vᵀ,  dV += drop(P)ᵀ·dO,  dP = drop'(dPd),
 *                     dS = P ⊙ (dP − rowsum(dP ⊙ P)),
 *                     dQ += dS·K/√s,  dK += dSᵀ·Q/√s.
 * The scale may be another (sh->scale, Gemma 2's query_pre_attn_scalar^-½),
 * and the scores soft-capped before the softmax (sh->softcap c, no dropout):
 * S' = c·tanh(S/c); the backward pass then recomputes S (one more product a
 * pair, into the dropout's unused buffer) for dS = dS' ⊙ (1 − tanh²(S/c)).
 * Grouped-query attention (kvh < h) points query head j at key/value head
 * j / (h / kvh); the backward pass then runs the query heads of a group in
 * turn on one thread, since they add into the same dK and dV.
 * Masked weights are exactly 0, so they pass no gradient.  The row sums
 * and maxima are vector reductions: their order is fixed by the code, not
 * by the threads (fp32 passes keep the portable softmax row and its order;
 * bf16/int8 passes take the AVX-512 row where that path runs).
 */
#include <math.h>
#include <omp.h>
#include <string.h>

#include "tfm/blas.h"
#include "tfm/gemv.h"
#include "tfm/layers.h"
#include "tfm/rng.h"
#include "../kernels/vecmath.h"
#include "../kernels/attention/attention_kernels.h"

#define BSQ(sh) ((sh)->bsq ? (size_t) (sh)->bsq : (size_t) (sh)->Tq * (sh)->rsq)
#define BSK(sh) ((sh)->bsk ? (size_t) (sh)->bsk : (size_t) (sh)->Tk * (sh)->rsk)
#define BSV(sh) ((sh)->bsv ? (size_t) (sh)->bsv : (size_t) (sh)->Tk * (sh)->rsv)
#define BSO(sh) ((sh)->bso ? (size_t) (sh)->bso : (size_t) (sh)->Tq * (sh)->rso)
#define BSPAD(sh) ((sh)->bspad ? (size_t) (sh)->bspad : (size_t) (sh)->Tk)

#define CAUSAL_BLOCK 32
#define PANEL_MIN 4

/* query rows (and keys) per product block: all of them, or CAUSAL_BLOCK when causal */
static inline int
row_block(const tfm_attn_shape *sh)
{
	return sh->causal && sh->Tq > CAUSAL_BLOCK ? CAUSAL_BLOCK : sh->Tq;
}

/* query rows per block of the forward pass: the scores of a block stay in cache */
static inline int
fwd_block(const tfm_attn_shape *sh)
{
	return sh->Tq > CAUSAL_BLOCK ? CAUSAL_BLOCK : sh->Tq;
}

static inline int
key_block(const tfm_attn_shape *sh)
{
	return sh->causal && sh->Tk > CAUSAL_BLOCK ? CAUSAL_BLOCK : sh->Tk;
}

static inline size_t
max_sz(size_t a, size_t b)
{
	return a > b ? a : b;
}

/* panels of a whole operand: K, V, Vᵀ (keys × s either way), dO or Q */
static inline size_t
operand_panels(const tfm_attn_shape *sh)
{
	size_t		n = max_sz(tfm_panels_floats(sh->Tk, sh->s), tfm_panels_floats(sh->s, sh->Tk));

	return max_sz(n, tfm_panels_floats(sh->s, sh->Tq));
}

/* panels of one block: Q, dO, P or dS rows of a query block; Pᵀ or dSᵀ of a key block */
static inline size_t
block_panels(const tfm_attn_shape *sh)
{
	int			k = sh->s > sh->Tk ? sh->s : sh->Tk;

	return max_sz(tfm_panels_floats(row_block(sh), k), tfm_panels_floats(key_block(sh), sh->Tq));
}

/* per thread: dP and drop(P) (Tq × Tk each), two operands' panels, one block's */
static inline size_t
thread_scratch(const tfm_attn_shape *sh)
{
	if (sh->Tq < PANEL_MIN)
		return (size_t) 2 * sh->Tq * sh->Tk;
	return (size_t) 2 * sh->Tq * sh->Tk + 2 * operand_panels(sh) + block_panels(sh);
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

/* what both passes derive from the shape */
typedef struct attn_derived
{
	float		scale;			/* 1/sqrt(s) */
	int			pairs;			/* (batch, head) pairs */
	bool		dropping;
	uint32_t	th;				/* dropout threshold */
	float		keep_scale;
	int			group;			/* query heads per key/value head */
} attn_derived;

static inline attn_derived
derive(const tfm_attn_shape *sh)
{
	attn_derived ad;

	ad.scale = sh->scale > 0.0f ? sh->scale : 1.0f / sqrtf((float) sh->s);
	ad.pairs = sh->B * sh->h;
	ad.dropping = sh->p_drop > 0.0f;
	ad.th = drop_threshold(sh->p_drop);
	ad.keep_scale = ad.dropping ? 1.0f / (1.0f - sh->p_drop) : 1.0f;
	ad.group = sh->kvh > 0 ? sh->h / sh->kvh : 1;
	return ad;
}

/* number of keys query r may see (causal), before padding */
static inline int
visible_keys(const tfm_attn_shape *sh, int r)
{
	int			n;

	if (!sh->causal)
		return sh->Tk;
	n = sh->Tk - sh->Tq + r + 1;
	return n > 0 ? n : 0;		/* more queries than keys: the first see none */
}

/* the first key query r may see: its sliding window's start (0 without one) */
static inline int
window_start(const tfm_attn_shape *sh, int r)
{
	int			lo;

	if (!sh->causal || sh->window <= 0)
		return 0;
	lo = sh->Tk - sh->Tq + r - sh->window + 1;
	return lo > 0 ? lo : 0;
}

/*
 * where pair pr (batch b, query head j) starts in the buffers: q and o at
 * head j, k and v at its key/value head j / group, pad at batch b's keys
 */
typedef struct pair_at
{
	size_t		q,
				k,
				v,
				o,
				pad;
} pair_at;

static inline pair_at
pair_offsets(const tfm_attn_shape *sh, const attn_derived *ad, int pr)
{
	int			b = pr / sh->h,
				j = pr % sh->h,
				jk = j / ad->group;
	pair_at		at;

	at.q = (size_t) b * BSQ(sh) + (size_t) j * sh->s;
	at.k = (size_t) b * BSK(sh) + (size_t) jk * sh->s;
	at.v = (size_t) b * BSV(sh) + (size_t) jk * sh->s;
	at.o = (size_t) b * BSO(sh) + (size_t) j * sh->s;
	at.pad = (size_t) b * BSPAD(sh);
	return at;
}

/* D = dropout(P) for n weights starting at index base */
TFM_HOT static void
dropout_weights(float *D, const float *P, size_t n, uint64_t key, size_t base, uint32_t th,
				float keep_scale)
{
	TFM_DROP_LOOP(i, 0, n, key, base, bits, D[i] = bits >= th ? P[i] * keep_scale : 0.0f);
}

/*
 * through dropout, then the softmax's Jacobian.  The mask is read off the
 * dropped weights D (kept where D ≠ 0): where P > 0 that is the mask, and
 * where P = 0 the row's terms are 0 either way.
 */
TFM_HOT static void
softmax_backward_row(float *g, const float *p, const float *d, int Tk, float keep_scale)
{
	float		dot = 0.0f;

	if (d)
		for (int c = 0; c < Tk; c++)
			g[c] = d[c] != 0.0f ? g[c] * keep_scale : 0.0f;
#pragma omp simd reduction(+:dot)
	for (int c = 0; c < Tk; c++)
		dot += g[c] * p[c];
	for (int c = 0; c < Tk; c++)
		g[c] = p[c] * (g[c] - dot);
}

/* the first query that sees key kk (causal): query r sits at position Tk − Tq + r */
static inline int
first_query(const tfm_attn_shape *sh, int kk)
{
	int			q0 = kk - (sh->Tk - sh->Tq);

	return !sh->causal || q0 < 0 ? 0 : q0;
}

/*
 * one pair's softmax rows r0 .. r0+nr-1, whose scores are the nr rows at
 * P (ld apart), then their dropout into the rows at D (as many apart)
 */
static inline void
weights_rows(float *P, float *D, size_t ld, const uint8_t *pad, const tfm_attn_shape *sh,
			 int r0, int nr, size_t base, uint32_t th, float keep_scale, bool lowp, int pr)
{
	const int	Tk = sh->Tk;

	if (sh->bias)
	{
		/* T5: the head's position bias, rows Tk apart */
		const float *hb = sh->bias + (size_t) (pr % sh->h) * sh->Tq * Tk;

		for (int i = 0; i < nr; i++)
		{
			float	   *row = P + (size_t) i * ld;
			const float *br = hb + (size_t) (r0 + i) * Tk;

			for (int j = 0, n = visible_keys(sh, r0 + i); j < n; j++)
				row[j] += br[j];
		}
	}

	if (sh->softcap > 0.0f)
		for (int i = 0; i < nr; i++)
		{
			float	   *row = P + (size_t) i * ld;
			const float c = sh->softcap;

			for (int j = 0, n = visible_keys(sh, r0 + i); j < n; j++)
				row[j] = c * tanhf(row[j] / c);
		}
	for (int i = 0; i < nr; i++)
	{
		/* a sliding window: the softmax over keys lo .. visible, the earlier ones 0 */
		float	   *row = P + (size_t) i * ld;
		int			lo = window_start(sh, r0 + i);

		tfm_attn_softmax_row(row + lo, pad ? pad + lo : NULL, visible_keys(sh, r0 + i) - lo, Tk - lo, lowp);
		if (lo > 0)
			memset(row, 0, sizeof(float) * lo);
	}
	if (sh->p_drop > 0.0f)
		for (int i = 0; i < nr; i++)
			dropout_weights(D + (size_t) i * ld, P + (size_t) i * ld, (size_t) Tk, sh->key,
							base + (size_t) (r0 + i) * Tk, th, keep_scale);
}

void
tfm_attention_forward(float *out, float *probs,
					  const float *q, const float *k, const float *v,
					  const uint8_t *key_pad,
					  const tfm_attn_shape *sh, float *scratch)
{
	const int	Tq = sh->Tq,
				Tk = sh->Tk,
				s = sh->s;
	const attn_derived ad = derive(sh);
	/* a bf16/int8 pass may take the faster softmax; fp32 keeps its bits */
	const bool	lowp = sh->lowp;

#pragma omp parallel for num_threads(tfm_get_threads()) schedule(dynamic, 1)
	for (int pr = 0; pr < ad.pairs; pr++)
	{
		const pair_at at = pair_offsets(sh, &ad, pr);
		const float *qb = q + at.q,
				   *kb = k + at.k,
				   *vb = v + at.v;
		float	   *ob = out + at.o;
		const uint8_t *pad = key_pad ? key_pad + at.pad : NULL;
		float	   *D = scratch + (size_t) omp_get_thread_num() * thread_scratch(sh);
		/* the weights: kept in probs for the backward pass, or one block at a time */
		float	   *P = probs ? probs + (size_t) pr * Tq * Tk : D + (size_t) Tq * Tk;
		const int	rb = fwd_block(sh);
		/* a block's rows Tk apart in probs; in the scratch a line further (L1 sets) */
		const size_t lds = probs || (size_t) rb * (Tk + 16) > (size_t) Tq * Tk ? (size_t) Tk :
			(size_t) Tk + 16;
		const size_t prow = probs ? (size_t) Tk : 0;	/* block r0's offset: r0 · prow */
		size_t		base = (size_t) pr * Tq * Tk;
		const bool	direct = tfm_attn_gemm_ok();
		float	   *pk_buf = D + (size_t) 2 * Tq * Tk,
				   *pv_buf = pk_buf + operand_panels(sh),
				   *blk_buf = pv_buf + operand_panels(sh);
		tfm_panels	pk,
					pv,
					a;

		if (Tq < PANEL_MIN)
		{
			int			nv = visible_keys(sh, Tq - 1);

			/* tfm_gemv_rows: each score a dot product with a key's row, then V's rows added up */
			tfm_gemv_rows(1, true, Tq, nv, s, ad.scale, qb, (int) sh->rsq, kb, (int) sh->rsk, 0.0f, P, Tk);
			weights_rows(P, D, Tk, pad, sh, 0, Tq, base, ad.th, ad.keep_scale, lowp, pr);
			tfm_gemv_rows(1, false, Tq, s, nv, 1.0f, ad.dropping ? D : P, Tk, vb, (int) sh->rsv, 0.0f,
						  ob, (int) sh->rso);
			continue;
		}
		if (direct)
		{
			/* Kᵀ (s × Tk) and V (Tk × s) contiguous: their rows in few cache lines */
			tfm_attn_copy_kv(pk_buf, pv_buf, kb, sh->rsk, vb, sh->rsv, Tk, s);
		}
		else
		{
			pk = tfm_pack_right(pk_buf, s, Tk, kb, 1, sh->rsk);	/* Kᵀ */
			pv = tfm_pack_right(pv_buf, Tk, s, vb, sh->rsv, 1);	/* V */
		}
		for (int r0 = 0; r0 < Tq; r0 += rb)
		{
			int			nr = Tq - r0 < rb ? Tq - r0 : rb,
						nv = visible_keys(sh, r0 + nr - 1);
			float	   *Pb = P + r0 * prow,
					   *Db = D + r0 * prow;
			const float *Pd = ad.dropping ? Db : Pb,
					   *qr = qb + (size_t) r0 * sh->rsq;
			float	   *obr = ob + (size_t) r0 * sh->rso;

			if (direct)
			{
				tfm_attn_gemm(Pb, lds, qr, sh->rsq, 1, nr, s, pk_buf, Tk, nv, ad.scale, false);
				weights_rows(Pb, Db, lds, pad, sh, r0, nr, base, ad.th, ad.keep_scale, lowp, pr);
				tfm_attn_gemm(obr, sh->rso, Pd, lds, 1, nr, nv, pv_buf, s, s, 1.0f, false);
				continue;
			}
			a = tfm_pack_left(blk_buf, nr, s, qr, sh->rsq, 1);
			tfm_gemm_panels(nr, nv, s, ad.scale, &a, 0, &pk, 0, 0.0f, Pb, Tk, 1);
			weights_rows(Pb, Db, Tk, pad, sh, r0, nr, base, ad.th, ad.keep_scale, lowp, pr);
			a = tfm_pack_left(blk_buf, nr, nv, Pd, Tk, 1);
			tfm_gemm_panels(nr, s, nv, 1.0f, &a, 0, &pv, 0, 0.0f, obr, sh->rso, 1);
		}
	}
}

/*
 * dP rows r0 .. r0+nr-1: through dropout (D the dropped weights, or NULL)
 * and the softmax (0 past what a row sees)
 */
static inline void
score_grad_rows(float *dP, const float *P, const float *D, const float *S,
				const tfm_attn_shape *sh, int r0, int nr, float keep_scale)
{
	const int	Tk = sh->Tk;

	for (int r = r0; r < r0 + nr; r++)
	{
		int			n = visible_keys(sh, r);

		softmax_backward_row(dP + (size_t) r * Tk, P + (size_t) r * Tk,
							 D ? D + (size_t) r * Tk : NULL, n, keep_scale);
		if (S)
		{
			/* through the soft cap: S holds the scores before it */
			const float c = sh->softcap;
			float	   *g = dP + (size_t) r * Tk;
			const float *sr = S + (size_t) r * Tk;

			for (int j = 0; j < n; j++)
			{
				float		t = tanhf(sr[j] / c);

				g[j] *= 1.0f - t * t;
			}
		}
		if (n < Tk)
			memset(dP + (size_t) r * Tk + n, 0, sizeof(float) * (Tk - n));
	}
}

void
tfm_attention_backward(float *dq, float *dk, float *dv,
					   const float *dout, const float *probs,
					   const float *q, const float *k, const float *v,
					   const tfm_attn_shape *sh, float *scratch)
{
	const int	Tq = sh->Tq,
				Tk = sh->Tk,
				s = sh->s;
	const attn_derived ad = derive(sh);
	const int	units = ad.pairs / ad.group;

	/*
	 * One unit per (batch, key/value head): the query heads sharing a
	 * key/value head add into the same dK, dV, so they run in turn on one
	 * thread (without grouping, a unit is a pair, as before).
	 */
#pragma omp parallel for num_threads(tfm_get_threads()) schedule(dynamic, 1)
	for (int un = 0; un < units; un++)
	for (int pr = un * ad.group; pr < (un + 1) * ad.group; pr++)
	{
		const pair_at at = pair_offsets(sh, &ad, pr);
		const float *qb = q + at.q,
				   *kb = k + at.k,
				   *vb = v + at.v;
		float	   *dqb = dq ? dq + at.q : NULL,
				   *dkb = dk ? dk + at.k : NULL,
				   *dvb = dv ? dv + at.v : NULL;
		const float *dob = dout + at.o;
		const float *P = probs + (size_t) pr * Tq * Tk;
		float	   *dP = scratch + (size_t) omp_get_thread_num() * thread_scratch(sh);
		float	   *D = dP + (size_t) Tq * Tk;
		const float *Pd = ad.dropping ? D : P;
		/* soft-capped scores: S recomputed into D (no dropout then) */
		const float *S = sh->softcap > 0.0f && !ad.dropping ? D : NULL;
		size_t		base = (size_t) pr * Tq * Tk;
		const int	rb = row_block(sh),
					kbs = key_block(sh);
		const bool	direct = tfm_attn_gemm_ok();
		float	   *op1_buf = D + (size_t) Tq * Tk,
				   *op2_buf = op1_buf + operand_panels(sh),
				   *blk_buf = op2_buf + operand_panels(sh);
		tfm_panels	op1,
					op2,
					a;

		if (ad.dropping)
			dropout_weights(D, P, (size_t) Tq * Tk, sh->key, base, ad.th, ad.keep_scale);
		if (S)
			tfm_gemm_strided(Tq, visible_keys(sh, Tq - 1), s, ad.scale, qb, sh->rsq, 1, kb, 1,
							 sh->rsk, 0.0f, D, Tk, 1);
		if (Tq < PANEL_MIN)
		{
			int			nv = visible_keys(sh, Tq - 1);

			tfm_gemm_strided(Tq, nv, s, 1.0f, dob, sh->rso, 1, vb, 1, sh->rsv, 0.0f, dP, Tk, 1);
			if (dvb)
				tfm_gemm_strided(nv, s, Tq, 1.0f, Pd, 1, Tk, dob, sh->rso, 1,
								 1.0f, dvb, sh->rsv, 1);
			score_grad_rows(dP, P, ad.dropping ? D : NULL, S, sh, 0, Tq, ad.keep_scale);
			if (sh->dscores)
				memcpy(sh->dscores + base, dP, sizeof(float) * Tq * Tk);
			if (dqb)
				tfm_gemm_strided(Tq, s, nv, ad.scale, dP, Tk, 1, kb, sh->rsk, 1,
								 1.0f, dqb, sh->rsq, 1);
			if (dkb)
				tfm_gemm_strided(nv, s, Tq, ad.scale, dP, 1, Tk, qb, sh->rsq, 1,
								 1.0f, dkb, sh->rsk, 1);
			continue;
		}

		/*
		 * The operands every block uses: with AVX-512 made contiguous for
		 * tfm_attn_gemm (which reads the rest in place), else packed for BLIS
		 */
		if (direct)
			tfm_attn_copy_kv(op1_buf, op2_buf, vb, sh->rsv, kb, sh->rsk, Tk, s);	/* Vᵀ, K */
		else
		{
			op1 = tfm_pack_right(op1_buf, s, Tk, vb, 1, sh->rsv);	/* Vᵀ */
			if (dqb)
				op2 = tfm_pack_right(op2_buf, Tk, s, kb, sh->rsk, 1);	/* K */
		}

		/* query blocks: dPd = dO·Vᵀ, then dS, then dQ += dS·K·scale */
		for (int r0 = 0; r0 < Tq; r0 += rb)
		{
			int			nr = Tq - r0 < rb ? Tq - r0 : rb,
						nv = visible_keys(sh, r0 + nr - 1);
			float	   *dPr = dP + (size_t) r0 * Tk;
			const float *dor = dob + (size_t) r0 * sh->rso;

			if (direct)
				tfm_attn_gemm(dPr, Tk, dor, sh->rso, 1, nr, s, op1_buf, Tk, nv, 1.0f, false);
			else
			{
				a = tfm_pack_left(blk_buf, nr, s, dor, sh->rso, 1);
				tfm_gemm_panels(nr, nv, s, 1.0f, &a, 0, &op1, 0, 0.0f, dPr, Tk, 1);
			}
			score_grad_rows(dP, P, ad.dropping ? D : NULL, S, sh, r0, nr, ad.keep_scale);
			if (dqb && direct)
				tfm_attn_gemm(dqb + (size_t) r0 * sh->rsq, sh->rsq, dPr, Tk, 1, nr, nv, op2_buf, s,
							  s, ad.scale, true);
			else if (dqb)
			{
				a = tfm_pack_left(blk_buf, nr, nv, dPr, Tk, 1);
				tfm_gemm_panels(nr, s, nv, ad.scale, &a, 0, &op2, 0, 1.0f,
								dqb + (size_t) r0 * sh->rsq, sh->rsq, 1);
			}
		}

		if (sh->dscores)		/* the scores' gradient, every query block's */
			memcpy(sh->dscores + base, dP, sizeof(float) * Tq * Tk);

		/* key blocks, over the queries that see them: dV += Pdᵀ·dO, dK += dSᵀ·Q·scale */
		if (dvb && direct)
			tfm_attn_copy_rows(op1_buf, dob, sh->rso, Tq, s);	/* dO */
		else if (dvb)
			op1 = tfm_pack_right(op1_buf, Tq, s, dob, sh->rso, 1);
		if (dkb && direct)
			tfm_attn_copy_rows(op2_buf, qb, sh->rsq, Tq, s);	/* Q */
		else if (dkb)
			op2 = tfm_pack_right(op2_buf, Tq, s, qb, sh->rsq, 1);
		for (int k0 = 0; k0 < Tk && (dvb || dkb); k0 += kbs)
		{
			int			nk = Tk - k0 < kbs ? Tk - k0 : kbs,
						q0 = first_query(sh, k0),
						nq = Tq - q0;
			const float *Pdk = Pd + (size_t) q0 * Tk + k0,	/* Pdᵀ, dSᵀ: read down */
					   *dSk = dP + (size_t) q0 * Tk + k0;
			float	   *dvk = dvb ? dvb + (size_t) k0 * sh->rsv : NULL,
					   *dkk = dkb ? dkb + (size_t) k0 * sh->rsk : NULL;

			if (nq <= 0)
				continue;
			if (dvb && direct)
				tfm_attn_gemm(dvk, sh->rsv, Pdk, 1, Tk, nk, nq, op1_buf + (size_t) q0 * s, s, s,
							  1.0f, true);
			else if (dvb)
			{
				a = tfm_pack_left(blk_buf, nk, nq, Pdk, 1, Tk);
				tfm_gemm_panels(nk, s, nq, 1.0f, &a, 0, &op1, q0, 1.0f, dvk, sh->rsv, 1);
			}
			if (dkb && direct)
				tfm_attn_gemm(dkk, sh->rsk, dSk, 1, Tk, nk, nq, op2_buf + (size_t) q0 * s, s, s,
							  ad.scale, true);
			else if (dkb)
			{
				a = tfm_pack_left(blk_buf, nk, nq, dSk, 1, Tk);
				tfm_gemm_panels(nk, s, nq, ad.scale, &a, 0, &op2, q0, 1.0f, dkk, sh->rsk, 1);
			}
		}
	}
}
