/*
 * test_lowp.c — the bf16 and int8 products (include/tfm/lowp.h).
 *
 * Conversions: fp32 → bf16 against a definition computed in double (nearer
 * neighbour, ties to even) on a million random bit patterns, and fixed
 * cases: ties both ways, NaN (signalling ones made quiet, sign kept), ±inf,
 * overflow to inf, subnormals; every bf16 back and forth.
 *
 * bf16 products against an fp64 sum of the same bf16-rounded inputs, with
 * the bound of an fp32 sum of K terms: |got − ref| ≤ (K + 8)·2^-24 ·
 * (|alpha|·Σ|a·w| + |beta·C|).  Shapes: M, N, K over 1..70 across the
 * kernel's edges (12 rows, 16 and 32 columns, odd K) and random ones,
 * larger ones crossing the cache blocks (K blocks of 384, 96-row and
 * 256-column tasks) and the matrix-vector path (M ≤ 4) at model sizes;
 * leading dimensions larger than the rows, beta 0 (C full of NaN) and 1,
 * alpha ≠ 1; C outside the product must come back untouched.
 *
 * int8 products against an fp64 sum of the quantized values (the same
 * quantization, checked on its own), within 2^-21 relative; and against
 * the fp32 product of the unquantized inputs within the bound quantization
 * allows: Σ_k (|a|·s_j/2 + r_i/2·|w| + r_i·s_j/4) per element.
 *
 * Each runs on the fast path (where the CPU has it) and on the fallback
 * (forced), bf16 also on AVX512_BF16 where AMX is the fast path (forced
 * with tfm_lowp_force_noamx); the bf16 paths agree within the bound, the
 * int8 ones bit for bit.  A bf16 product with A read transposed in place
 * (tfm_bf16_gemm_strided) gives the bits of the same product from A, and
 * W packed from its transpose the same panels; A's values rounded in the
 * packing as tfm_bf16_from_float rounds them, ties too, on every path (a
 * product with the identity).  With TFM_TEST_QUICK=1 (valgrind, which cannot run AVX-512) or
 * TFM_LOWP_FORCE=fallback only the fallback runs, on fewer shapes; with
 * TFM_LOWP_FORCE=avx2 the fast path is the AVX2 + FMA one (as on a CPU
 * without AVX-512).  On AArch64 TFM_TEST_QUICK=1 keeps the NEON paths (the
 * runs under qemu-aarch64, scripts/test_aarch64.sh), and TFM_LOWP_FORCE=neon
 * runs int8 without SDOT.
 */
#include <float.h>

/* quick runs (valgrind, qemu) test the fast paths too: AArch64 only */
#if defined(__aarch64__)
#define QUICK_RUNS_FAST 1
#else
#define QUICK_RUNS_FAST 0
#endif

#include "check.h"
#include "tfm/blas.h"
#include "tfm/lowp.h"
#include "tfm/rng.h"

static tfm_rng rng;

