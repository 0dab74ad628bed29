/*
 * test_kquant.c — GGUF's Q4_K, Q5_K, Q6_K and Q8_0 blocks run as they are
 * (include/tfm/kquant.h): the activation quantizers on fixed rows (ties,
 * signs, bsums) against values worked by hand from ggml's definitions; the
 * reference dot products against ggml's generic vec_dot_* transcribed here
 * in its own form (aux8 unpacking, the kmask decoding of the scales) on
 * fixed blocks where every float is exact, against the file's dequantized
 * weights times the dequantized activations in fp64, and within the
 * activations' quantization bound of the unquantized dot; and the AVX2
 * path bit for bit equal to the reference on random blocks, including
 * extreme ones (all nibbles 15, scales 63, −128 weights); the product of
 * rows with a matrix of blocks (tfm_kq_gemm) equal to the row-by-row dots
 * at 1 and 2 threads, alpha and beta applied, and within the bound of the
 * dequantized fp32 product.
 */
#include <math.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "tfm/gguf.h"
#include "tfm/gguf_quants.h"
#include "tfm/kquant.h"
#include "tfm/lowp.h"
#include "tfm/safetensors.h"

#if defined(__x86_64__)
float		kq_dot_avx2(uint32_t type, int n, const uint8_t *w, const void *a);
#endif

static const uint32_t TYPES[] = {12, 13, 14, 8};
static const char *const NAMES[] = {"Q4_K", "Q5_K", "Q6_K", "Q8_0"};

static int
block_bytes(uint32_t t)
{
	return t == 12 ? 144 : t == 13 ? 176 : t == 14 ? 210 : 34;
}

static int
block_values(uint32_t t)
{
	return t == 8 ? 32 : 256;
}

static uint64_t rng = 88172645463325252ULL;

static uint32_t
next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t) (rng >> 16);
}

static float
uniform(void)
{
	return (float) (next() % 2000001) / 1000000.0f - 1.0f;
}

static void
put_half(uint8_t *p, float f)
{
	uint16_t	h = tfm_fp16_from_float(f);

	p[0] = (uint8_t) h;
	p[1] = (uint8_t) (h >> 8);
}

/* nb random blocks of type t: random bytes, sane fp16 scales; extreme: the largest values */
static void
random_blocks(uint8_t *w, uint32_t t, int nb, int extreme)
{
	const int	bb = block_bytes(t);

	for (int i = 0; i < nb * bb; i++)
		w[i] = extreme ? (t == 8 ? 0x80 : 0xFF) : (uint8_t) next();
	for (int i = 0; i < nb; i++)
	{
		uint8_t    *b = w + (size_t) i * bb;

		switch (t)
		{
			case 12:
			case 13:
				put_half(b, 0.001f + 0.01f * fabsf(uniform()));
				put_half(b + 2, 0.001f + 0.01f * fabsf(uniform()));
				break;
			case 14:
				put_half(b + 208, 0.001f + 0.01f * fabsf(uniform()));
				if (extreme)
					memset(b + 192, 0x81, 16);	/* scales −127 */
				break;
			case 8:
				put_half(b, 0.001f + 0.01f * fabsf(uniform()));
				break;
		}
	}
}

/* ---- ggml's generic vec_dot_*, transcribed in its own form ---------------- */

/* the 12 scale bytes decoded as ggml's vec_dot_q4_K_q8_K does (kmask1-3) */
static void
ggml_utmp(const uint8_t *s12, uint8_t scales[8], uint8_t mins[8])
{
	uint32_t	utmp[4];
	const uint32_t kmask1 = 0x3f3f3f3f,
				kmask2 = 0x0f0f0f0f,
				kmask3 = 0x03030303;
	uint32_t	uaux;

	memcpy(utmp, s12, 12);
	utmp[3] = ((utmp[2] >> 4) & kmask2) | (((utmp[1] >> 6) & kmask3) << 4);
	uaux = utmp[1] & kmask1;
	utmp[1] = (utmp[2] & kmask2) | (((utmp[0] >> 6) & kmask3) << 4);
	utmp[2] = uaux;
	utmp[0] &= kmask1;
	memcpy(scales, utmp, 8);
	memcpy(mins, utmp + 2, 8);
}

