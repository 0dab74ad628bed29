/*
 * test_lowp_int4.c — the int4 products (include/tfm/lowp.h: GGUF Q4_0
 * weights).
 *
 * fp16: every half back and forth; fp32 → fp16 against a definition in
 * double (nearer neighbour, ties to even) on random bit patterns, and fixed
 * cases (ties, overflow, subnormals, NaN, ±inf).
 *
 * Packing: blocks against ggml's quantize_row_q4_0_ref transcribed here
 * (the scale and every nibble, byte for byte), on hand-made and random
 * blocks; W packed from (in, out) and from (out, in) the same bytes;
 * K padded to 32 with zeros; every weight within half a step of its value
 * (a whole step where Q4_0 clips: the far end of the block's range).
 *
 * Products, each on every path this CPU has (AVX512_VNNI, AVX2 + FMA +
 * F16C forced, the fallback forced): M ≤ 4 (the matrix-vector path)
 * against an fp64 sum of the quantized weights and activations within
 * 2^-20 relative, the paths bit for bit equal; M > 4 on AVX512_VNNI and
 * AVX2 (A quantized too, the same kernels) the same way, each row bit for
 * bit its own product alone on the fallback; M > 4 on the fallback (fp32
 * tiles and BLIS) against an fp64 sum of the dequantized weights and A itself,
 * within an fp32 sum's bound; a layout test of the interleaved blocks;
 * leading dimensions larger than the rows, alpha ≠ 1,
 * beta 0 (C full of NaN, never read) and 1, C outside the product
 * untouched, K = 0.  And the error against the fp32 product of the
 * unquantized inputs on Gaussian data, stated and bounded.  With
 * TFM_LOWP_FORCE=fallback or =avx2 the "fast" path is that one.
 */
#include <float.h>

#include "check.h"
#include "tfm/blas.h"
#include "tfm/lowp.h"
#include "tfm/rng.h"

static tfm_rng rng;

/* ---- fp16 ------------------------------------------------------------------ */

/* fp16 by its definition: the nearest half (ties to even); NaN aside */
static uint16_t
fp16_by_definition(float f)
{
	double		x = fabs((double) f),
				best = -1.0;
	uint16_t	sign = signbit(f) ? 0x8000 : 0,
				h = 0;
	int			e;

	if (x >= 65520.0)
		return sign | 0x7C00;
	/* the two candidates around x: the half grid has step 2^(e-10) for x in [2^e, 2^(e+1)) */
	e = x < ldexp(1.0, -14) ? -14 : ilogb(x);
	{
		double		step = ldexp(1.0, e - 10),
					lo = floor(x / step) * step,
					hi = lo + step;

		best = x - lo < hi - x ? lo : hi - x < x - lo ? hi :
			fmod(lo / step, 2.0) == 0.0 ? lo : hi;
	}
	/* the half of value best */
	if (best < ldexp(1.0, -14))
		h = (uint16_t) (best / ldexp(1.0, -24));
	else
	{
		int			be = ilogb(best);

		h = (uint16_t) ((be + 15) << 10 | (int) (best / ldexp(1.0, be - 10) - 1024.0));
	}
	return sign | h;
}