static uint32_t
f_bits(float f)
{
	uint32_t	u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

/* ---- conversions ---------------------------------------------------------- */

/* bf16 by its definition: the nearer of the two neighbours, ties to even */
static uint16_t
bf16_by_definition(uint32_t u)
{
	uint32_t	lo = u & 0xFFFF0000u;
	double		x = bits_f(u),
				below = bits_f(lo),
				above;

	if (lo == u)
		return (uint16_t) (u >> 16);
	if ((lo & 0x7FFFFFFFu) == 0x7F7F0000u)
		above = copysign(ldexp(1.0, 128), x);	/* past the largest: inf's place */
	else
		above = bits_f(lo + 0x10000u);
	if (fabs(x - below) < fabs(above - x))
		return (uint16_t) (lo >> 16);
	if (fabs(x - below) > fabs(above - x))
		return (uint16_t) ((lo + 0x10000u) >> 16);
	return (uint16_t) (((lo >> 16) & 1) ? (lo + 0x10000u) >> 16 : lo >> 16);
}

static void
test_conversions(void)
{
	static const struct
	{
		uint32_t	f;
		uint16_t	h;
	}			cases[] = {
		{0x3F800000u, 0x3F80},	/* 1 */
		{0x3F808000u, 0x3F80},	/* tie, even below */
		{0x3F818000u, 0x3F82},	/* tie, odd below: up */
		{0x3F807FFFu, 0x3F80},
		{0x3F808001u, 0x3F81},
		{0xBF808000u, 0xBF80},	/* negative tie */
		{0xBF818000u, 0xBF82},
		{0x7F800000u, 0x7F80},	/* inf */
		{0xFF800000u, 0xFF80},
		{0x7F7FFFFFu, 0x7F80},	/* FLT_MAX rounds to inf */
		{0x7F7F7FFFu, 0x7F7F},	/* the largest bf16 */
		{0x7F7F8000u, 0x7F80},	/* tie at the top, odd below: inf */
		{0x00000000u, 0x0000},
		{0x80000000u, 0x8000},
		{0x00000001u, 0x0000},	/* subnormals */
		{0x00008000u, 0x0000},
		{0x00018000u, 0x0002},
		{0x00010000u, 0x0001},
		{0x80018000u, 0x8002},
		{0x007FFFFFu, 0x0080},	/* the largest subnormal rounds to the smallest normal */
		{0x7FC00000u, 0x7FC0},	/* quiet NaN */
		{0xFFC00001u, 0xFFC0},
		{0x7F800001u, 0x7FC0},	/* signalling NaN, payload only in the low bits */
		{0x7FA00000u, 0x7FE0},	/* signalling NaN with a payload bf16 keeps */
		{0xFF810000u, 0xFFC1},
	};
	size_t		bad = 0,
				n = quick_mode() ? 20000 : 1000000;
	uint16_t	h16[64];
	float		f32[64],
				back[64];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		uint16_t	h = tfm_bf16_from_float(bits_f(cases[i].f));

		CHECK(h == cases[i].h, "bf16(0x%08x) = 0x%04x, want 0x%04x", cases[i].f, h, cases[i].h);
	}
	for (size_t i = 0; i < n; i++)
	{
		uint32_t	u = (uint32_t) tfm_rng_next(&rng);

		if ((u & 0x7FFFFFFFu) > 0x7F800000u)
			bad += (tfm_bf16_from_float(bits_f(u)) & 0x7FC0) != 0x7FC0;
		else
			bad += tfm_bf16_from_float(bits_f(u)) != bf16_by_definition(u);
	}
	CHECK(bad == 0, "%zu of %zu random fp32 rounded otherwise than to nearest even", bad, n);

	/* every bf16 is exact in fp32 and comes back; NaNs come back quiet */
	bad = 0;
	for (uint32_t h = 0; h < 65536; h++)
	{
		float		f = tfm_bf16_to_float((uint16_t) h);
		uint16_t	g = tfm_bf16_from_float(f);

		if (f_bits(f) != h << 16)
			bad++;
		else if (isnan(f) ? g != (h | 0x40) : g != h)
			bad++;
	}
	CHECK(bad == 0, "%zu bf16 values do not survive bf16 → fp32 → bf16", bad);

	/* the array forms are the scalar ones */
	for (int i = 0; i < 64; i++)
		f32[i] = (tfm_rng_uniform(&rng) - 0.5f) * 1e3f;
	f32[3] = NAN;
	f32[4] = -INFINITY;
	tfm_bf16_from_floats(h16, f32, 64);
	tfm_bf16_to_floats(back, h16, 64);
	bad = 0;
	for (int i = 0; i < 64; i++)
		bad += h16[i] != tfm_bf16_from_float(f32[i]) ||
			f_bits(back[i]) != (uint32_t) h16[i] << 16;
	CHECK(bad == 0, "array conversions differ from the scalar ones at %zu places", bad);
}

/* ---- products ------------------------------------------------------------- */

typedef struct problem
{
	int			M,
				N,
				K;
	ptrdiff_t	lda,
				ldc;
	float		alpha,
				beta;
	float	   *A,				/* M × lda */
			   *W,				/* K × N, (in, out) */
			   *C0;				/* M × ldc + slack: C before the product */
} problem;

static problem
make_problem(int M, int N, int K, int pad, float alpha, float beta)
{
	problem		p = {M, N, K, K + pad, N + 2 * pad, alpha, beta};
	size_t		nc = (size_t) M * p.ldc + 16;

	p.A = malloc(((size_t) M * p.lda + 1) * sizeof(float));
	p.W = malloc(((size_t) K * N + 1) * sizeof(float));
	p.C0 = malloc(nc * sizeof(float));
	for (size_t i = 0; i < (size_t) M * p.lda; i++)
		p.A[i] = tfm_rng_uniform(&rng) * 2.0f - 1.0f;
	for (size_t i = 0; i < (size_t) K * N; i++)
		p.W[i] = tfm_rng_uniform(&rng) - 0.5f;
	for (size_t i = 0; i < nc; i++)
		p.C0[i] = beta == 0.0f ? NAN : tfm_rng_uniform(&rng) - 0.5f;
	return p;
}

static void
free_problem(problem *p)
{
	free(p->A);
	free(p->W);
	free(p->C0);
}

static float *
copy_c(const problem *p)
{
	size_t		nc = (size_t) p->M * p->ldc + 16;
	float	   *C = malloc(nc * sizeof(float));

	memcpy(C, p->C0, nc * sizeof(float));
	return C;
}

/* C outside the M × N product (the leading dimension's gap, the slack) */
static bool
outside_untouched(const problem *p, const float *C)
{
	size_t		nc = (size_t) p->M * p->ldc + 16;

	for (size_t x = 0; x < nc; x++)
	{
		bool		inside = x / p->ldc < (size_t) p->M && x % p->ldc < (size_t) p->N;

		if (!inside && f_bits(C[x]) != f_bits(p->C0[x]))
			return false;
	}
	return true;
}

