/*
 * sgemm_rows.c — tfm_gemm_rows: tfm's own fp32 product for the row-exact
 * passes (a varlen pass's texts share one matrix; each text's rows must
 * give the bits they give alone), and its plain-C kernel.
 *
 * Every element of C is one fused multiply-add chain over k = 0 .. K-1
 * from 0, then one add of C (beta 1): no K blocking, no split sums, the
 * same chain for every M, row position, column and thread count.  BLIS
 * cannot promise that across its paths (its small-matrix kernels and
 * tfm_gemv_rows sum in other orders than its packed path, whose K blocks
 * round in between), so these products are tfm's: C is cut into panels of
 * SR_NR columns, shared out among the threads in contiguous runs; each
 * panel of B is packed once per call (K × SR_NR floats, zeros past N;
 * several of a thread's panels at a time) into the thread's buffer, where
 * it stays in L1/L2 while every SR_MR rows of A pass over it.  A product
 * of at most SR_MR rows reads B in place (one pass over it, nothing to
 * reuse); of at most 3 rows, on AVX2,
 * several panels a pass over each row of B (sr_wide_avx2).  Or B comes
 * packed once, when the model is loaded (tfm_gemm_rows_pack: panels of
 * SR_PW = 32 columns, which the AVX-512 kernels read whole and the AVX2 and
 * plain-C ones as two halves): tfm_gemm_rows_packed, the same chains, so
 * the same bits, without a copy of B per call.
 *
 * Kernels: AVX-512 (sgemm_rows_avx512.c: panels of SR512_NR columns,
 * SR512_MR rows a tile, up to 12 rows with B in place) where the CPU has
 * it, else AVX2 + FMA (sgemm_rows_avx2.c), else the plain-C one below with
 * fmaf — the same bits.  TFM_SGEMM_FORCE=portable or =avx2 in the
 * environment (or tfm_gemm_rows_force_portable) runs a lower kernel, so
 * tests cover each on any machine that has it.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "tfm/blas.h"
#include "sgemm_rows_kernel.h"

static sr_kernel_fn chosen;
static bool forced_portable;

void
sr_kernel_c(int K, const float *A, ptrdiff_t lda, int m, const float *b, ptrdiff_t ldb,
			int n, float *C, ptrdiff_t ldc, bool beta)
{
	for (int r = 0; r < m; r++)
	{
		const float *a = A + r * lda;
		float		acc[SR_NR];

		memset(acc, 0, sizeof(acc));
		for (int k = 0; k < K; k++)
		{
			const float *bk = b + k * ldb;

			for (int j = 0; j < n; j++)
				acc[j] = fmaf(a[k], bk[j], acc[j]);
		}
		for (int j = 0; j < n; j++)
			C[r * ldc + j] = beta ? acc[j] + C[r * ldc + j] : acc[j];
	}
}

static sr_kernel_fn
kernel(void)
{
	if (!chosen)
	{
		const char *env = getenv("TFM_SGEMM_FORCE");
		sr_kernel_fn k = sr_kernel_c;

#if defined(__x86_64__)
		if (!(env && strcmp(env, "portable") == 0) && !forced_portable &&
			__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
			k = sr_kernel_avx2;
		if (k == sr_kernel_avx2 && !(env && strcmp(env, "avx2") == 0) &&
			__builtin_cpu_supports("avx512f"))
			k = sr_kernel_avx512;
#else
		(void) env;
#endif
		chosen = k;				/* once decided: never a value on the way */
	}
	return chosen;
}

void
tfm_gemm_rows_force_portable(bool on)
{
	forced_portable = on;
	chosen = NULL;
}

const char *
tfm_gemm_rows_kernel(void)
{
	sr_kernel_fn k = kernel();

#if defined(__x86_64__)
	if (k == sr_kernel_avx512)
		return "avx512";
#endif
	return k == sr_kernel_c ? "portable" : "avx2";
}

/*
 * g ≤ pack_count(K, w) panels (each K × w, one after the other from dst) =
 * columns [j0, j0 + n) of B, zeros past n.  Row by row of B, all g panels'
 * columns at once: B's rows are ldb floats apart (6 KB at an encoder's d_ff
 * 1536), so one panel at a time read one cache line a page, K pages a
 * panel, the weights coming from memory once a call; g panels at a time
 * read g lines in a run a page, and the copy asks for the row SR_AHEAD on
 * itself (the bits are those of one panel at a time).
 */
#define SR_PACK 8				/* panels packed at a time, at most */
#define SR_PACK_BYTES (1 << 20) /* a thread's buffer, at most (one panel more if K is larger) */
#define SR_AHEAD 8

static int
pack_count(int K, int w)
{
	size_t		panel = (size_t) K * w * sizeof(float);
	size_t		g = SR_PACK_BYTES / panel;

	return g < 1 ? 1 : g > SR_PACK ? SR_PACK : (int) g;
}