static void
test_fp16(void)
{
	int			bad = 0;

	for (uint32_t h = 0; h < 65536; h++)
	{
		float		f = tfm_fp16_to_float((uint16_t) h);

		if ((h & 0x7C00) == 0x7C00 && (h & 0x3FF))
			bad += !isnan(f) || (tfm_fp16_from_float(f) & 0x7E00) != 0x7E00;
		else
			bad += tfm_fp16_from_float(f) != h;
	}
	CHECK(bad == 0, "fp16: %d halves not back where they were", bad);
	bad = 0;
	for (int i = 0; i < 1000000; i++)
	{
		/* exponents around the half range, random mantissas */
		uint32_t	u = (uint32_t) tfm_rng_next(&rng);
		float		f = bits_f((u & 0x807FFFFFu) | (uint32_t) (100 + tfm_rng_below(&rng, 45)) << 23);

		bad += tfm_fp16_from_float(f) != fp16_by_definition(f);
	}
	CHECK(bad == 0, "fp16: %d of a million random floats rounded unlike the definition", bad);
	CHECK(tfm_fp16_from_float(1.0f) == 0x3C00 && tfm_fp16_from_float(-2.0f) == 0xC000,
		  "fp16 of 1 and -2");
	CHECK(tfm_fp16_from_float(1.0f + 1.0f / 2048) == 0x3C00, "a tie to even, down");
	CHECK(tfm_fp16_from_float(1.0f + 3.0f / 2048) == 0x3C02, "a tie to even, up");
	CHECK(tfm_fp16_from_float(65504.0f) == 0x7BFF && tfm_fp16_from_float(65519.99f) == 0x7BFF &&
		  tfm_fp16_from_float(65520.0f) == 0x7C00 && tfm_fp16_from_float(-1e9f) == 0xFC00,
		  "the largest half and overflow to inf");
	CHECK(tfm_fp16_from_float(5.9604645e-8f) == 0x0001 && tfm_fp16_from_float(2.9802322e-8f) == 0 &&
		  tfm_fp16_from_float(6.103515625e-05f) == 0x0400, "subnormals");
	CHECK(tfm_fp16_from_float(INFINITY) == 0x7C00 && (tfm_fp16_from_float(NAN) & 0x7E00) == 0x7E00,
		  "inf and NaN");
}

/* ---- Q4_0 blocks ----------------------------------------------------------- */

/* ggml's quantize_row_q4_0_ref for one block, transcribed */
static void
ggml_q4_0(uint8_t *blk, const float *x)
{
	float		amax = 0.0f,
				max = 0.0f;

	for (int j = 0; j < 32; j++)
		if (amax < fabsf(x[j]))
		{
			amax = fabsf(x[j]);
			max = x[j];
		}
	{
		const float d = max / -8;
		const float id = d ? 1.0f / d : 0.0f;
		uint16_t	h = tfm_fp16_from_float(d);

		memcpy(blk, &h, 2);
		for (int j = 0; j < 16; ++j)
		{
			const float x0 = x[0 + j] * id;
			const float x1 = x[16 + j] * id;
			const uint8_t xi0 = (uint8_t) fminf(15, (int8_t) (x0 + 8.5f));
			const uint8_t xi1 = (uint8_t) fminf(15, (int8_t) (x1 + 8.5f));

			blk[2 + j] = xi0 | (uint8_t) (xi1 << 4);
		}
	}
}

static void
test_blocks(void)
{
	float		x[32];
	uint8_t		want[18];
	tfm_int4_weights w;
	void	   *buf = alloc64(tfm_int4_pack_bytes(32, 1));
	int			bad = 0;

	/* 0, 1, ..., 31 scaled: max 31 → d = -31/8, q = round(x/d + 8) */
	for (int t = 0; t < 32; t++)
		x[t] = (float) t;
	tfm_int4_pack(&w, buf, x, 1, 1, 32, 1);
	CHECK(w.kb == 1 && w.K == 32 && w.N == 1, "one block");
	{
		uint16_t	h;
		uint8_t		blk[18];

		tfm_int4_get_block(&w, 0, 0, blk);
		memcpy(&h, blk, 2);
		CHECK(h == tfm_fp16_from_float(-31.0f / 8.0f), "d = max / -8 as fp16: %04x", h);
		CHECK((blk[2] & 0x0F) == 8 && (blk[2 + 15] >> 4) == 0,
			  "element 0 is q 8 (zero), element 31 q 0 (-8·d = 31)");
		CHECK(tfm_int4_weight(&w, 31, 0) == tfm_fp16_to_float(h) * -8.0f, "element 31 dequantized");
	}
	for (int i = 0; i < 20000; i++)
	{
		float		s = i % 3 == 0 ? 1e-3f : i % 3 == 1 ? 1.0f : 300.0f;

		for (int t = 0; t < 32; t++)
			x[t] = s * tfm_rng_normal(&rng);
		if (i % 10 == 1)
			x[i % 32] = 0.0f;
		if (i % 50 == 2)
			memset(x, 0, sizeof(x));
		uint8_t		got[18];

		ggml_q4_0(want, x);
		tfm_int4_pack(&w, buf, x, 1, 1, 32, 1);
		tfm_int4_get_block(&w, 0, 0, got);
		bad += memcmp(want, got, 18) != 0;
	}
	CHECK(bad == 0, "%d of 20000 blocks unlike ggml's Q4_0", bad);
	free(buf);
}

