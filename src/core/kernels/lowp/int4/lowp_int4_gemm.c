/*
 * lowp_int4_gemm.c — C = alpha · A · W + beta · C with W in Q4_0 blocks
 * (tfm_int4_pack), two ways:
 *
 * Quantized (decoding, M ≤ TFM_LOWP_GEMV_ROWS, on every path; any M
 * where a SIMD kernel runs: AVX512_VNNI, AVX2, NEON): A's rows quantized per
 * block of 32 into the work buffer, ROW_CHUNK rows at a time (their int8
 * values, block corrections and scales: lowp_int4_act), then the
 * dispatched kernel streams W's groups of columns, shared out among the
 * core's threads in contiguous runs so each weight is read once per
 * chunk, in address order; four rows a call, a group's blocks staying in
 * cache over the chunk's rows.  A row's result is the one it has alone.
 * Measured on Zen 4 (bench_lowp, 1024³, 1 thread): 257 GFLOP/s with
 * AVX512_VNNI, 125 with AVX2, against BLIS's fp32 107 and the dequantized
 * tiles' 105.
 *
 * Otherwise (the plain-C fallback, M > 4): W dequantized to fp32, a tile
 * of columns at a time (at most 4 MB), and multiplied by A with BLIS
 * (tfm_gemm, Bᵀ read in place), A keeping its fp32 values.  The tile is
 * dequantized by all the core's threads, each a contiguous share of its
 * columns, however small: BLIS's threads then pack it from their own
 * caches (one thread writing a 200 KB tile that two threads then read made
 * the classifier's products 6-8 % slower than fp32's at 2 threads;
 * shared, they are level).
 */
#include <string.h>

#include <omp.h>

#include "tfm/blas.h"
#include "../lowp_internal.h"

#define TILE_FLOATS (1 << 20)	/* a weight tile: 4 MB of fp32 */
#define ROW_CHUNK 64			/* rows of A quantized at a time */

/* columns per tile for rows of kp values: a multiple of 16, at least 16 */
static int
tile_columns(size_t kp)
{
	size_t		n = TILE_FLOATS / kp / 16 * 16;

	return n < 16 ? 16 : (int) n;
}

/* the matrix-vector path's buffer (lowp_int4_act): q, corr, da for M rows of kb blocks */
static size_t
act_bytes(int M, int kb, size_t *corr_off, size_t *da_off)
{
	size_t		blocks = (size_t) (M > 0 ? M : 1) * (kb > 0 ? kb : 1);

	*corr_off = lowp_round_up(blocks * TFM_INT4_BLOCK, 64);
	*da_off = *corr_off + lowp_round_up(blocks * sizeof(int32_t), 64);
	return *da_off + blocks * sizeof(float);
}

size_t
tfm_int4_work_bytes(int M, int K)
{
	int			kb = ((K > 0 ? K : 1) + TFM_INT4_BLOCK - 1) / TFM_INT4_BLOCK;
	size_t		kp = (size_t) kb * TFM_INT4_BLOCK,
				corr_off,
				da_off,
				act = lowp_round_up(act_bytes(M < ROW_CHUNK ? M : ROW_CHUNK, kb, &corr_off, &da_off),
									LOWP_ALIGN),
				tile;

	if (M <= TFM_LOWP_GEMV_ROWS)
		return act;
	/* a whole tile's bytes (so the figure grows with K), or rows quantized: either path */
	tile = lowp_round_up((kp * 16 > TILE_FLOATS ? kp * 16 : TILE_FLOATS) * sizeof(float), LOWP_ALIGN);
	return tile > act ? tile : act;
}

/* row x (K values) quantized per block: its kb·32 values, scales and corrections */
static void
quantize_blocks(int8_t *q, int32_t *corr, float *da, const float *x, int K, int kb)
{
	tfm_int4_quantize_row(q, da, x, K);
	for (int b = 0; b < kb; b++)
	{
		int32_t		s = 0;

		for (int t = 0; t < TFM_INT4_BLOCK; t++)
			s += q[b * TFM_INT4_BLOCK + t];
		corr[b] = -8 * s;
	}
}

/*
 * C = alpha · A · W + beta · C through the dispatched kernel: A's rows
 * quantized ROW_CHUNK at a time, then each thread's contiguous run of
 * groups against them (every weight read once per chunk, in address
 * order), four rows a call, a group's blocks staying in cache over the
 * chunk's rows.
 */