/* Σ over blocks of d·sumi − dmin·summins in fp64 (exact for the fixed blocks) */
static double
ggml_dot(uint32_t t, int n, const uint8_t *w, const void *act)
{
	double		sum = 0.0;

	if (t == 8)
	{
		const tfm_block_q8_0 *y = act;

		for (int i = 0; i < n / 32; i++, w += 34)
		{
			int			sumi = 0;

			for (int j = 0; j < 32; j++)
				sumi += (int8_t) w[2 + j] * y[i].qs[j];
			sum += (double) sumi * ((double) tfm_f16_to_f32((uint16_t) (w[0] | w[1] << 8)) *
									(double) tfm_f16_to_f32(y[i].d));
		}
		return sum;
	}
	for (int i = 0; i < n / 256; i++, w += block_bytes(t))
	{
		const tfm_block_q8_K *y = (const tfm_block_q8_K *) act + i;
		int8_t		aux8[256];
		int64_t		sumi = 0,
					summins = 0;

		if (t == 14)
		{
			const uint8_t *ql = w,
					   *qh = w + 128;
			const int8_t *sc = (const int8_t *) (w + 192);
			int8_t	   *a = aux8;

			for (int j = 0; j < 256; j += 128)
			{
				for (int l = 0; l < 32; l++)
				{
					a[l] = (int8_t) ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
					a[l + 32] = (int8_t) ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
					a[l + 64] = (int8_t) ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
					a[l + 96] = (int8_t) ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
				}
				a += 128;
				ql += 64;
				qh += 32;
			}
			for (int j = 0; j < 16; j++)
			{
				int			s = 0;

				for (int l = 0; l < 16; l++)
					s += y->qs[16 * j + l] * aux8[16 * j + l];
				sumi += (int64_t) sc[j] * s;
			}
			sum += (double) tfm_f16_to_f32((uint16_t) (w[208] | w[209] << 8)) * (double) y->d * (double) sumi;
		}
		else
		{
			const uint8_t *q4 = w + (t == 13 ? 48 : 16),
					   *hm = w + 16;
			uint8_t		scales[8],
						mins[8],
						m = 1;
			int8_t	   *a = aux8;

			for (int j = 0; j < 4; j++, q4 += 32)
			{
				for (int l = 0; l < 32; l++)
					a[l] = (int8_t) ((q4[l] & 0xF) + (t == 13 && (hm[l] & m) ? 16 : 0));
				a += 32;
				m <<= 1;
				for (int l = 0; l < 32; l++)
					a[l] = (int8_t) ((q4[l] >> 4) + (t == 13 && (hm[l] & m) ? 16 : 0));
				a += 32;
				m <<= 1;
			}
			ggml_utmp(w + 4, scales, mins);
			for (int j = 0; j < 16; j++)
				summins += y->bsums[j] * mins[j / 2];
			for (int j = 0; j < 8; j++)
			{
				int			s = 0;

				for (int l = 0; l < 32; l++)
					s += y->qs[32 * j + l] * aux8[32 * j + l];
				sumi += (int64_t) scales[j] * s;
			}
			sum += (double) tfm_f16_to_f32((uint16_t) (w[0] | w[1] << 8)) * (double) y->d * (double) sumi -
				(double) tfm_f16_to_f32((uint16_t) (w[2] | w[3] << 8)) * (double) y->d * (double) summins;
		}
	}
	return sum;
}

/* ---- the quantizers -------------------------------------------------------- */

