/*
 * attention_kernels_avx2.c — attention's blocks (attention_kernels.c) for
 * CPUs with AVX2 + FMA but no AVX-512, 8 lanes where those have 16, giving
 * the same bits as the AVX-512 blocks:
 *
 *   the softmax row of a bf16/int8 pass: the AVX-512 row's two 16-lane
 *   accumulators kept as four 8-lane halves and reduced in the order of
 *   _mm512_reduce_add_ps; e^x by the same reduction and polynomial, 2^n
 *   built in the exponent bits (n ≥ -126 wherever a lane lives, so the
 *   product is vscalefps's, rounding included);
 *
 *   O = alpha·A·B (+O): each output a chain of FMAs over k in order, then
 *   alpha·sum (+O), as BLIS's micro-kernel and the AVX-512 block do.
 *   Blocks of 6 rows × 16 columns (12 accumulators) and 12 rows × 8 for a
 *   last 8 columns or fewer; A broadcast where it lies, B's rows loaded
 *   once per block; partial vectors by vmaskmov (lanes past n never read
 *   nor written).
 *
 * Kᵀ and V are copied by plain loops (tfm_attn_copy_kv_plain): that is
 * T·s values a pair against T·T·s products.  Compiled for AVX2 + FMA by
 * function attribute only; attention_kernels.c calls in only on CPUs with
 * both.
 */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "attention_kernels.h"

#define TARGET __attribute__((target("avx2,fma")))

/* the lanes c0 .. c0+7 of a row that are < n, as vmaskmov's mask */
TARGET static inline __m256i
lanes8(int c0, int n)
{
	const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);

	return _mm256_cmpgt_epi32(_mm256_set1_epi32(n - c0), idx);
}

/* ---- softmax --------------------------------------------------------------- */