/*
 * The interleaved layout as include/tfm/lowp.h states it: block b of
 * column j (group g = j / 16, lane l = j % 16) has its nibble byte t at
 * data[(g·kb + b)·256 + 64·(t / 4) + 4·l + t % 4] and its scale at
 * scales[(g·kb + b)·16 + l]; tfm_int4_get_block reads back what
 * tfm_int4_put_block wrote; the padding columns of a pack are zeros.
 */
static void
test_layout(void)
{
	const int	K = 96,
				N = 37;
	size_t		bytes = tfm_int4_pack_bytes(K, N);
	uint8_t    *buf = alloc64(bytes),
				blk[18],
				got[18];
	float	   *W = malloc(sizeof(float) * K * N);
	tfm_int4_weights w;
	int			bad = 0,
				moved = 0;

	memset(buf, 0xA5, bytes);
	tfm_int4_view(&w, buf, K, N);
	CHECK(w.kb == 3 && w.groups == 3 && (uint8_t *) w.scales == buf + 3 * 3 * 256 &&
		  bytes >= 3 * 3 * (256 + 32), "layout of 96x37: kb %d, groups %d", w.kb, w.groups);
	for (int j = 0; j < N; j++)
		for (int b = 0; b < w.kb; b++)
		{
			size_t		gb = (size_t) (j / 16) * w.kb + b;

			for (int t = 0; t < 18; t++)
				blk[t] = (uint8_t) (j * 7 + b * 31 + t * 13);
			tfm_int4_put_block(&w, j, b, blk);
			for (int t = 0; t < 16; t++)
				moved += buf[gb * 256 + 64 * (t / 4) + 4 * (j % 16) + t % 4] != blk[2 + t];
			moved += memcmp(&w.scales[gb * 16 + j % 16], blk, 2) != 0;
			tfm_int4_get_block(&w, j, b, got);
			bad += memcmp(blk, got, 18) != 0;
		}
	CHECK(moved == 0, "%d bytes not where the layout puts them", moved);
	CHECK(bad == 0, "%d blocks not read back as written", bad);
	for (int i = 0; i < K * N; i++)
		W[i] = tfm_rng_normal(&rng);
	tfm_int4_pack(&w, buf, W, N, 1, K, N);
	bad = 0;
	for (int j = N; j < 48; j++)
		for (int b = 0; b < w.kb; b++)
		{
			tfm_int4_get_block(&w, j, b, got);
			for (int t = 0; t < 18; t++)
				bad += got[t] != 0;
		}
	CHECK(bad == 0, "%d bytes of the padding columns not zero", bad);
	free(W);
	free(buf);
}