static void
test_quantize_q8_K(void)
{
	float		x[512];
	tfm_block_q8_K y[2];

	/* block 0: largest magnitude −127 first (a later +127 does not replace it): iscale 1, d 1 */
	for (int j = 0; j < 256; j++)
		x[j] = 0.0f;
	x[0] = -127.0f;
	x[1] = 127.0f;
	x[2] = 2.5f;				/* ties to even: 2 */
	x[3] = 3.5f;				/* 4 */
	x[4] = -0.5f;				/* 0 */
	x[5] = -2.5f;				/* −2 */
	x[6] = 126.49f;				/* 126 */
	x[17] = 5.0f;
	/* block 1: all 2.0: max 2, iscale −63.5, every q −127, d = 1/−63.5 */
	for (int j = 256; j < 512; j++)
		x[j] = 2.0f;
	tfm_kq_quantize_q8_K(x, y, 512);
	CHECK(y[0].d == 1.0f, "q8_K d %g, want 1", y[0].d);
	CHECK(y[0].qs[0] == -127 && y[0].qs[1] == 127, "q8_K ±127: %d %d", y[0].qs[0], y[0].qs[1]);
	CHECK(y[0].qs[2] == 2 && y[0].qs[3] == 4 && y[0].qs[4] == 0 && y[0].qs[5] == -2,
		  "q8_K ties to even: %d %d %d %d", y[0].qs[2], y[0].qs[3], y[0].qs[4], y[0].qs[5]);
	CHECK(y[0].qs[6] == 126, "q8_K 126.49 → %d", y[0].qs[6]);
	CHECK(y[0].bsums[0] == -127 + 127 + 2 + 4 + 0 - 2 + 126 && y[0].bsums[1] == 5 && y[0].bsums[2] == 0,
		  "q8_K bsums %d %d %d", y[0].bsums[0], y[0].bsums[1], y[0].bsums[2]);
	CHECK(y[1].d == 1.0f / (-127.f / 2.0f), "q8_K d of 2.0s %.9g", y[1].d);
	CHECK(y[1].qs[0] == -127 && y[1].qs[255] == -127 && y[1].bsums[15] == -16 * 127,
		  "q8_K 2.0s: %d %d %d", y[1].qs[0], y[1].qs[255], y[1].bsums[15]);
	/* an all-zero block: d 0, qs 0, bsums 0 */
	memset(x, 0, sizeof(x));
	memset(y, 0x55, sizeof(y));
	tfm_kq_quantize_q8_K(x, y, 256);
	CHECK(y[0].d == 0.0f && y[0].qs[100] == 0 && y[0].bsums[7] == 0, "q8_K zeros");
}

#if defined(__x86_64__)
void		kq_quantize_q8_K_avx512(const float *x, tfm_block_q8_K *y, int64_t k);
#endif

/* the AVX-512 quantizer tfm_kq_gemm uses: the reference's bytes, edge cases and random rows */
static void
test_quantize_q8_K_avx512(void)
{
#if defined(__x86_64__)
	enum
	{
		NB = 12
	};
	float		x[NB * 256];
	tfm_block_q8_K want[NB],
				got[NB];
	int			same = 0;

	__builtin_cpu_init();
	if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
		!__builtin_cpu_supports("avx512vl") || !__builtin_cpu_supports("avx512vnni"))
	{
		printf("  (no AVX-512 VNNI here: the AVX-512 quantizer not run)\n");
		return;
	}
	for (int b = 0; b < NB; b++)
		for (int j = 0; j < 256; j++)
			x[b * 256 + j] = (float) (uniform() * (b + 1) * 3.0);
	/* ties of magnitude: the first one's sign wins */
	x[0 * 256 + 40] = -1000.0f;
	x[0 * 256 + 41] = 1000.0f;
	x[1 * 256 + 3] = 1000.0f;
	x[1 * 256 + 200] = -1000.0f;
	/* all zero, one nonzero, halves that round to even, a NaN */
	memset(x + 2 * 256, 0, 256 * sizeof(float));
	memset(x + 3 * 256, 0, 256 * sizeof(float));
	x[3 * 256 + 255] = -0.001f;
	for (int j = 0; j < 256; j++)
		x[4 * 256 + j] = (float) (j - 128) * 0.5f;
	x[5 * 256 + 17] = NAN;
	memset(want, 0x55, sizeof(want));
	memset(got, 0x33, sizeof(got));
	tfm_kq_quantize_q8_K(x, want, NB * 256);
	kq_quantize_q8_K_avx512(x, got, NB * 256);
	for (int b = 0; b < NB; b++)
		same += memcmp(&want[b].d, &got[b].d, sizeof(float)) == 0 &&
			memcmp(want[b].qs, got[b].qs, sizeof(want[b].qs)) == 0 &&
			memcmp(want[b].bsums, got[b].bsums, sizeof(want[b].bsums)) == 0;
	CHECK(same == NB, "AVX-512 Q8_K quantizer: %d of %d blocks the reference's bytes", same, NB);
