/*
 * attention_kernels_avx512.c — attention's inner steps in AVX-512 (F, BW,
 * VL, DQ), for attention_kernels.c, which calls in only on CPUs with them:
 *
 *   softmax of one masked row of scores (16 lanes, independent max and
 *   sum accumulators, exp by range reduction and a degree-6 polynomial
 *   with vscalefps: tfm_expf's method, same error bound);
 *
 *   the two products of a block of query rows, S = Q·Kᵀ/√s and O = P·V,
 *   as O = alpha·A·B with B contiguous (Kᵀ and V copied once per pair):
 *   one zmm accumulator per 16 columns of an output row, A broadcast from
 *   its rows in place (Q from the fused buffer, P from the rows the softmax
 *   just wrote: no packing), each row of B loaded once per group of rows.
 *   BLIS's kernel has 12-column panels (a head of 16 wastes a third of its
 *   work there) and wants both operands packed, which at K = 16 costs as
 *   much as the product.
 */
#include <immintrin.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "attention_kernels_avx512.h"
#include "attn_small_gemm.h"
#include "../transpose16.h"
#include "../vecmath.h"

#define TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq")))

/* e^x for 16 lanes: tfm_expf's reduction and polynomial, 0 below -87.3 */
TARGET static inline __m512
exp16(__m512 x)
{
	const __m512 hi = _mm512_set1_ps(88.0f);
	__mmask16	live = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.3f), _CMP_GE_OQ);
	__m512		n,
				r,
				p;

	x = _mm512_min_ps(x, hi);
	n = _mm512_roundscale_ps(_mm512_fmadd_ps(x, _mm512_set1_ps(1.44269504088896341f),
											 _mm512_set1_ps(0.5f)),
							 _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
	r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
	r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
	p = _mm512_set1_ps(1.9875691500e-4f);
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
	p = _mm512_fmadd_ps(_mm512_mul_ps(p, r), r, r);
	p = _mm512_add_ps(p, _mm512_set1_ps(1.0f));
	return _mm512_maskz_scalef_ps(live, p, n);
}

/* the lanes c0 .. c0+15 of a row that are < n */
TARGET static inline __mmask16
lanes(int c0, int n)
{
	int			left = n - c0;

	return left >= 16 ? (__mmask16) 0xFFFF : (__mmask16) ((1u << left) - 1u);
}

TARGET void
tfm_attn_softmax_row_avx512(float *row, const uint8_t *pad, int n_visible, int Tk)
{
	const __m512 ninf = _mm512_set1_ps(-INFINITY);
	__m512		m0 = ninf,
				m1 = ninf,
				s0 = _mm512_setzero_ps(),
				s1 = _mm512_setzero_ps(),
				vmx,
				inv;
	float		mx;
	int			c;

	if (pad)
		for (c = 0; c < n_visible; c += 16)
		{
			__mmask16	k = lanes(c, n_visible);
			__m128i		pb = _mm_maskz_loadu_epi8(k, pad + c);
			__mmask16	masked = _mm_mask_test_epi8_mask(k, pb, pb);

			_mm512_mask_storeu_ps(row + c, masked, ninf);
		}
	for (c = 0; c + 32 <= n_visible; c += 32)
	{
		m0 = _mm512_max_ps(m0, _mm512_loadu_ps(row + c));
		m1 = _mm512_max_ps(m1, _mm512_loadu_ps(row + c + 16));
	}
	for (; c < n_visible; c += 16)
		m0 = _mm512_max_ps(m0, _mm512_mask_loadu_ps(ninf, lanes(c, n_visible), row + c));
	mx = _mm512_reduce_max_ps(_mm512_max_ps(m0, m1));
	if (mx == -INFINITY)
	{
		memset(row, 0, sizeof(float) * Tk);
		return;
	}
	vmx = _mm512_set1_ps(mx);
	for (c = 0; c + 32 <= n_visible; c += 32)
	{
		__m512		e0 = exp16(_mm512_sub_ps(_mm512_loadu_ps(row + c), vmx)),
					e1 = exp16(_mm512_sub_ps(_mm512_loadu_ps(row + c + 16), vmx));

		_mm512_storeu_ps(row + c, e0);
		_mm512_storeu_ps(row + c + 16, e1);
		s0 = _mm512_add_ps(s0, e0);
		s1 = _mm512_add_ps(s1, e1);
	}
	for (; c < n_visible; c += 16)
	{
		__mmask16	k = lanes(c, n_visible);
		__m512		e = _mm512_maskz_mov_ps(k, exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, row + c),
																  vmx)));

		_mm512_mask_storeu_ps(row + c, k, e);
		s0 = _mm512_add_ps(s0, e);
	}
	inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(_mm512_add_ps(s0, s1)));
	for (c = 0; c < n_visible; c += 16)
	{
		__mmask16	k = lanes(c, n_visible);

		_mm512_mask_storeu_ps(row + c, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, row + c), inv));
	}
	if (n_visible < Tk)
		memset(row + n_visible, 0, sizeof(float) * (Tk - n_visible));
}


