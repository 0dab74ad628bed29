/*
 * lowp_int4_gemm.c — C = alpha · A · W + beta · C with W in Q4_0 blocks
 * (tfm_int4_pack), two ways:
 *
 * M ≤ TFM_LOWP_GEMV_ROWS (decoding): A's rows quantized per block of 32
 * into the work buffer (their int8 values, block corrections and scales:
 * lowp_int4_act), then the dispatched kernel streams W's groups of
 * columns, shared out among the core's threads in contiguous runs so each
 * weight is read once, in address order.
 *
 * Larger M (batched, compute-bound): W dequantized to fp32, a tile of
 * columns at a time (at most 4 MB), and multiplied by A with BLIS
 * (tfm_gemm, Bᵀ read in place).  The tile is always dequantized by all
 * the core's threads, each a contiguous share of its columns, however
 * small: BLIS's threads then pack it from their own caches (one thread
 * writing a 200 KB tile that two threads then read made the classifier's
 * products 6-8 % slower than fp32's at 2 threads; shared, they are level).  A 4-bit product on AVX2
 * (vpmaddubsw, a scale per 32 values) does fewer useful operations a
 * cycle than BLIS's fp32 FMAs, so this is the faster way there, and A
 * keeps its fp32 values.  Every path dequantizes to the same tile.
 */
#include <string.h>

#include <omp.h>

#include "tfm/blas.h"
#include "lowp_internal.h"

#define TILE_FLOATS (1 << 20)	/* a weight tile: 4 MB of fp32 */

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
				da_off;

	if (M <= TFM_LOWP_GEMV_ROWS)
		return lowp_round_up(act_bytes(M, kb, &corr_off, &da_off), LOWP_ALIGN);
	/* a whole tile's bytes (so the figure grows with K) */
	return lowp_round_up((kp * 16 > TILE_FLOATS ? kp * 16 : TILE_FLOATS) * sizeof(float), LOWP_ALIGN);
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

static void
gemv(int M, int N, int K, float alpha, const float *A, ptrdiff_t lda,
	 const tfm_int4_weights *W, float beta, float *C, ptrdiff_t ldc, void *work)
{
	const int	kb = W->kb,
				threads = tfm_get_threads(),
				groups = (N + TFM_INT4_GROUP - 1) / TFM_INT4_GROUP;
	const double flops = 2.0 * M * N * K;
	size_t		corr_off,
				da_off;
	lowp_int4_kernel kernel = lowp_int4_chosen();
	lowp_int4_act act;
	int8_t	   *q = work;
	int32_t    *corr;
	float	   *da;

	act_bytes(M, kb, &corr_off, &da_off);
	corr = (int32_t *) ((char *) work + corr_off);
	da = (float *) ((char *) work + da_off);
	for (int r = 0; r < M; r++)
		quantize_blocks(q + (size_t) r * kb * TFM_INT4_BLOCK, corr + (size_t) r * kb,
						da + (size_t) r * kb, A + (size_t) r * lda, K, kb);
	act = (lowp_int4_act) {q, corr, da, kb};
	/* each thread a contiguous run of groups: every weight read once, in address order */
	if (threads > 1 && flops > 1e5 && groups > 1)
	{
#pragma omp parallel num_threads(threads)
		{
			int			t = omp_get_thread_num(),
						n = omp_get_num_threads(),
						g0 = (int) ((long) groups * t / n),
						g1 = (int) ((long) groups * (t + 1) / n);

			if (g1 > g0)
				kernel(&act, M, W, g0, g1, alpha, beta, C, ldc);
		}
	}
	else
		kernel(&act, M, W, 0, groups, alpha, beta, C, ldc);
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
	void		(*dequantize) (float *, const tfm_int4_weights *, int, int);

	if (lowp_gemm_trivial(M, N, K, beta, C, ldc))
		return;
	if (M <= TFM_LOWP_GEMV_ROWS)
	{
		gemv(M, N, K, alpha, A, lda, W, beta, C, ldc, work);
		return;
	}
	kp = (size_t) W->kb * TFM_INT4_BLOCK;
	nc = tile_columns(kp);
	threads = tfm_get_threads();
#if defined(__x86_64__)
	dequantize = lowp_int4_fast() || lowp_int4_avx2() ? lowp_int4_avx2_dequantize :
		lowp_int4_dequantize;
#else
	dequantize = lowp_int4_dequantize;	/* (no AVX2 outside x86-64) */
#endif
	for (int j0 = 0; j0 < N; j0 += nc)
	{
		int			n = N - j0 < nc ? N - j0 : nc,
					parts = n / 16 > 0 ? n / 16 : 1;

#pragma omp parallel for num_threads(threads) if(threads > 1 && parts > 1) schedule(static)
		for (int p = 0; p < parts; p++)
		{
			int			c0 = p * 16,
						c1 = p == parts - 1 ? n : c0 + 16;

			dequantize(tile + (size_t) c0 * kp, W, j0 + c0, c1 - c0);
		}
		tfm_gemm(false, true, M, n, K, alpha, A, (int) lda, tile, (int) kp, beta, C + j0, (int) ldc);
	}
}