static const char *
path_name(bool fallback)
{
	return fallback ? "fallback" : "fast";
}

/* bf16: C from tfm_bf16_gemm against the fp64 reference; returns C */
static float *
run_bf16(const problem *p, bool fallback)
{
	tfm_bf16_weights w;
	void	   *pack = alloc64(tfm_bf16_pack_bytes(p->K, p->N)),
			   *work = alloc64(tfm_bf16_work_bytes(p->M, p->K));
	float	   *C = copy_c(p);
	double		worst = 0.0;

	tfm_bf16_pack(&w, pack, p->W, p->N, 1, p->K, p->N);
	tfm_bf16_gemm(p->M, p->N, p->K, p->alpha, p->A, p->lda, &w, p->beta, C, p->ldc, work);
	for (int i = 0; i < p->M; i++)
		for (int j = 0; j < p->N; j++)
		{
			double		ref = 0.0,
						mag = 0.0,
						tol;
			size_t		ic = (size_t) i * p->ldc + j;

			for (int k = 0; k < p->K; k++)
			{
				double		t = (double) tfm_bf16_to_float(tfm_bf16_from_float(p->A[(size_t) i * p->lda + k])) *
					tfm_bf16_to_float(tfm_bf16_from_float(p->W[(size_t) k * p->N + j]));

				ref += t;
				mag += fabs(t);
			}
			ref *= p->alpha;
			mag *= fabs(p->alpha);
			if (p->beta != 0.0f)
			{
				ref += (double) p->beta * p->C0[ic];
				mag += fabs((double) p->beta * p->C0[ic]);
			}
			tol = (p->K + 8) * ldexp(1.0, -24) * mag + 1e-30;
			worst = fmax(worst, fabs(C[ic] - ref) / tol);
			if (isnan(C[ic]))
				worst = INFINITY;
		}
	CHECK(worst <= 1.0, "bf16 %s %dx%dx%d lda %td ldc %td alpha %g beta %g: error %.3g of the bound",
		  path_name(fallback), p->M, p->N, p->K, p->lda, p->ldc, p->alpha, p->beta, worst);
	CHECK(outside_untouched(p, C), "bf16 %s %dx%dx%d wrote outside C's product",
		  path_name(fallback), p->M, p->N, p->K);

	/*
	 * A read transposed in place (Aᵀ stored K × lt) gives the same bits, and
	 * W packed from its transpose (rs = 1, cs = K) the same panels.
	 */
	{
		ptrdiff_t	lt = p->M + 3;
		float	   *At = malloc(sizeof(float) * ((size_t) p->K * lt + 1)),
				   *Wt = malloc(sizeof(float) * ((size_t) p->K * p->N + 1)),
				   *C2 = copy_c(p);
		void	   *pack2 = alloc64(tfm_bf16_pack_bytes(p->K, p->N));
		tfm_bf16_weights w2;

		for (int k = 0; k < p->K; k++)
		{
			for (int i = 0; i < p->M; i++)
				At[(size_t) k * lt + i] = p->A[(size_t) i * p->lda + k];
			for (int j = 0; j < p->N; j++)
				Wt[(size_t) j * p->K + k] = p->W[(size_t) k * p->N + j];
		}
		tfm_bf16_gemm_strided(p->M, p->N, p->K, p->alpha, At, 1, lt, &w, p->beta, C2, p->ldc, work);
		CHECK(memcmp(C, C2, ((size_t) p->M * p->ldc + 16) * sizeof(float)) == 0,
			  "bf16 %s %dx%dx%d: A read transposed differs from A", path_name(fallback),
			  p->M, p->N, p->K);
		tfm_bf16_pack(&w2, pack2, Wt, 1, p->K, p->K, p->N);
		CHECK(w2.kp == w.kp && memcmp(pack, pack2, tfm_bf16_pack_bytes(p->K, p->N)) == 0,
			  "bf16 %dx%d: W packed from its transpose differs", p->K, p->N);
		free(At);
		free(Wt);
		free(C2);
		free(pack2);
	}
	free(pack);
	free(work);
	return C;
}