#endif
}

static void
test_quantize_q8_0(void)
{
	float		x[64];
	tfm_block_q8_0 y[2];

	for (int j = 0; j < 64; j++)
		x[j] = 0.0f;
	x[0] = 127.0f;				/* amax 127: d 1, id 1 */
	x[1] = -2.5f;				/* −2 */
	x[2] = 1.5f;				/* 2 */
	x[3] = -127.0f;
	for (int j = 32; j < 64; j++)
		x[j] = (float) (j - 48) / 16.0f;	/* amax 1: d = 1/127 in fp16, id 127 */
	tfm_kq_quantize_q8_0(x, y, 64);
	CHECK(y[0].d == 0x3C00, "q8_0 d bits %04x, want 3c00", y[0].d);
	CHECK(y[0].qs[0] == 127 && y[0].qs[1] == -2 && y[0].qs[2] == 2 && y[0].qs[3] == -127 && y[0].qs[4] == 0,
		  "q8_0 qs %d %d %d %d", y[0].qs[0], y[0].qs[1], y[0].qs[2], y[0].qs[3]);
	CHECK(y[1].d == tfm_fp16_from_float(1.0f / 127.f), "q8_0 d 1/127");
	/* x = (j−48)/16 · 127: j = 56 gives 63.5 → 64 (even), j = 40 −63.5 → −64, j = 41 −55.5625 → −56 */
	CHECK(y[1].qs[56 - 32] == 64 && y[1].qs[40 - 32] == -64 && y[1].qs[41 - 32] == -56 && y[1].qs[0] == -127,
		  "q8_0 rounding: %d %d %d %d", y[1].qs[24], y[1].qs[8], y[1].qs[9], y[1].qs[0]);
}

/* ---- the reference dot products -------------------------------------------- */

/* fixed blocks: d 1, dmin 0.5, activations d 1: every float exact, the sum is ggml's exactly */
static void
test_fixed_blocks(void)
{
	for (int ti = 0; ti < 4; ti++)
	{
		const uint32_t t = TYPES[ti];
		const int	nb = 2,
					n = nb * block_values(t),
					bb = block_bytes(t);
		uint8_t		w[2 * 210];
		tfm_block_q8_K yk[2];
		tfm_block_q8_0 y0[16];
		const void *act = t == 8 ? (const void *) y0 : (const void *) yk;
		double		want;
		float		got;

		for (int i = 0; i < nb * bb; i++)
			w[i] = (uint8_t) (i * 37 + 11);
		for (int i = 0; i < nb; i++)
		{
			uint8_t    *b = w + i * bb;

			if (t == 14)
				put_half(b + 208, 1.0f);
			else
			{
				put_half(b, 1.0f);
				if (t != 8)
					put_half(b + 2, 0.5f);
			}
		}
		for (int i = 0; i < 2; i++)
		{
			yk[i].d = 1.0f;
			for (int j = 0; j < 256; j++)
				yk[i].qs[j] = (int8_t) ((j * 29 + i * 7) % 255 - 127);
			for (int j = 0; j < 16; j++)
			{
				yk[i].bsums[j] = 0;
				for (int l = 0; l < 16; l++)
					yk[i].bsums[j] += yk[i].qs[16 * j + l];
			}
		}
		for (int i = 0; i < nb; i++)
		{
			y0[i].d = 0x3C00;
			for (int j = 0; j < 32; j++)
				y0[i].qs[j] = (int8_t) ((j * 53 + i) % 255 - 127);
		}
		want = ggml_dot(t, n, w, act);
		got = tfm_kq_dot_ref(t, n, w, act);
		CHECK(fabs(want) < 16777216.0 && (double) got == want, "%s fixed blocks: %.1f, ggml's %.1f", NAMES[ti], got, want);
		got = tfm_kq_dot(t, n, w, act);
		CHECK((double) got == want, "%s fixed blocks on %s: %.1f, ggml's %.1f", NAMES[ti], tfm_kq_path(), got, want);
	}
}