static void
pack_panels(float *restrict dst, const float *B, ptrdiff_t ldb, int K, int j0, int n, int w)
{
	const int	g = (n + w - 1) / w;

	for (int k = 0; k < K; k++)
	{
		const float *src = B + (size_t) k * ldb + j0;

		/* the row SR_AHEAD on: its page is not one the prefetchers follow */
		if (k + SR_AHEAD < K)
			for (int c = 0; c < n; c += 16)
				__builtin_prefetch(src + (size_t) SR_AHEAD * ldb + c, 0, 0);
		for (int q = 0; q < g; q++)
		{
			float	   *d = dst + ((size_t) q * K + k) * w;
			int			m = n - q * w < w ? n - q * w : w;

			if (m == w)
				memcpy(d, src + q * w, sizeof(float) * w);
			else
			{
				memcpy(d, src + q * w, sizeof(float) * m);
				memset(d + m, 0, sizeof(float) * (w - m));
			}
		}
	}
}

/*
 * up to this many rows, a product on packed panels prefetches each next
 * panel during the current one's tiles (sr_tile_avx512's pf); above, a
 * panel's first tile is a small share of its tiles and the prefetches'
 * load slots cost more than they save
 */
#define PREFETCH_ROWS 256

/*
 * C = A·B + beta·C with B either in place (B, ldb) or packed once by
 * tfm_gemm_rows_pack (Bp: panels of SR_PW columns): the same chains, so
 * the same bits either way
 */
static void
rows_product(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
			 const float *Bp, const float *bias, float beta, float *C, int ldc)
{
	const sr_kernel_fn kern = kernel();
#if defined(__x86_64__)
	const bool	avx512 = kern == sr_kernel_avx512;
#else
	const bool	avx512 = false;
#endif
	/* the kernel's tile: rows a call, columns a panel (packed: SR_PW, the AVX2 and
	 * plain-C kernels taking each half in turn) */
	const int	mr = avx512 ? SR512_MR : SR_MR,
				nr = Bp ? SR_PW : avx512 ? SR512_NR : SR_NR;
	const int	panels = (N + nr - 1) / nr;
	int			threads = tfm_get_threads();
	bool		direct = M <= mr;
	float	   *buf = NULL;
	const int	gp = pack_count(K, nr);
#if defined(__x86_64__)
	const bool	wide = direct && kern == sr_kernel_avx2 && !Bp;
#endif
	bool		add = beta != 0.0f;

	if (M <= 0 || N <= 0)
		return;
	if (K <= 0)
	{
		for (int i = 0; i < M; i++)
			for (int j = 0; j < N; j++)
				C[(size_t) i * ldc + j] = add ? beta * C[(size_t) i * ldc + j] : 0.0f;
		return;
	}
	/* the kernels add C as it is: any other beta scales it first (exactly as ever) */
	if (add && beta != 1.0f)
		for (int i = 0; i < M; i++)
			for (int j = 0; j < N; j++)
				C[(size_t) i * ldc + j] *= beta;
	/*
	 * a bias: added by the AVX-512 kernels from packed panels after the chain,
	 * else copied into C first and added as beta 1 — one add either way
	 */
	if (bias && (add || !(avx512 && Bp)))
	{
		for (int i = 0; i < M; i++)
			for (int j = 0; j < N; j++)
				C[(size_t) i * ldc + j] = add ? C[(size_t) i * ldc + j] + bias[j] : bias[j];
		add = true;
		bias = NULL;
	}
	/*
	 * Fewer panels than threads: the team stays whole, the threads past
	 * the panels idle (p0 == p1).  A team smaller than the last one makes
	 * libgomp end the pool's other threads, and the next whole team starts
	 * new ones with the caller's signal mask, signals unblocked: a
	 * PostgreSQL backend's handlers could then run on them.
	 */
	if (panels < 2 || 2.0 * M * N * K < 2e5)
		threads = 1;
	if (!direct && !Bp)
		buf = aligned_alloc(64, (size_t) threads * gp * K * nr * sizeof(float));
#pragma omp parallel num_threads(threads) if(threads > 1)
	{
		int			t = omp_get_thread_num();
		int			p0 = (int) ((long) panels * t / threads),
					p1 = (int) ((long) panels * (t + 1) / threads);
		float	   *pk = buf ? buf + (size_t) t * gp * K * nr : NULL;
		int			packed0 = -1;	/* the first panel of those in pk */

#if defined(__x86_64__)
		if (avx512 && direct && p0 < p1)
		{
			/* a few rows: the thread's columns in passes over each row of B */
			int			j0 = p0 * nr,
						j1 = p1 * nr < N ? p1 * nr : N;

			if (Bp)
				sr_packed_avx512(K, A, lda, M, Bp + (size_t) p0 * K * nr, j1 - j0, C + j0, ldc,
								 add, bias ? bias + j0 : NULL);
			else
				sr_direct_avx512(K, A, lda, M, B + j0, ldb, j1 - j0, C + j0, ldc, add);
			p0 = p1;
		}
#endif
		for (int p = p0; p < p1; p++)
		{
			int			j0 = p * nr,
						n = N - j0 < nr ? N - j0 : nr;
			const float *bp = B + j0;
			ptrdiff_t	ldbp = ldb;
			sr_kernel_fn k = kern;

#if defined(__x86_64__)
			int			g = wide ? sr_wide_panels(M) : 1;

			if (g > 1 && p + g <= p1 && j0 + g * SR_NR <= N)
			{
				/* a few rows, B in place: g panels a pass over each row of B */
				sr_wide_avx2(K, A, lda, M, B + j0, ldb, C + j0, ldc, add);
				p += g - 1;
				continue;
			}
#endif
			if (Bp)
			{
				/* packed at load: zeros past N, so the kernels may read them */
				bp = Bp + (size_t) p * K * nr;
				ldbp = nr;
			}
			else if (pk)
			{
				/* up to gp of this thread's panels packed at once */
				if (packed0 < 0 || p >= packed0 + gp)
				{
					int			last = p + gp < p1 ? p + gp : p1;
					int			cols = (last * nr < N ? last * nr : N) - j0;

					pack_panels(pk, B, ldb, K, j0, cols, nr);
					packed0 = p;
				}
				bp = pk + (size_t) (p - packed0) * K * nr;
				ldbp = nr;
			}
			else if (n < nr)
				k = sr_kernel_c;	/* B in place: read no column past N (the same bits) */
			for (int i0 = 0; i0 < M; i0 += mr)
			{
				const float *a = A + (size_t) i0 * lda;
				float	   *c = C + (size_t) i0 * ldc + j0;
				int			m = M - i0 < mr ? M - i0 : mr;

#if defined(__x86_64__)
				if (Bp && avx512)
				{
					/*
					 * the thread's next panel fetched into L2 a share per row
					 * tile (a 128-row pass has 11 tiles a panel, and a panel's
					 * first tile waited on memory: a pass reads its weights once)
					 */
					const char *pf = NULL;
					ptrdiff_t	pfs = 0;

					if (p + 1 < p1 && M <= PREFETCH_ROWS)
					{
						size_t		bytes = (size_t) K * nr * sizeof(float),
									tiles = (size_t) (M + mr - 1) / mr,
									from = bytes * (size_t) (i0 / mr) / tiles,
									to = bytes * (size_t) (i0 / mr + 1) / tiles;

						pf = (const char *) (Bp + (size_t) (p + 1) * K * nr) + from;
						pfs = (ptrdiff_t) ((to - from) / (size_t) K);
					}
					sr_tile_avx512(K, a, lda, m, bp, n, c, ldc, add, bias ? bias + j0 : NULL,
								   pf, pfs);
				}
				else
#endif
				if (Bp && !avx512)
				{
					/* two halves of SR_NR columns (the second may be past N) */
					k(K, a, lda, m, bp, ldbp, n < SR_NR ? n : SR_NR, c, ldc, add);
					if (n > SR_NR)
						k(K, a, lda, m, bp + SR_NR, ldbp, n - SR_NR, c + SR_NR, ldc, add);
				}
				else
					k(K, a, lda, m, bp, ldbp, n, c, ldc, add);
			}
		}
	}
	free(buf);
}