/* (in, out) and (out, in) the same bytes; K padded with zeros; every weight within half a step */
static void
test_pack(int K, int N)
{
	float	   *W = malloc(sizeof(float) * K * N),
			   *Wt = malloc(sizeof(float) * K * N);
	size_t		bytes = tfm_int4_pack_bytes(K, N);
	void	   *b1 = alloc64(bytes),
			   *b2 = alloc64(bytes);
	tfm_int4_weights w1,
				w2;
	int			bad = 0;

	for (int k = 0; k < K; k++)
		for (int j = 0; j < N; j++)
			Wt[(size_t) j * K + k] = W[(size_t) k * N + j] = tfm_rng_normal(&rng);
	tfm_int4_pack(&w1, b1, W, N, 1, K, N);
	tfm_int4_pack(&w2, b2, Wt, 1, K, K, N);
	CHECK(memcmp(w1.data, w2.data, bytes) == 0,
		  "int4 blocks of (in, out) and (out, in) differ, %dx%d", K, N);
	CHECK(w1.kb == (K + 31) / 32 && w1.groups == (N + 15) / 16 &&
		  bytes >= (size_t) w1.groups * 16 * w1.kb * 18 && bytes % 64 == 0,
		  "%dx%d: %d blocks a row, %zu bytes", K, N, w1.kb, bytes);
	for (int j = 0; j < N; j++)
	{
		for (int b = 0; b < w1.kb; b++)
		{
			uint16_t	h;
			float		d;
			uint8_t		blk[18];

			tfm_int4_get_block(&w1, j, b, blk);
			memcpy(&h, blk, 2);
			d = tfm_fp16_to_float(h);
			for (int t = 0; t < 32; t++)
			{
				int			k = 32 * b + t;
				float		v = tfm_int4_weight(&w1, k, j);
				/* q = 15 (7·d) is also where values down to −8·d clip: a whole step;
				 * d's rounding to fp16 moves a value by up to 8·2^-11 steps */
				bool		clipped = d != 0.0f && lrintf(v / d) == 7;

				if (k >= K)
					bad += v != 0.0f;
				else
					bad += fabsf(v - W[(size_t) k * N + j]) >
						fabsf(d) * ((clipped ? 1.0f : 0.5f) + 0.005f);
			}
		}
	}
	CHECK(bad == 0, "int4 %dx%d: %d weights not within half a step (or padding not zero)", K, N, bad);
	free(W);
	free(Wt);
	free(b1);
	free(b2);
}

static void
test_quantize_row(void)
{
	float		x[40],
				d[2];
	int8_t		q[64];

	for (int t = 0; t < 40; t++)
		x[t] = (float) (t - 20) * 0.5f;
	x[3] = -12.7f;
	tfm_int4_quantize_row(q, d, x, 40);
	CHECK(d[0] == 12.7f / 127.0f && q[3] == -127 && q[20] == 0, "block 0: d %g, q %d %d", d[0], q[3], q[20]);
	CHECK(d[1] == 9.5f / 127.0f && q[39] == 127 && q[40] == 0 && q[63] == 0,
		  "block 1 (8 values, zeros after): d %g q %d %d", d[1], q[39], q[40]);
	for (int t = 32; t < 40; t++)
		x[t] = 0.0f;
	tfm_int4_quantize_row(q, d, x, 40);
	CHECK(d[1] == 0.0f && q[35] == 0, "a zero block: scale 0, q 0");
}

/* ---- products -------------------------------------------------------------- */

typedef struct problem
{
	int			M,
				N,
				K;
	ptrdiff_t	lda,
				ldc;
	float		alpha,
				beta;
	float	   *A,
			   *W,
			   *C0;				/* C before the product (the guard outside it too) */
} problem;

static void
problem_make(problem *p, int M, int N, int K, int pad, float alpha, float beta)
{
	p->M = M;
	p->N = N;
	p->K = K;
	p->lda = K + pad;
	p->ldc = N + 2 * pad;
	p->alpha = alpha;
	p->beta = beta;
	p->A = malloc(sizeof(float) * (M * p->lda + 1));
	p->W = malloc(sizeof(float) * (K * N + 1));
	p->C0 = malloc(sizeof(float) * (M * p->ldc + 1));
	for (ptrdiff_t i = 0; i < M * p->lda; i++)
		p->A[i] = tfm_rng_normal(&rng);
	for (int i = 0; i < K * N; i++)
		p->W[i] = 0.1f * tfm_rng_normal(&rng);
	for (ptrdiff_t i = 0; i < M * p->ldc; i++)
		p->C0[i] = beta == 0.0f && i % p->ldc < N ? NAN : tfm_rng_normal(&rng);
}

static void
problem_free(problem *p)
{
	free(p->A);
	free(p->W);
	free(p->C0);
}

/* C of the product on the current path */
static float *
run(const problem *p, const tfm_int4_weights *w)
{
	float	   *C = malloc(sizeof(float) * (p->M * p->ldc + 1));
	void	   *work = alloc64(tfm_int4_work_bytes(p->M, p->K));

	memcpy(C, p->C0, sizeof(float) * p->M * p->ldc);
	tfm_int4_gemm(p->M, p->N, p->K, p->alpha, p->A, p->lda, w, p->beta, C, p->ldc, work);
	free(work);
	return C;
}