/* int8: against the fp64 sum of the quantized values and the fp32 bound; returns C */
static float *
run_int8(const problem *p, bool fallback, double *rel_err)
{
	tfm_int8_weights w;
	void	   *pack = alloc64(tfm_int8_pack_bytes(p->K, p->N)),
			   *work = alloc64(tfm_int8_work_bytes(p->M, p->K));
	int8_t	   *qa = malloc((size_t) p->K + 1);
	float	   *C = copy_c(p);
	double		worst = 0.0,
				worst_q = 0.0,
				err2 = 0.0,
				ref2 = 0.0;

	tfm_int8_pack(&w, pack, p->W, p->N, 1, p->K, p->N);
	tfm_int8_gemm(p->M, p->N, p->K, p->alpha, p->A, p->lda, &w, p->beta, C, p->ldc, work);
	for (int i = 0; i < p->M; i++)
	{
		const float *a = p->A + (size_t) i * p->lda;
		float		r = tfm_int8_quantize_row(qa, a, p->K);

		for (int j = 0; j < p->N; j++)
		{
			double		s = w.scale[j],
						sum = 0.0,
						exact = 0.0,
						bound = 0.0,
						ref,
						add = 0.0,
						tol;
			size_t		ic = (size_t) i * p->ldc + j;

			for (int k = 0; k < p->K; k++)
			{
				double		wv = p->W[(size_t) k * p->N + j];

				sum += (double) qa[k] * tfm_int8_weight(&w, k, j);
				exact += (double) a[k] * wv;
				bound += fabs(a[k]) * s / 2 + r / 2.0 * fabs(wv) + r * s / 4;
			}
			if (p->beta != 0.0f)
				add = (double) p->beta * p->C0[ic];
			ref = p->alpha * r * s * sum + add;
			tol = ldexp(1.0, -21) * (fabs(ref - add) + fabs(add)) + 1e-30;
			worst_q = fmax(worst_q, fabs(C[ic] - ref) / tol);
			/* against the unquantized product: quantization's bound (+ the fp32 part) */
			exact = p->alpha * exact + add;
			tol = fabs(p->alpha) * bound * (1 + 1e-5) + tol;
			worst = fmax(worst, fabs(C[ic] - exact) / tol);
			if (isnan(C[ic]))
				worst = worst_q = INFINITY;
			err2 += (C[ic] - exact) * (C[ic] - exact);
			ref2 += (exact - add) * (exact - add);
		}
	}
	CHECK(worst_q <= 1.0, "int8 %s %dx%dx%d lda %td ldc %td alpha %g beta %g: error %.3g of the bound (quantized values)",
		  path_name(fallback), p->M, p->N, p->K, p->lda, p->ldc, p->alpha, p->beta, worst_q);
	CHECK(worst <= 1.0, "int8 %s %dx%dx%d: error against fp32 %.3g of quantization's bound",
		  path_name(fallback), p->M, p->N, p->K, worst);
	CHECK(outside_untouched(p, C), "int8 %s %dx%dx%d wrote outside C's product",
		  path_name(fallback), p->M, p->N, p->K);
	if (rel_err)
		*rel_err = ref2 > 0 ? sqrt(err2 / ref2) : 0.0;
	free(qa);
	free(pack);
	free(work);
	return C;
}

static bool has_amx;			/* the fast bf16 GEMM is AMX (also tested without) */
static bool fast_bf16,
			fast_int8;

/* one shape on every path there is; the paths against each other */
static void
check_shape(int M, int N, int K, int pad, float alpha, float beta)
{
	problem		p = make_problem(M, N, K, pad, alpha, beta);
	float	   *cb[2] = {NULL, NULL},
			   *ci[2] = {NULL, NULL};

	for (int f = 1; f >= 0; f--)
	{
		tfm_lowp_force_fallback(f == 1);
		if (f == 1 || fast_bf16)
			cb[f] = run_bf16(&p, f == 1);
		if (f == 1 || fast_int8)
			ci[f] = run_int8(&p, f == 1, NULL);
	}
	tfm_lowp_force_fallback(false);
	for (int amx = 0; amx < (has_amx ? 2 : 1); amx++)
	{
		/* both within the bound of the reference: within twice of each other */
		double		worst = 0.0;

		if (amx == 1)
		{
			/* AVX512_BF16 where AMX would run */
			tfm_lowp_force_noamx(true);
			free(cb[0]);
			cb[0] = run_bf16(&p, false);
			tfm_lowp_force_noamx(false);
		}
		if (!cb[0] || !cb[1])
			break;
		for (int i = 0; i < M; i++)
			for (int j = 0; j < N; j++)
			{
				size_t		ic = (size_t) i * p.ldc + j;
				double		mag = 0.0;

				for (int k = 0; k < K; k++)
					mag += fabs(p.A[(size_t) i * p.lda + k] * p.W[(size_t) k * N + j]) * 1.01;
				mag = fabs(alpha) * mag + (beta != 0.0f ? fabs(beta * p.C0[ic]) : 0.0);
				worst = fmax(worst, fabs(cb[0][ic] - cb[1][ic]) /
							 (2 * (K + 8) * ldexp(1.0, -24) * mag + 1e-30));
			}
		CHECK(worst <= 1.0, "bf16 %s vs fallback %dx%dx%d: %.3g of the bound",
			  amx == 1 ? "avx512bf16" : tfm_lowp_bf16_kernel(), M, N, K, worst);
	}
	if (ci[0] && ci[1])
		CHECK(memcmp(ci[0], ci[1], ((size_t) M * p.ldc + 16) * sizeof(float)) == 0,
			  "int8 fast and fallback differ, %dx%dx%d", M, N, K);
	for (int f = 0; f < 2; f++)
	{
		free(cb[f]);
		free(ci[f]);
	}
	free_problem(&p);
}