/* random rows: against ggml's form, the dequantized fp64 dot, and the quantization bound */
static void
test_random_rows(void)
{
	enum
	{
		N = 2048
	};
	static uint8_t w[N / 256 * 210 + N / 32 * 34];
	static float x[N],
				wf[N];
	static tfm_block_q8_K yk[N / 256];
	static tfm_block_q8_0 y0[N / 32];

	for (int ti = 0; ti < 4; ti++)
	{
		const uint32_t t = TYPES[ti];
		double		worst_exact = 0.0,
					worst_bound = 0.0;

		for (int trial = 0; trial < 50; trial++)
		{
			const void *act = t == 8 ? (const void *) y0 : (const void *) yk;
			double		ggml,
						exact = 0.0,
						unq = 0.0,
						mag = 0.0,
						bound = 0.0;
			float		got;

			random_blocks(w, t, N / block_values(t), 0);
			for (int j = 0; j < N; j++)
				x[j] = uniform() * (trial % 3 == 0 ? 100.0f : 1.0f);
			if (t == 8)
				tfm_kq_quantize_q8_0(x, y0, N);
			else
				tfm_kq_quantize_q8_K(x, yk, N);
			CHECK(tfm_gguf_to_f32(wf, w, t, N) == TFM_OK, "%s dequantizes", NAMES[ti]);
			for (int j = 0; j < N; j++)
			{
				double		a = t == 8 ? (double) y0[j / 32].qs[j % 32] * tfm_f16_to_f32(y0[j / 32].d)
					: (double) yk[j / 256].qs[j % 256] * yk[j / 256].d;
				double		step = t == 8 ? tfm_f16_to_f32(y0[j / 32].d) : fabs(yk[j / 256].d);

				exact += (double) wf[j] * a;
				unq += (double) wf[j] * x[j];
				mag += fabs((double) wf[j] * a);
				/* half a step, and for Q8_0 the fp16 rounding of d (2^-11 relative) */
				bound += fabs((double) wf[j]) * (0.5 * step + (t == 8 ? fabs(a) * 0x1p-10 : 0.0));
			}
			ggml = ggml_dot(t, N, w, act);
			got = tfm_kq_dot_ref(t, N, w, act);
			CHECK(fabs(got - ggml) <= 2e-6 * mag, "%s trial %d: %.9g, ggml's form %.9g (Σ|wa| %.3g)",
				  NAMES[ti], trial, got, ggml, mag);
			/* the dequantized weights are rounded floats: a few ulps a term */
			CHECK(fabs(got - exact) <= 2e-6 * mag, "%s trial %d: %.9g, dequantized fp64 %.9g (Σ|wa| %.3g)",
				  NAMES[ti], trial, got, exact, mag);
			CHECK(fabs(got - unq) <= bound + 2e-6 * mag, "%s trial %d: %.9g, unquantized %.9g, bound %.3g",
				  NAMES[ti], trial, got, unq, bound);
			if (mag > 0)
				worst_exact = fmax(worst_exact, fabs(got - exact) / mag);
			if (bound > 0)
				worst_bound = fmax(worst_bound, fabs(got - unq) / bound);
		}
		printf("  %s: worst |ref − dequantized fp64| / Σ|wa| %.2e; |ref − unquantized| / bound %.3f\n",
			   NAMES[ti], worst_exact, worst_bound);
	}
}

/* ---- the AVX2 path ------------------------------------------------------------ */