/*
 * C against fp64 sums: quantized (M ≤ 4, or any M on AVX512_VNNI), of the
 * quantized values (relative 2^-20 of Σ|terms|); else of the dequantized
 * weights and A ((K + 8)·2^-24 of it)
 */
static void
check_against_ref(const problem *p, const tfm_int4_weights *w, const float *C, const char *path,
				  bool quantized)
{
	int			kb = w->kb,
				bad = 0,
				outside = 0;
	int8_t	   *q = malloc((size_t) kb * 32);
	float	   *d = malloc(sizeof(float) * kb);

	for (int i = 0; i < p->M; i++)
	{
		const float *a = p->A + (size_t) i * p->lda;

		tfm_int4_quantize_row(q, d, a, p->K);
		for (int j = 0; j < p->N; j++)
		{
			double		sum = 0.0,
						mag = 0.0,
						ref,
						tol;

			for (int k = 0; k < p->K; k++)
			{
				double		t = quantized ?
					(double) tfm_int4_weight(w, k, j) * q[k] * d[k / 32] :
					(double) tfm_int4_weight(w, k, j) * a[k];

				sum += t;
				mag += fabs(t);
			}
			ref = p->alpha * sum;
			tol = fabs(p->alpha) * mag;
			if (p->beta != 0.0f)
			{
				ref += (double) p->beta * p->C0[(size_t) i * p->ldc + j];
				tol += fabs((double) p->beta * p->C0[(size_t) i * p->ldc + j]);
			}
			tol *= quantized ? ldexp(1.0, -20) : (p->K + 8) * ldexp(1.0, -24);
			if (!(fabs(C[(size_t) i * p->ldc + j] - ref) <= tol + 1e-30))
			{
				if (bad < 3)
					fprintf(stderr, "  [%d][%d] got %.9g want %.9g (tol %.3g)\n", i, j,
							C[(size_t) i * p->ldc + j], ref, tol);
				bad++;
			}
		}
		for (ptrdiff_t j = p->N; j < p->ldc; j++)
			outside += memcmp(&C[(size_t) i * p->ldc + j], &p->C0[(size_t) i * p->ldc + j], 4) != 0;
	}
	CHECK(bad == 0, "int4 %s %dx%dx%d lda %td ldc %td alpha %g beta %g: %d elements off",
		  path, p->M, p->N, p->K, p->lda, p->ldc, p->alpha, p->beta, bad);
	CHECK(outside == 0, "int4 %s %dx%dx%d wrote outside C's product", path, p->M, p->N, p->K);
	free(q);
	free(d);
}

/*
 * the SIMD paths this CPU has beside the fallback: [0] its best
 * (avx512vnni, avx2, neon-dotprod or neon), [1] the one below it
 * (tfm_lowp_force_avx2: avx2 or neon), each tested where present
 */
static const char *paths[2];
static bool has[2];

/*
 * Row i of p's product alone (M = 1: the quantized path everywhere), on
 * the current path, into out (ldc floats)
 */
static void
run_row(const problem *p, const tfm_int4_weights *w, int i, float *out)
{
	void	   *work = alloc64(tfm_int4_work_bytes(1, p->K));

	memcpy(out, p->C0 + (size_t) i * p->ldc, sizeof(float) * p->ldc);
	tfm_int4_gemm(1, p->N, p->K, p->alpha, p->A + (size_t) i * p->lda, p->lda, w, p->beta, out, p->ldc,
				  work);
	free(work);
}

/*
 * one shape on each path; the quantized products' results bit for bit
 * equal: the matrix-vector path's on every path, and on the SIMD paths every
 * row of a larger product equal to that row's product alone on the
 * fallback (a row's result does not depend on the rows beside it)
 */