/*
 * A's packing rounds as tfm_bf16_from_float, read in rows or transposed:
 * A·I (K × N, N ≥ K, the identity's columns) is A's rounded values, exact.
 * The values: ties (low half 0x8000) both ways, one below and above,
 * subnormals, the largest floats short of rounding to inf, negative zero.
 * M = 13 and K = 35 leave a partial panel and an odd last pair.
 */
static void
test_pack_rounding(void)
{
	const int	M = 13,
				K = 35,
				N = 48;
	static const uint32_t low[] = {0x8000u, 0x7FFFu, 0x8001u, 0x0000u, 0xFFFFu};
	float	   *A = malloc(sizeof(float) * M * K),
			   *At = malloc(sizeof(float) * M * K),
			   *W = calloc((size_t) K * N, sizeof(float)),
			   *C = malloc(sizeof(float) * M * N);
	void	   *pack = alloc64(tfm_bf16_pack_bytes(K, N)),
			   *work = alloc64(tfm_bf16_work_bytes(M, K));
	tfm_bf16_weights w;
	tfm_rng		prng;
	size_t		bad = 0;

	tfm_rng_seed(&prng, 4141);
	for (int i = 0; i < M * K; i++)
	{
		uint32_t	hi = (uint32_t) tfm_rng_below(&prng, 0x7F00u) << 16,
					u = (hi | low[i % 5]) ^ (i % 3 == 0 ? 0x80000000u : 0u);

		if (i % 11 == 0)
			u = 0x00008000u | (uint32_t) tfm_rng_below(&prng, 0x7FFFu) << 16 >> 8;	/* subnormal */
		if (i % 17 == 0)
			u = 0x7F7F7FFFu;	/* the largest bf16's neighbour below the tie */
		if (i % 19 == 0)
			u = 0x80000000u;
		A[i] = bits_f(u);
		At[(size_t) (i % K) * M + i / K] = A[i];
	}
	for (int k = 0; k < K; k++)
		W[(size_t) k * N + k] = 1.0f;
	tfm_bf16_pack(&w, pack, W, N, 1, K, N);
	for (int t = 0; t < 2; t++)
	{
		tfm_bf16_gemm_strided(M, N, K, 1.0f, t ? At : A, t ? 1 : K, t ? M : 1, &w, 0.0f, C, N, work);
		for (int i = 0; i < M; i++)
			for (int k = 0; k < K; k++)
			{
				float		want = tfm_bf16_to_float(tfm_bf16_from_float(A[(size_t) i * K + k])),
							got = C[(size_t) i * N + k];

				/* a subnormal may be read as zero by the kernel's instruction (DAZ) */
				if (fpclassify(want) == FP_SUBNORMAL && got == 0.0f)
					continue;
				bad += f_bits(got) != f_bits(want) && !(want == 0.0f && got == 0.0f);
			}
	}
	CHECK(bad == 0, "bf16 %s: %zu of A's values not rounded as tfm_bf16_from_float in the packing",
		  tfm_lowp_bf16_kernel(), bad);
	free(A);
	free(At);
	free(W);
	free(C);
	free(pack);
	free(work);
}