static void
test_paths_identical(void)
{
	enum
	{
		N = 4096
	};
	static uint8_t w[N / 256 * 210 + N / 32 * 34];
	static float x[N];
	static tfm_block_q8_K yk[N / 256];
	static tfm_block_q8_0 y0[N / 32];
	int			avx2 = 0;

#if defined(__x86_64__)
	__builtin_cpu_init();
	avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
#endif
	printf("  tfm_kq_dot runs %s; AVX2 kernel %s\n", tfm_kq_path(), avx2 ? "tested directly" : "not on this CPU");
	for (int ti = 0; ti < 4; ti++)
	{
		const uint32_t t = TYPES[ti];
		int			same = 0,
					trials = 200;

		for (int trial = 0; trial < trials; trial++)
		{
			const void *act = t == 8 ? (const void *) y0 : (const void *) yk;
			const int	n = block_values(t) * (1 + (int) (next() % (N / block_values(t))));
			float		r,
						d;

			random_blocks(w, t, n / block_values(t), trial % 10 == 9);
			for (int j = 0; j < n; j++)
				x[j] = trial % 10 == 9 ? -1.0f : uniform();
			if (t == 8)
				tfm_kq_quantize_q8_0(x, y0, n);
			else
				tfm_kq_quantize_q8_K(x, yk, n);
			r = tfm_kq_dot_ref(t, n, w, act);
			d = tfm_kq_dot(t, n, w, act);
			same += memcmp(&r, &d, 4) == 0;
#if defined(__x86_64__)
			if (avx2)
			{
				float		v = kq_dot_avx2(t, n, w, act);

				CHECK(memcmp(&r, &v, 4) == 0, "%s trial %d (n %d): AVX2 %.9g, reference %.9g",
					  NAMES[ti], trial, n, v, r);
			}
#endif
		}
		CHECK(same == trials, "%s: tfm_kq_dot equals the reference in %d of %d", NAMES[ti], same, trials);
	}
}

/* ---- the product of rows with a matrix of blocks ---------------------------- */

static void
test_gemm(void)
{
	enum
	{
		MAX_M = 21, N = 37, K = 512	/* M 21: prefill's panels (8 + 8 + 5 rows, 16 + 16 + 5 columns); M 7: a tile of KQ_ROWS = 4 rows and a tail of 3; M 1: decoding */
	};
	static uint8_t w[N * (K / 256) * 210];
	static float a[MAX_M * K],
				wf[N * K],
				c1[MAX_M * N],
				c2[MAX_M * N],
				c0[MAX_M * N];
	static uint8_t work[MAX_M * (K / 32) * sizeof(tfm_block_q8_0) + MAX_M * (K / 256) * sizeof(tfm_block_q8_K)];

	for (int ti = 0; ti < 12; ti++)
	{
		const uint32_t t = TYPES[ti % 4];
		const int	M = ti < 4 ? MAX_M : ti < 8 ? 7 : 1;
		const size_t rb = tfm_kq_row_bytes(t, K);
		int			exact = 0,
					near = 0;

		CHECK(rb == (size_t) K / block_values(t) * block_bytes(t), "%s row bytes %zu", NAMES[ti % 4], rb);
		CHECK(tfm_kq_work_bytes(t, M, K) <= sizeof(work), "%s work bytes", NAMES[ti % 4]);
		random_blocks(w, t, N * K / block_values(t), 0);
		CHECK(tfm_gguf_to_f32(wf, w, t, (uint64_t) N * K) == TFM_OK, "%s dequantizes", NAMES[ti % 4]);
		for (int i = 0; i < M * K; i++)
			a[i] = uniform();
		for (int i = 0; i < M * N; i++)
			c0[i] = c1[i] = c2[i] = uniform();
		CHECK(tfm_kq_gemm(t, M, N, K, a, K, w, 1.0f, 0.0f, c1, N, work, 1), "%s gemm", NAMES[ti % 4]);
		CHECK(tfm_kq_gemm(t, M, N, K, a, K, w, 0.5f, 2.0f, c2, N, work, 2), "%s gemm, 2 threads", NAMES[ti % 4]);
		for (int i = 0; i < M; i++)
		{
			tfm_block_q8_K yk[K / 256];
			tfm_block_q8_0 y0[K / 32];
			const void *act = t == 8 ? (const void *) y0 : (const void *) yk;

			if (t == 8)
				tfm_kq_quantize_q8_0(a + i * K, y0, K);
			else
				tfm_kq_quantize_q8_K(a + i * K, yk, K);
			for (int j = 0; j < N; j++)
			{
				float		d = tfm_kq_dot_ref(t, K, w + j * rb, act),
							want2 = 0.5f * d + 2.0f * c0[i * N + j];
				double		f = 0.0,
							mag = 0.0;

				exact += c1[i * N + j] == d && c2[i * N + j] == want2;
				for (int k = 0; k < K; k++)
				{
					f += (double) wf[j * K + k] * a[i * K + k];
					mag += fabs((double) wf[j * K + k]);
				}
				/* the activations' rounding: half a step of at most max|a|/127 (with fp16 d: 2^-10 more) */
				near += fabs(c1[i * N + j] - f) <= mag * (0.5 / 127.0 + 0x1p-10) + 1e-5;
			}
		}
		CHECK(exact == M * N, "%s gemm, M %d: %d of %d equal to the row-by-row dots (alpha, beta, threads)", NAMES[ti % 4], M, exact, M * N);
		CHECK(near == M * N, "%s gemm, M %d: %d of %d within the bound of the dequantized product", NAMES[ti % 4], M, near, M * N);
	}
	CHECK(!tfm_kq_gemm(2, 1, 1, 32, a, 32, w, 1.0f, 0.0f, c1, 1, work, 1), "Q4_0 refused");
	CHECK(!tfm_kq_gemm(12, 1, 1, 100, a, 100, w, 1.0f, 0.0f, c1, 1, work, 1), "K not a multiple of 256 refused");
}