void
tfm_gemm_rows(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
			  float beta, float *C, int ldc)
{
	rows_product(M, N, K, A, lda, B, ldb, NULL, NULL, beta, C, ldc);
}

size_t
tfm_gemm_rows_pack_bytes(int K, int N)
{
	return (size_t) ((N + SR_PW - 1) / SR_PW) * K * SR_PW * sizeof(float);
}

void
tfm_gemm_rows_pack(float *dst, const float *B, ptrdiff_t rs, ptrdiff_t cs, int K, int N)
{
	const int	panels = (N + SR_PW - 1) / SR_PW;

	for (int p = 0; p < panels; p++)
		for (int k = 0; k < K; k++)
		{
			float	   *d = dst + ((size_t) p * K + k) * SR_PW;
			const float *src = B + k * rs + (ptrdiff_t) p * SR_PW * cs;
			int			n = N - p * SR_PW < SR_PW ? N - p * SR_PW : SR_PW;

			if (cs == 1)
				memcpy(d, src, sizeof(float) * n);
			else
				for (int j = 0; j < n; j++)
					d[j] = src[j * cs];
			if (n < SR_PW)
				memset(d + n, 0, sizeof(float) * (SR_PW - n));
		}
}

void
tfm_gemm_rows_packed(int M, int N, int K, const float *A, int lda, const float *Bp,
					 const float *bias, float beta, float *C, int ldc)
{
	rows_product(M, N, K, A, lda, NULL, 0, Bp, bias, beta, C, ldc);
}