static void
check_shape(int M, int N, int K, int pad, float alpha, float beta)
{
	problem		p;
	tfm_int4_weights w;
	void	   *buf = alloc64(tfm_int4_pack_bytes(K, N));
	float	   *cf,
			   *cp;

	problem_make(&p, M, N, K, pad, alpha, beta);
	tfm_int4_pack(&w, buf, p.W, N, 1, K, N);
	tfm_lowp_force_fallback(true);
	cf = run(&p, &w);
	tfm_lowp_force_fallback(false);
	check_against_ref(&p, &w, cf, "fallback", M <= TFM_LOWP_GEMV_ROWS);
	for (int path = 0; path < 2; path++)
	{
		if (!has[path])
			continue;
		tfm_lowp_force_avx2(path == 1);
		cp = run(&p, &w);
		tfm_lowp_force_avx2(false);
		check_against_ref(&p, &w, cp, paths[path], true);
		if (M <= TFM_LOWP_GEMV_ROWS)
			CHECK(memcmp(cf, cp, sizeof(float) * M * p.ldc) == 0,
				  "int4 %s and fallback differ, %dx%dx%d", paths[path], M, N, K);
		else
		{
			float	   *row = malloc(sizeof(float) * p.ldc);
			int			differ = 0;

			tfm_lowp_force_fallback(true);
			for (int i = 0; i < M; i++)
			{
				run_row(&p, &w, i, row);
				differ += memcmp(row, cp + (size_t) i * p.ldc, sizeof(float) * N) != 0;
			}
			tfm_lowp_force_fallback(false);
			CHECK(differ == 0, "int4 %s %dx%dx%d: %d rows unlike their own products on the fallback",
				  paths[path], M, N, K, differ);
			free(row);
		}
		free(cp);
	}
	free(cf);
	free(buf);
	problem_free(&p);
}

/* the error against the fp32 product of the unquantized inputs, stated */
static void
test_error(int M)
{
	problem		p;
	tfm_int4_weights w;
	void	   *buf;
	float	   *C;
	double		num = 0.0,
				den = 0.0;

	problem_make(&p, M, 768, 768, 0, 1.0f, 0.0f);
	buf = alloc64(tfm_int4_pack_bytes(768, 768));
	tfm_int4_pack(&w, buf, p.W, 768, 1, 768, 768);
	C = run(&p, &w);
	for (int i = 0; i < M; i++)
		for (int j = 0; j < 768; j++)
		{
			double		s = 0.0;

			for (int k = 0; k < 768; k++)
				s += (double) p.A[(size_t) i * 768 + k] * p.W[(size_t) k * 768 + j];
			num += (C[(size_t) i * 768 + j] - s) * (C[(size_t) i * 768 + j] - s);
			den += s * s;
		}
	printf("  int4 %s, Gaussian %dx768x768: relative Frobenius error against fp32 %.4f\n",
		   tfm_lowp_int4_kernel(), M, sqrt(num / den));
	/* Q4_0 of Gaussian weights: a step of max|w|/8 ≈ 0.27σ, an error of ≈ 0.08 */
	CHECK(sqrt(num / den) < 0.12, "int4 %dx768x768: relative error against fp32 %.4f (bound 0.12)",
		  M, sqrt(num / den));
	free(C);
	free(buf);
	problem_free(&p);
}

static void
test_edges(void)
{
	tfm_int4_weights w;
	float		W[64] = {1.0f},
				a[4] = {1.0f, 2.0f, 3.0f, 4.0f},
				c[2] = {1.0f, 2.0f};
	void	   *buf = alloc64(tfm_int4_pack_bytes(1, 2)),
			   *work = alloc64(tfm_int4_work_bytes(1, 1));

	tfm_int4_pack(&w, buf, W, 2, 1, 0, 2);
	tfm_int4_gemm(1, 2, 0, 1.0f, a, 1, &w, 2.0f, c, 2, work);
	CHECK(c[0] == 2.0f && c[1] == 4.0f, "int4 K = 0, beta 2: %g %g", c[0], c[1]);
	tfm_int4_gemm(0, 2, 4, 1.0f, a, 1, &w, 2.0f, c, 2, work);
	CHECK(c[0] == 2.0f && c[1] == 4.0f, "int4 M = 0 leaves C");
	/* one weight 1 → d = -1/8, q 0: exactly 1; a = 3 → r = 3/127, q 127 */
	W[0] = 1.0f;
	W[1] = 0.0f;
	tfm_int4_pack(&w, buf, W, 2, 1, 1, 2);
	tfm_int4_gemm(1, 2, 1, 1.0f, a + 2, 1, &w, 0.0f, c, 2, work);
	CHECK(c[0] == 3.0f && c[1] == 0.0f, "int4 1x2x1: %g %g", c[0], c[1]);
	free(buf);
	free(work);
}