/* packing from an (out, in) weight gives the same panels as from (in, out) */
static void
test_pack_layouts(int K, int N)
{
	float	   *W = malloc((size_t) K * N * sizeof(float)),
			   *Wt = malloc((size_t) K * N * sizeof(float));
	size_t		nb = tfm_bf16_pack_bytes(K, N),
				ni = tfm_int8_pack_bytes(K, N);
	void	   *b1 = alloc64(nb),
			   *b2 = alloc64(nb),
			   *i1 = alloc64(ni),
			   *i2 = alloc64(ni);
	tfm_bf16_weights wb1,
				wb2;
	tfm_int8_weights wi1,
				wi2;
	size_t		bad = 0;

	for (int k = 0; k < K; k++)
		for (int j = 0; j < N; j++)
			Wt[(size_t) j * K + k] = W[(size_t) k * N + j] = tfm_rng_normal(&rng);
	for (int k = 0; k < K; k++)
		W[(size_t) k * N + N / 2] = 0.0f;	/* a zero column */
	for (int k = 0; k < K; k++)
		Wt[(size_t) (N / 2) * K + k] = 0.0f;
	memset(b1, 0xAB, nb);
	memset(b2, 0xCD, nb);
	memset(i1, 0xAB, ni);
	memset(i2, 0xCD, ni);
	tfm_bf16_pack(&wb1, b1, W, N, 1, K, N);
	tfm_bf16_pack(&wb2, b2, Wt, 1, K, K, N);
	tfm_int8_pack(&wi1, i1, W, N, 1, K, N);
	tfm_int8_pack(&wi2, i2, Wt, 1, K, K, N);
	CHECK(memcmp(b1, b2, nb) == 0, "bf16 panels of (in, out) and (out, in) differ, %dx%d", K, N);
	CHECK(memcmp(i1, i2, ni) == 0, "int8 panels of (in, out) and (out, in) differ, %dx%d", K, N);
	for (int k = 0; k < K; k++)
		for (int j = 0; j < N; j++)
		{
			float		w = W[(size_t) k * N + j];

			bad += tfm_bf16_weight(&wb1, k, j) != tfm_bf16_to_float(tfm_bf16_from_float(w));
			bad += fabsf(tfm_int8_weight(&wi1, k, j) * wi1.scale[j] - w) > wi1.scale[j] * 0.5001f;
			bad += abs(tfm_int8_weight(&wi1, k, j)) > 127;
		}
	CHECK(bad == 0, "%zu packed weights are not the rounded or quantized weight, %dx%d", bad, K, N);
	CHECK(wi1.scale[N / 2] == 0.0f && wi1.colsum[N / 2] == 0, "a zero column has scale %g",
		  wi1.scale[N / 2]);
	for (int j = 0; j < N; j++)
	{
		int32_t		s = 0;
		float		mx = 0.0f;

		for (int k = 0; k < K; k++)
		{
			s += tfm_int8_weight(&wi1, k, j);
			mx = fmaxf(mx, fabsf(W[(size_t) k * N + j]));
		}
		bad += s != wi1.colsum[j] || wi1.scale[j] != mx / 127.0f;
	}
	CHECK(bad == 0, "column sums or scales wrong at %zu columns, %dx%d", bad, K, N);
	free(W);
	free(Wt);
	free(b1);
	free(b2);
	free(i1);
	free(i2);
}

static void
test_quantize_row(void)
{
	float		x[37];
	int8_t		q[37];
	float		r;
	int			bad = 0;

	for (int k = 0; k < 37; k++)
		x[k] = tfm_rng_normal(&rng);
	x[5] = -4.0f;				/* the largest magnitude: −127 exactly */
	r = tfm_int8_quantize_row(q, x, 37);
	CHECK(r == 4.0f / 127.0f && q[5] == -127, "row scale %g, q[5] = %d", r, q[5]);
	for (int k = 0; k < 37; k++)
		bad += fabsf(q[k] * r - x[k]) > r * 0.5001f;
	CHECK(bad == 0, "%d quantized activations more than half a step off", bad);
	memset(x, 0, sizeof(x));
	r = tfm_int8_quantize_row(q, x, 37);
	bad = 0;
	for (int k = 0; k < 37; k++)
		bad += q[k] != 0;
	CHECK(r == 0.0f && bad == 0, "a zero row: scale %g, %d non-zero", r, bad);
}

/* a row of zeros in A, K = 0, M = 0 */
static void
test_edges(void)
{
	problem		p = make_problem(6, 40, 33, 1, 1.0f, 1.0f);
	tfm_int8_weights w;
	tfm_bf16_weights wb;
	void	   *pack = alloc64(tfm_int8_pack_bytes(33, 40)),
			   *packb = alloc64(tfm_bf16_pack_bytes(33, 40)),
			   *work = alloc64(tfm_int8_work_bytes(6, 33) + tfm_bf16_work_bytes(6, 33));
	float	   *C = copy_c(&p),
				c1[3] = {1.0f, NAN, 3.0f};
	int			bad = 0;

	for (int k = 0; k < 33; k++)
		p.A[2 * p.lda + k] = 0.0f;
	tfm_int8_pack(&w, pack, p.W, 40, 1, 33, 40);
	tfm_int8_gemm(6, 40, 33, 1.0f, p.A, p.lda, &w, 1.0f, C, p.ldc, work);
	for (int j = 0; j < 40; j++)
		bad += C[2 * p.ldc + j] != p.C0[2 * p.ldc + j];
	CHECK(bad == 0, "int8: a zero row of A changed %d elements of C (beta 1)", bad);

	/* K = 0: C = beta·C; beta 0 clears NaN */
	tfm_bf16_pack(&wb, packb, p.W, 40, 1, 0, 3);
	tfm_bf16_gemm(1, 3, 0, 1.0f, p.A, 1, &wb, 0.0f, c1, 3, work);
	CHECK(c1[0] == 0.0f && c1[1] == 0.0f && c1[2] == 0.0f, "bf16 K = 0, beta 0: %g %g %g",
		  c1[0], c1[1], c1[2]);
	c1[0] = 1.0f, c1[1] = 2.0f;
	tfm_int8_pack(&w, pack, p.W, 40, 1, 0, 2);
	tfm_int8_gemm(1, 2, 0, 1.0f, p.A, 1, &w, 2.0f, c1, 2, work);
	CHECK(c1[0] == 2.0f && c1[1] == 4.0f, "int8 K = 0, beta 2: %g %g", c1[0], c1[1]);
	/* M = 0 touches nothing */
	tfm_bf16_gemm(0, 3, 5, 1.0f, NULL, 5, &wb, 0.0f, NULL, 3, work);
	free(pack);
	free(packb);
	free(work);
	free(C);
	free_problem(&p);
}