/* ---- small products: O = alpha · A·B (+ O) ---------------------------------- */

/*
 * rows 0 .. m-1 (m ≤ RU) of O, 16·W columns of which the last vector has
 * the lanes `last`: RU·W accumulators; A[i][k] at a[i·rsa + k·csa] is
 * broadcast from where it lies (rows past m repeat the last one and are
 * not stored), each row of B loaded once per group of rows.  add: O +=.
 */
/* one step k of the sums: row k of B against the RU values A_ik (AV, in i) */
#define SMALL_GEMM_STEP(RU, W, AV) \
	do { \
		__m512		bk[W]; \
\
		for (int w = 0; w < W - 1; w++) \
			bk[w] = _mm512_loadu_ps(b + (ptrdiff_t) k * ldb + 16 * w); \
		bk[W - 1] = _mm512_maskz_loadu_ps(last, b + (ptrdiff_t) k * ldb + 16 * (W - 1)); \
		_Pragma("GCC unroll 16") \
		for (int i = 0; i < RU; i++) \
		{ \
			__m512		av = _mm512_set1_ps(AV); \
\
			for (int w = 0; w < W; w++) \
				acc[i][w] = _mm512_fmadd_ps(av, bk[w], acc[i][w]); \
		} \
	} while (0)

/* a finished vector w of row i: masked where it is the last */
#define SMALL_GEMM_STORE(dst, w, W, v) \
	do { \
		__mmask16	lw = (w) == (W) - 1 ? last : (__mmask16) 0xFFFF; \
\
		if (add) \
			v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(lw, dst)); \
		_mm512_mask_storeu_ps(dst, lw, v); \
	} while (0)

#define SMALL_GEMM(NAME, RU, W) \
	ATTN_SMALL_GEMM(NAME, RU, W, 16, __m512, _mm512_setzero_ps, _mm512_set1_ps, _mm512_mul_ps, \
					SMALL_GEMM_STEP, SMALL_GEMM_STORE, __mmask16 last)

SMALL_GEMM(gemm_rows16_w1, 16, 1)
SMALL_GEMM(gemm_rows12_w2, 12, 2)

/* kt (s × T, rows T apart) = kᵀ: k's rows rsk apart */
TARGET void
tfm_attn_copy_kt_avx512(float *kt, const float *k, ptrdiff_t rsk, int T, int s)
{
	for (int t0 = 0; t0 < T; t0 += 16)
	{
		int			nt = T - t0 < 16 ? T - t0 : 16;
		__mmask16	tm = lanes(0, nt);

		for (int c0 = 0; c0 < s; c0 += 16)
		{
			__mmask16	cm = lanes(c0, s);
			int			nc = s - c0 < 16 ? s - c0 : 16;
			__m512i		x[16];

			for (int i = 0; i < 16; i++)
				x[i] = i < nt ? _mm512_maskz_loadu_epi32(cm, k + (size_t) (t0 + i) * rsk + c0) :
					_mm512_setzero_si512();
			transpose16(x);
			for (int c = 0; c < nc; c++)
				_mm512_mask_storeu_epi32(kt + (size_t) (c0 + c) * T + t0, tm, x[c]);
		}
	}
}

void
tfm_attn_gemm_avx512(float *o, ptrdiff_t ldo, const float *a, ptrdiff_t rsa, ptrdiff_t csa,
					 int m, int k, const float *b, ptrdiff_t ldb, int n, float alpha, bool add)
{
	int			j = 0;

	for (; n - j > 16; j += 32)
	{
		__mmask16	last = n - j >= 32 ? (__mmask16) 0xFFFF : (__mmask16) ((1u << (n - j - 16)) - 1u);

		for (int r = 0; r < m; r += 12)
			gemm_rows12_w2(o + (ptrdiff_t) r * ldo + j, ldo, a + (ptrdiff_t) r * rsa, rsa, csa,
						   m - r < 12 ? m - r : 12, k, b + j, ldb, last, alpha, add);
	}
	if (j < n)
	{
		__mmask16	last = lanes(0, n - j);

		for (int r = 0; r < m; r += 16)
			gemm_rows16_w1(o + (ptrdiff_t) r * ldo + j, ldo, a + (ptrdiff_t) r * rsa, rsa, csa,
						   m - r < 16 ? m - r : 16, k, b + j, ldb, last, alpha, add);
	}
}