int
main(void)
{
	static const int ms[] = {1, 2, 3, 4, 5, 13};
	static const int ns[] = {1, 2, 3, 15, 16, 17, 33};
	static const int ks[] = {1, 31, 32, 33, 64, 100};
	const char *force = getenv("TFM_LOWP_FORCE");
	int			v = 0;

	tfm_rng_seed(&rng, 26);
	/* the paths this CPU has, beside the fallback (valgrind: the fallback only) */
	paths[0] = tfm_lowp_int4_kernel();
	tfm_lowp_force_avx2(true);
	paths[1] = tfm_lowp_int4_kernel();
	tfm_lowp_force_avx2(false);
	has[0] = strcmp(paths[0], "fallback") != 0 && !quick_mode();
	has[1] = strcmp(paths[1], "fallback") != 0 && strcmp(paths[1], paths[0]) != 0 && !quick_mode();
	printf("  %s\n  int4 kernel %s; paths tested: %s%s%s%sfallback\n", tfm_lowp_reason(),
		   tfm_lowp_int4_kernel(), has[0] ? paths[0] : "", has[0] ? ", " : "",
		   has[1] ? paths[1] : "", has[1] ? ", " : "");
	if (force && strcmp(force, "fallback") == 0)
		CHECK(strcmp(tfm_lowp_int4_kernel(), "fallback") == 0 && !has[0] && !has[1],
			  "TFM_LOWP_FORCE=fallback: int4 runs %s", tfm_lowp_int4_kernel());
	if (force && (strcmp(force, "avx2") == 0 || strcmp(force, "neon") == 0))
		CHECK(strcmp(tfm_lowp_int4_kernel(), "avx512vnni") != 0 &&
			  strcmp(tfm_lowp_int4_kernel(), "neon-dotprod") != 0 && !has[1],
			  "TFM_LOWP_FORCE=%s: int4 runs %s", force, tfm_lowp_int4_kernel());

	test_fp16();
	test_blocks();
	test_layout();
	test_pack(32, 3);
	test_pack(37, 70);
	test_pack(100, 1);
	test_quantize_row();
	test_edges();
	for (int a = 0; a < (int) (sizeof(ms) / sizeof(ms[0])); a++)
		for (int b = 0; b < (int) (sizeof(ns) / sizeof(ns[0])); b++)
			for (int c = 0; c < (int) (sizeof(ks) / sizeof(ks[0])); c++, v++)
			{
				if (quick_mode() && v % 7 != 0)
					continue;
				check_shape(ms[a], ns[b], ks[c], v % 3, v % 4 == 1 ? -0.5f : 1.0f,
							v % 2 ? 1.0f : 0.0f);
			}
	if (!quick_mode())
		tfm_set_threads(2);
	check_shape(1, 2304, 768, 0, 1.0f, 0.0f);
	check_shape(4, 333, 1001, 5, 1.0f, 1.0f);
	check_shape(97, 300, 800, 3, 0.5f, 1.0f);
	check_shape(130, 37, 96, 2, 1.0f, 0.0f);	/* three chunks of rows, the last of 2 */
	if (!quick_mode())
	{
		check_shape(3, 3072, 768, 0, 1.0f, 1.0f);
		check_shape(2, 768, 3072, 0, 1.0f, 0.0f);
		check_shape(40, 1030, 200, 1, 1.0f, 0.0f);	/* several weight tiles */
		check_shape(8, 20, 9000, 0, 1.0f, 1.0f);	/* K past a tile's 131072 floats / 16 */
	}
	test_error(1);
	test_error(32);
	return check_summary("test_lowp_int4");
}