/* n bytes ending at a page that cannot be read (any read past them faults) */
static void *
guarded(size_t n, void **map, size_t *mapped)
{
	const size_t page = (size_t) sysconf(_SC_PAGESIZE),
				body = (n + page - 1) / page * page;
	uint8_t    *m = mmap(NULL, body + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (m == MAP_FAILED)
		return NULL;
	mprotect(m + body, page, PROT_NONE);
	*map = m;
	*mapped = body + page;
	return m + body - n;
}

/*
 * prefill's panels at their edges (Q4_K, Q5_K, Q6_K and Q8_0, which runs
 * them from one row): K one block (256), N under one group of
 * 16 columns or one past it, M at the panels' thresholds, the weights, the
 * activations and the outputs each ending at an unreadable page; every
 * output the row-by-row dots' bits
 */
static void
test_gemm_edges(void)
{
	static const int shapes[][3] = {{1, 17, 256}, {8, 1, 256}, {12, 1, 256}, {8, 17, 256}, {13, 15, 256}, {9, 16, 512}};

	for (int ti = 0; ti < 4; ti++)
		for (size_t si = 0; si < sizeof(shapes) / sizeof(shapes[0]); si++)
		{
			const uint32_t t = TYPES[ti];
			const int	M = shapes[si][0],
						N = shapes[si][1],
						K = shapes[si][2];
			const size_t rb = tfm_kq_row_bytes(t, K);
			void	   *maps[4];
			size_t		sizes[4];
			uint8_t    *w = guarded(rb * N, &maps[0], &sizes[0]),
					   *work = guarded(tfm_kq_work_bytes(t, M, K), &maps[1], &sizes[1]);
			float	   *a = guarded(sizeof(float) * M * K, &maps[2], &sizes[2]),
					   *c = guarded(sizeof(float) * M * N, &maps[3], &sizes[3]);
			int			exact = 0;

			if (!w || !work || !a || !c)
			{
				CHECK(0, "mmap");
				return;
			}
			random_blocks(w, t, N * K / block_values(t), 0);
			for (int i = 0; i < M * K; i++)
				a[i] = uniform();
			CHECK(tfm_kq_gemm(t, M, N, K, a, K, w, 1.0f, 0.0f, c, N, work, 1), "%s gemm %dx%dx%d", NAMES[ti], M, N, K);
			for (int i = 0; i < M; i++)
			{
				tfm_block_q8_K yk[2];
				tfm_block_q8_0 y0[16];

				if (t == 8)
					tfm_kq_quantize_q8_0(a + i * K, y0, K);
				else
					tfm_kq_quantize_q8_K(a + i * K, yk, K);
				for (int j = 0; j < N; j++)
					exact += c[i * N + j] == tfm_kq_dot_ref(t, K, w + j * rb, t == 8 ? (const void *) y0 :
															(const void *) yk);
			}
			CHECK(exact == M * N, "%s gemm %dx%dx%d at its buffers' ends: %d of %d equal to the row-by-row dots",
				  NAMES[ti], M, N, K, exact, M * N);
			for (int i = 0; i < 4; i++)
				munmap(maps[i], sizes[i]);
		}
}

/*
 * the panels' int16 sums at their bounds: every weight at its largest
 * (all nibbles 15, Q5_K's 31, Q6_K's 63 with scales −127, Q8_0's −128)
 * against activations all at −127 (the quantizers' largest magnitude, as
 * ggml's), and rows of alternating sign; at 1 and 2 threads, M across the panels' rows and
 * thresholds, N one past a group: the row-by-row dots' bits
 */
static void
test_gemm_extreme(void)
{
	enum
	{
		MAX_M = 9, N = 17, K = 512
	};
	static uint8_t w[N * (K / 256) * 210];
	static float a[MAX_M * K],
				c[MAX_M * N];
	static uint8_t work[MAX_M * (K / 32) * sizeof(tfm_block_q8_0) + MAX_M * (K / 256) * sizeof(tfm_block_q8_K)];
	static const int ms[] = {1, 2, 3, 9};

	for (int ti = 0; ti < 4; ti++)
		for (int mi = 0; mi < 4; mi++)
			for (int threads = 1; threads <= 2; threads++)
			{
				const uint32_t t = TYPES[ti];
				const int	M = ms[mi];
				const size_t rb = tfm_kq_row_bytes(t, K);
				int			exact = 0;

				random_blocks(w, t, N * K / block_values(t), 1);
				/* rows 0, 2, ...: all −1 (quantized: all −127); odd rows: signs alternating (∓127) */
				for (int i = 0; i < M; i++)
					for (int k = 0; k < K; k++)
						a[i * K + k] = i % 2 == 0 || k % 2 == 0 ? -1.0f : 1.0f;
				CHECK(tfm_kq_gemm(t, M, N, K, a, K, w, 1.0f, 0.0f, c, N, work, threads), "%s gemm", NAMES[ti]);
				for (int i = 0; i < M; i++)
				{
					tfm_block_q8_K yk[K / 256];
					tfm_block_q8_0 y0[K / 32];

					if (t == 8)
						tfm_kq_quantize_q8_0(a + i * K, y0, K);
					else
						tfm_kq_quantize_q8_K(a + i * K, yk, K);
					if (t == 8)
						CHECK(y0[0].qs[0] == -127 && y0[15].qs[31] == (i % 2 ? 127 : -127), "%s: activations at ±127", NAMES[ti]);
					else
						CHECK(yk[0].qs[0] == -127 && yk[1].qs[255] == (i % 2 ? 127 : -127), "%s: activations at ±127", NAMES[ti]);
					for (int j = 0; j < N; j++)
						exact += c[i * N + j] == tfm_kq_dot_ref(t, K, w + j * rb, t == 8 ? (const void *) y0 :
																(const void *) yk);
				}
				CHECK(exact == M * N, "%s gemm at the largest values, M %d, %d thread(s): %d of %d equal to the row-by-row dots",
					  NAMES[ti], M, threads, exact, M * N);
			}
}

int
main(void)
{
	test_quantize_q8_K();
	test_quantize_q8_K_avx512();
	test_quantize_q8_0();
	test_fixed_blocks();
	test_random_rows();
	test_paths_identical();
	test_gemm();
	test_gemm_edges();
	test_gemm_extreme();
	return check_summary("test_kquant");
}