/* int8 on inputs shaped like a model's: its error against fp32, stated */
static void
test_int8_error(bool fallback)
{
	problem		p = make_problem(quick_mode() ? 5 : 64, quick_mode() ? 64 : 768, 768, 0, 1.0f, 0.0f);
	double		rel;
	float	   *C;

	for (size_t i = 0; i < (size_t) p.M * p.lda; i++)
		p.A[i] = tfm_rng_normal(&rng);
	for (size_t i = 0; i < (size_t) p.K * p.N; i++)
		p.W[i] = tfm_rng_normal(&rng) * 0.036f;
	tfm_lowp_force_fallback(fallback);
	C = run_int8(&p, fallback, &rel);
	tfm_lowp_force_fallback(false);
	/* Gaussian inputs: each side's rounding ≈ 1 % of its values' rms; the product ≈ 1.5 % */
	CHECK(rel < 0.03, "int8 %s %dx%dx%d: relative error against fp32 %.4f (bound 0.03)",
		  path_name(fallback), p.M, p.N, p.K, rel);
	printf("  int8 %s, Gaussian %dx%dx%d: relative Frobenius error against fp32 %.4f\n",
		   path_name(fallback), p.M, p.N, p.K, rel);
	free(C);
	free_problem(&p);
}

/*
 * The path below the CPU's best, which tfm_lowp_force_avx2 and
 * TFM_LOWP_FORCE=avx2 (x86-64) or =neon (AArch64) choose: AVX2 or (on a
 * CPU without AVX2 + FMA) the fallback, no AVX-512 path; plain NEON, no
 * SDOT.
 */
#if defined(__aarch64__)
#define BELOW_BEST "neon"
static bool
below_best(void)
{
	return strcmp(tfm_lowp_bf16_kernel(), "neon") == 0 && strcmp(tfm_lowp_int8_kernel(), "neon") == 0;
}
#else
#define BELOW_BEST "avx2"
static bool
below_best(void)
{
	return strcmp(tfm_lowp_bf16_kernel(), "avx2") == 0 ? strcmp(tfm_lowp_int8_kernel(), "avx2") == 0 :
		strcmp(tfm_lowp_bf16_kernel(), "fallback") == 0 &&
		strcmp(tfm_lowp_int8_kernel(), "fallback") == 0 &&
		strstr(tfm_lowp_reason(), "lacks AVX2") != NULL;
}
#endif

static void
test_dispatch(bool env_forced, bool env_below)
{
	const char *why = tfm_lowp_reason();

	printf("  bf16 runs %s, int8 runs %s: %s\n", tfm_lowp_bf16_kernel(), tfm_lowp_int8_kernel(), why);
	if (env_forced)
		CHECK(strcmp(tfm_lowp_bf16_kernel(), "fallback") == 0 &&
			  strcmp(tfm_lowp_int8_kernel(), "fallback") == 0 &&
			  strstr(why, "TFM_LOWP_FORCE") != NULL,
			  "TFM_LOWP_FORCE=fallback: bf16 %s, int8 %s (%s)",
			  tfm_lowp_bf16_kernel(), tfm_lowp_int8_kernel(), why);
	if (env_below)
		CHECK(below_best() && strstr(why, "TFM_LOWP_FORCE=" BELOW_BEST) != NULL,
			  "TFM_LOWP_FORCE=" BELOW_BEST ": bf16 %s, int8 %s (%s)",
			  tfm_lowp_bf16_kernel(), tfm_lowp_int8_kernel(), why);
	tfm_lowp_force_avx2(true);
	if (!env_forced)
		CHECK(below_best() && strstr(tfm_lowp_reason(), "tfm_lowp_force_avx2") != NULL,
			  BELOW_BEST " forced: bf16 %s, int8 %s (%s)", tfm_lowp_bf16_kernel(),
			  tfm_lowp_int8_kernel(), tfm_lowp_reason());
	tfm_lowp_force_fallback(true);
	CHECK(strcmp(tfm_lowp_bf16_kernel(), "fallback") == 0 &&
		  strcmp(tfm_lowp_int8_kernel(), "fallback") == 0 &&
		  strstr(tfm_lowp_reason(), "forced") != NULL,
		  "forced: bf16 %s, int8 %s (%s)", tfm_lowp_bf16_kernel(), tfm_lowp_int8_kernel(),
		  tfm_lowp_reason());
	tfm_lowp_force_fallback(false);
	tfm_lowp_force_avx2(false);
}