static void
quantized(int M, int N, int K, float alpha, const float *A, ptrdiff_t lda,
		  const tfm_int4_weights *W, float beta, float *C, ptrdiff_t ldc, void *work)
{
	const int	kb = W->kb,
				threads = tfm_get_threads(),
				groups = (N + TFM_INT4_GROUP - 1) / TFM_INT4_GROUP;
	const bool	parallel = threads > 1 && 2.0 * M * N * K > 1e5 && groups > 1;
	size_t		corr_off,
				da_off;
	lowp_int4_kernel kernel = lowp_int4_chosen();
	int8_t	   *q = work;
	int32_t    *corr;
	float	   *da;

	act_bytes(M < ROW_CHUNK ? M : ROW_CHUNK, kb, &corr_off, &da_off);
	corr = (int32_t *) ((char *) work + corr_off);
	da = (float *) ((char *) work + da_off);
	for (int r0 = 0; r0 < M; r0 += ROW_CHUNK)
	{
		const int	m = M - r0 < ROW_CHUNK ? M - r0 : ROW_CHUNK;

#pragma omp parallel num_threads(threads) if(parallel)
		{
			int			t = omp_get_thread_num(),
						n = omp_get_num_threads(),
						g0 = (int) ((long) groups * t / n),
						g1 = (int) ((long) groups * (t + 1) / n);

#pragma omp for schedule(static)
			for (int r = 0; r < m; r++)
				quantize_blocks(q + (size_t) r * kb * TFM_INT4_BLOCK, corr + (size_t) r * kb,
								da + (size_t) r * kb, A + (size_t) (r0 + r) * lda, K, kb);
			if (m <= TFM_LOWP_GEMV_ROWS && g1 > g0)
				kernel(&(lowp_int4_act) {q, corr, da, kb}, m, W, g0, g1, alpha, beta,
					   C + (size_t) r0 * ldc, ldc);
			else
				for (int g = g0; g < g1; g++)
					for (int h0 = 0; h0 < m; h0 += TFM_LOWP_GEMV_ROWS)
						kernel(&(lowp_int4_act) {q + (size_t) h0 * kb * TFM_INT4_BLOCK,
									corr + (size_t) h0 * kb, da + (size_t) h0 * kb, kb},
							   m - h0 < TFM_LOWP_GEMV_ROWS ? m - h0 : TFM_LOWP_GEMV_ROWS, W, g, g + 1,
							   alpha, beta, C + (size_t) (r0 + h0) * ldc, ldc);
		}
	}
}

void
tfm_int4_gemm(int M, int N, int K, float alpha,
			  const float *A, ptrdiff_t lda,
			  const tfm_int4_weights *W,
			  float beta, float *C, ptrdiff_t ldc, void *work)
{
	size_t		kp;
	int			nc,
				threads;
	float	   *tile = work;

	if (lowp_gemm_trivial(M, N, K, beta, C, ldc))
		return;
	if (M <= TFM_LOWP_GEMV_ROWS || lowp_int4_chosen() != lowp_int4_ref_kernel)
	{
		quantized(M, N, K, alpha, A, lda, W, beta, C, ldc, work);
		return;
	}
	kp = (size_t) W->kb * TFM_INT4_BLOCK;
	nc = tile_columns(kp);
	threads = tfm_get_threads();
	for (int j0 = 0; j0 < N; j0 += nc)
	{
		int			n = N - j0 < nc ? N - j0 : nc,
					parts = n / 16 > 0 ? n / 16 : 1;

#pragma omp parallel for num_threads(threads) if(threads > 1 && parts > 1) schedule(static)
		for (int p = 0; p < parts; p++)
		{
			int			c0 = p * 16,
						c1 = p == parts - 1 ? n : c0 + 16;

			lowp_int4_dequantize(tile + (size_t) c0 * kp, W, j0 + c0, c1 - c0);
		}
		tfm_gemm(false, true, M, n, K, alpha, A, (int) lda, tile, (int) kp, beta, C + j0, (int) ldc);
	}
}

/* the quantized path at every M: a row's result the one it has alone */
void
tfm_int4_gemm_rows(int M, int N, int K, float alpha, const float *A, ptrdiff_t lda,
				   const tfm_int4_weights *W, float beta, float *C, ptrdiff_t ldc, void *work)
{
	if (lowp_gemm_trivial(M, N, K, beta, C, ldc))
		return;
	quantized(M, N, K, alpha, A, lda, W, beta, C, ldc, work);
}