/* e^x for 8 lanes: exp16 of attention_kernels.c, lane for lane */
TARGET static inline __m256
exp8(__m256 x)
{
	__m256		live = _mm256_cmp_ps(x, _mm256_set1_ps(-87.3f), _CMP_GE_OQ),
				n,
				r,
				p;
	__m256i		e;

	x = _mm256_min_ps(x, _mm256_set1_ps(88.0f));
	n = _mm256_round_ps(_mm256_fmadd_ps(x, _mm256_set1_ps(1.44269504088896341f),
										_mm256_set1_ps(0.5f)),
						_MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
	r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
	r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
	p = _mm256_set1_ps(1.9875691500e-4f);
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
	p = _mm256_fmadd_ps(_mm256_mul_ps(p, r), r, r);
	p = _mm256_add_ps(p, _mm256_set1_ps(1.0f));
	/* dead lanes may hold any n: their 2^n is masked out below */
	e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
	return _mm256_and_ps(live, _mm256_mul_ps(p, _mm256_castsi256_ps(e)));
}

/* e^(row[c..c+8) - mx) for the lanes < n, 0 in the others; stored back */
TARGET static inline __m256
exp_store8(float *row, int c, int n, __m256 vmx)
{
	__m256i		k = lanes8(c, n);
	__m256		e = _mm256_and_ps(_mm256_castsi256_ps(k),
								  exp8(_mm256_sub_ps(_mm256_maskload_ps(row + c, k), vmx)));

	_mm256_maskstore_ps(row + c, k, e);
	return e;
}

TARGET void
tfm_attn_softmax_row_avx2(float *row, const uint8_t *pad, int n_visible, int Tk)
{
	const __m256 ninf = _mm256_set1_ps(-INFINITY);
	/* the AVX-512 row's accumulators m0, m1, s0, s1 as low (a) and high (b) halves */
	__m256		m = ninf,
				s0a = _mm256_setzero_ps(),
				s0b = _mm256_setzero_ps(),
				s1a = _mm256_setzero_ps(),
				s1b = _mm256_setzero_ps(),
				vmx,
				inv,
				t8;
	__m128		t4;
	float		mx;
	int			c;

	if (pad)
		for (c = 0; c < n_visible; c++)
			row[c] = pad[c] ? -INFINITY : row[c];
	for (c = 0; c < n_visible; c += 8)	/* the maximum is exact in any order */
		m = _mm256_max_ps(m, _mm256_blendv_ps(ninf, _mm256_maskload_ps(row + c, lanes8(c, n_visible)),
											  _mm256_castsi256_ps(lanes8(c, n_visible))));
	t4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
	t4 = _mm_max_ps(t4, _mm_shuffle_ps(t4, t4, _MM_SHUFFLE(1, 0, 3, 2)));
	mx = fmaxf(_mm_cvtss_f32(t4), _mm_cvtss_f32(_mm_shuffle_ps(t4, t4, 1)));
	if (mx == -INFINITY)
	{
		memset(row, 0, sizeof(float) * Tk);
		return;
	}
	vmx = _mm256_set1_ps(mx);
	for (c = 0; c + 32 <= n_visible; c += 32)
	{
		s0a = _mm256_add_ps(s0a, exp_store8(row, c, n_visible, vmx));
		s0b = _mm256_add_ps(s0b, exp_store8(row, c + 8, n_visible, vmx));
		s1a = _mm256_add_ps(s1a, exp_store8(row, c + 16, n_visible, vmx));
		s1b = _mm256_add_ps(s1b, exp_store8(row, c + 24, n_visible, vmx));
	}
	for (; c < n_visible; c += 16)
	{
		s0a = _mm256_add_ps(s0a, exp_store8(row, c, n_visible, vmx));
		s0b = _mm256_add_ps(s0b, exp_store8(row, c + 8, n_visible, vmx));
	}
	/* _mm512_reduce_add_ps(s0 + s1): high half + low half, then 4, 2, 1 */
	t8 = _mm256_add_ps(_mm256_add_ps(s0b, s1b), _mm256_add_ps(s0a, s1a));
	t4 = _mm_add_ps(_mm256_extractf128_ps(t8, 1), _mm256_castps256_ps128(t8));
	t4 = _mm_add_ps(t4, _mm_shuffle_ps(t4, t4, _MM_SHUFFLE(1, 0, 3, 2)));
	inv = _mm256_set1_ps(1.0f / (_mm_cvtss_f32(t4) + _mm_cvtss_f32(_mm_shuffle_ps(t4, t4, 1))));
	for (c = 0; c < n_visible; c += 8)
	{
		__m256i		k = lanes8(c, n_visible);

		_mm256_maskstore_ps(row + c, k, _mm256_mul_ps(_mm256_maskload_ps(row + c, k), inv));
	}
	if (n_visible < Tk)
		memset(row + n_visible, 0, sizeof(float) * (Tk - n_visible));
}

/* ---- small products: O = alpha · A·B (+ O) ---------------------------------- */

/*
 * rows 0 .. m-1 (m ≤ RU) of O, 8·W columns of which the last vector has
 * the lanes `last`: attention_kernels.c's SMALL_GEMM in 8 lanes.
 */
#define SMALL_GEMM8_STEP(RU, W, AV) \
	do { \
		__m256		bk[W]; \
\
		for (int w = 0; w < W - 1; w++) \
			bk[w] = _mm256_loadu_ps(b + (ptrdiff_t) k * ldb + 8 * w); \
		bk[W - 1] = _mm256_maskload_ps(b + (ptrdiff_t) k * ldb + 8 * (W - 1), last); \
		_Pragma("GCC unroll 16") \
		for (int i = 0; i < RU; i++) \
		{ \
			__m256		av = _mm256_set1_ps(AV); \
\
			for (int w = 0; w < W; w++) \
				acc[i][w] = _mm256_fmadd_ps(av, bk[w], acc[i][w]); \
		} \
	} while (0)

#define SMALL_GEMM8(NAME, RU, W) \
TARGET static void \
NAME(float *o, ptrdiff_t ldo, const float *a, ptrdiff_t rsa, ptrdiff_t csa, int m, int nk, \
	 const float *b, ptrdiff_t ldb, __m256i last, float alpha, bool add) \
{ \
	__m256		acc[RU][W]; \
	const float *ar[RU]; \
	const __m256 va = _mm256_set1_ps(alpha); \
	const __m256i all = _mm256_set1_epi32(-1); \
	ptrdiff_t	ak = 0; \
\
	_Pragma("GCC unroll 16") \
	for (int i = 0; i < RU; i++) \
	{ \
		ar[i] = a + (ptrdiff_t) (i < m ? i : m - 1) * rsa; \
		for (int w = 0; w < W; w++) \
			acc[i][w] = _mm256_setzero_ps(); \
	} \
	if (rsa == 1 && m == RU) \
		for (int k = 0; k < nk; k++) \
			SMALL_GEMM8_STEP(RU, W, a[(ptrdiff_t) k * csa + i]); \
	else \
		for (int k = 0; k < nk; k++, ak += csa) \
			SMALL_GEMM8_STEP(RU, W, ar[i][ak]); \
	_Pragma("GCC unroll 16") \
	for (int i = 0; i < RU; i++) \
	{ \
		if (i >= m) \
			break; \
		for (int w = 0; w < W; w++) \
		{ \
			float	   *dst = o + (ptrdiff_t) i * ldo + 8 * w; \
			__m256i		lw = w == W - 1 ? last : all; \
			__m256		v = _mm256_mul_ps(va, acc[i][w]); \
\
			NO_CONTRACT(v); \
			if (add) \
				v = _mm256_add_ps(v, _mm256_maskload_ps(dst, lw)); \
			_mm256_maskstore_ps(dst, lw, v); \
		} \
	} \
}

SMALL_GEMM8(gemm8_rows6_w2, 6, 2)
SMALL_GEMM8(gemm8_rows12_w1, 12, 1)

TARGET void
tfm_attn_gemm_avx2(float *o, ptrdiff_t ldo, const float *a, ptrdiff_t rsa, ptrdiff_t csa, int m,
				   int k, const float *b, ptrdiff_t ldb, int n, float alpha, bool add)
{
	int			j = 0;

	for (; n - j > 8; j += 16)
	{
		__m256i		last = lanes8(8, n - j);

		for (int r = 0; r < m; r += 6)
			gemm8_rows6_w2(o + (ptrdiff_t) r * ldo + j, ldo, a + (ptrdiff_t) r * rsa, rsa, csa,
						   m - r < 6 ? m - r : 6, k, b + j, ldb, last, alpha, add);
	}
	if (j < n)
	{
		__m256i		last = lanes8(0, n - j);

		for (int r = 0; r < m; r += 12)
			gemm8_rows12_w1(o + (ptrdiff_t) r * ldo + j, ldo, a + (ptrdiff_t) r * rsa, rsa, csa,
							m - r < 12 ? m - r : 12, k, b + j, ldb, last, alpha, add);
	}
}

/* kt = kᵀ (s × T) and vc = v (T × s), in blocks of 8 keys (a cache line of kt's rows) */
void
tfm_attn_copy_kv_plain(float *kt, float *vc, const float *k, ptrdiff_t rsk, const float *v,
					   ptrdiff_t rsv, int T, int s)
{
	tfm_attn_copy_rows(vc, v, rsv, T, s);
	for (int t0 = 0; t0 < T; t0 += 8)
	{
		int			nt = T - t0 < 8 ? T - t0 : 8;

		for (int c = 0; c < s; c++)
			for (int t = 0; t < nt; t++)
				kt[(size_t) c * T + t0 + t] = k[(size_t) (t0 + t) * rsk + c];
	}
}