int
main(void)
{
	static const int ms[] = {1, 2, 3, 4, 5, 11, 12, 13, 24, 25, 70};
	static const int ns[] = {1, 15, 16, 17, 31, 32, 33, 64, 70};
	static const int ks[] = {1, 2, 3, 4, 5, 7, 64, 65, 70};
	const char *force = getenv("TFM_LOWP_FORCE");
	bool		env_forced = force != NULL && strcmp(force, "fallback") == 0,
				env_below = force != NULL && strcmp(force, BELOW_BEST) == 0;
	int			v = 0;

	tfm_rng_seed(&rng, 18);
	test_dispatch(env_forced, env_below);
	/* valgrind cannot run AVX-512: quick runs keep to the fallback on x86-64 */
	if (quick_mode() && !QUICK_RUNS_FAST)
		tfm_lowp_force_fallback(true);
	fast_bf16 = strcmp(tfm_lowp_bf16_kernel(), "fallback") != 0;
	has_amx = strcmp(tfm_lowp_bf16_kernel(), "amx") == 0;
	fast_int8 = strcmp(tfm_lowp_int8_kernel(), "fallback") != 0;
	tfm_lowp_force_fallback(false);
	if (quick_mode() && !QUICK_RUNS_FAST)
		fast_bf16 = fast_int8 = has_amx = false;
	printf("  %s\n", tfm_lowp_reason());
	printf("  paths tested: bf16 %s%s, int8 %s%s\n",
		   has_amx ? "amx, avx512bf16 and " : fast_bf16 ? tfm_lowp_bf16_kernel() : "",
		   has_amx ? "fallback" : fast_bf16 ? " and fallback" : "fallback only",
		   fast_int8 ? tfm_lowp_int8_kernel() : "", fast_int8 ? " and fallback" : "fallback only");

	test_conversions();
	test_quantize_row();
	test_pack_layouts(37, 70);
	test_pack_layouts(4, 1);
	test_pack_rounding();
	tfm_lowp_force_fallback(true);
	test_pack_rounding();
	tfm_lowp_force_fallback(false);
	test_edges();

	/* the edges of the kernels, every combination, rotating the variants */
	for (int a = 0; a < (int) (sizeof(ms) / sizeof(ms[0])); a++)
		for (int b = 0; b < (int) (sizeof(ns) / sizeof(ns[0])); b++)
			for (int c = 0; c < (int) (sizeof(ks) / sizeof(ks[0])); c++, v++)
			{
				if (quick_mode() && v % 7 != 0)
					continue;
				check_shape(ms[a], ns[b], ks[c], v % 3, v % 4 == 1 ? -0.5f : 1.0f,
							v % 2 ? 1.0f : 0.0f);
			}
	/* random shapes in 1..70 */
	for (int t = 0; t < (quick_mode() ? 10 : 150); t++)
		check_shape(1 + (int) tfm_rng_below(&rng, 70), 1 + (int) tfm_rng_below(&rng, 70),
					1 + (int) tfm_rng_below(&rng, 70), (int) tfm_rng_below(&rng, 3),
					t % 5 == 0 ? 2.0f : 1.0f, t % 2 ? 0.0f : 1.0f);

	/* cache blocks and threads; the matrix-vector path at model sizes */
	if (!quick_mode())
		tfm_set_threads(2);
	check_shape(2, 2304, 768, 0, 1.0f, 0.0f);
	check_shape(3, 333, 1001, 5, 1.0f, 1.0f);
	check_shape(97, 300, 800, 3, 1.0f, 1.0f);
	/* K a multiple of 32 and more than 4 rows: AMX tiles where the CPU has them */
	check_shape(5, 17, 32, 0, 1.0f, 0.0f);
	check_shape(33, 33, 64, 1, 0.5f, 1.0f);
	check_shape(31, 65, 96, 2, 1.0f, 0.0f);
	if (!quick_mode())
	{
		check_shape(1, 3072, 768, 0, 1.0f, 1.0f);
		check_shape(4, 768, 3072, 0, 1.0f, 0.0f);
		check_shape(200, 520, 777, 1, 0.5f, 1.0f);
		check_shape(128, 1030, 1536, 0, 1.0f, 0.0f);
		check_shape(130, 70, 999, 1, 1.0f, 1.0f);	/* a weight gradient: K = tokens */
		/* K in AMX's slices of 512 pairs: whole, and a partial last slice; alpha, beta */
		check_shape(64, 64, 2048, 0, 1.0f, 1.0f);
		check_shape(45, 50, 2500, 1, 0.5f, 0.0f);
		check_shape(33, 96, 3000, 2, 1.0f, 0.0f);
	}
	test_int8_error(true);
	if (fast_int8)
		test_int8_error(false);
	return check_summary("test_lowp");
}
