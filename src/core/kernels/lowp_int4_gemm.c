/*
 * lowp_int4_gemm.c — C = alpha · A · W + beta · C with W in Q4_0 blocks
 * (tfm_int4_pack), two ways:
 *
 * M ≤ TFM_LOWP_GEMV_ROWS (decoding): A's rows quantized per block of 32
 * into the work buffer (their int8 values, lane corrections and scales in
 * quads of blocks: lowp_int4_act), then the dispatched kernel streams W's rows, the
 * columns shared out among the core's threads in contiguous runs so each
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

/* the matrix-vector path's buffer (lowp_int4_act): q, corr, da for M rows of quads */
static size_t
act_bytes(int M, int quads, size_t *corr_off, size_t *da_off)
{
	size_t		lanes = (size_t) (M > 0 ? M : 1) * (quads > 0 ? quads : 1) * 16;

	*corr_off = lanes * 8;		/* q: 8 bytes a lane */
	*da_off = *corr_off + lanes * sizeof(int32_t);
	return *da_off + lanes * sizeof(float);
}

size_t
tfm_int4_work_bytes(int M, int K)
{
	int			kb = ((K > 0 ? K : 1) + TFM_INT4_BLOCK - 1) / TFM_INT4_BLOCK;
	size_t		kp = (size_t) kb * TFM_INT4_BLOCK,
				corr_off,
				da_off;

	if (M <= TFM_LOWP_GEMV_ROWS)
		return lowp_round_up(act_bytes(M, (kb + 3) / 4, &corr_off, &da_off), LOWP_ALIGN);
	/* a whole tile's bytes (so the figure grows with K) */
	return lowp_round_up((kp * 16 > TILE_FLOATS ? kp * 16 : TILE_FLOATS) * sizeof(float), LOWP_ALIGN);
}

/*
 * row x (K values) quantized per block into the quad layout of
 * lowp_internal.h: q, corr and da of its quads (zeros past the last block)
 */
static void
quantize_quads(int8_t *q, int32_t *corr, float *da, const float *x, int K, int quads)
{
	memset(q, 0, (size_t) quads * 128);
	memset(corr, 0, (size_t) quads * 16 * sizeof(int32_t));
	memset(da, 0, (size_t) quads * 16 * sizeof(float));
	for (int b = 0; b * TFM_INT4_BLOCK < K; b++)
	{
		int			p = b / 4,
					jb = b % 4,
					k0 = b * TFM_INT4_BLOCK;
		int8_t		v[TFM_INT4_BLOCK];
		float		d;

		tfm_int4_quantize_row(v, &d, x + k0, K - k0 < TFM_INT4_BLOCK ? K - k0 : TFM_INT4_BLOCK);
		for (int t = 0; t < TFM_INT4_BLOCK; t++)
		{
			/* values 0-15 of block jb in lanes 4jb .. 4jb + 3 of the low half, 16-31 of the high */
			int			l = 4 * jb + (t % 16) / 4;

			q[(size_t) p * 128 + (t >= 16 ? 64 : 0) + 16 * jb + t % 16] = v[t];
			corr[(size_t) p * 16 + l] -= 8 * v[t];
			da[(size_t) p * 16 + l] = d;
		}
	}
}

static void
gemv(int M, int N, int K, float alpha, const float *A, ptrdiff_t lda,
	 const tfm_int4_weights *W, float beta, float *C, ptrdiff_t ldc, void *work)
{
	const int	quads = (W->kb + 3) / 4,
				threads = tfm_get_threads(),
				chunk = 16,
				chunks = (N + chunk - 1) / chunk;
	const double flops = 2.0 * M * N * K;
	size_t		corr_off,
				da_off;
	lowp_int4_kernel kernel = lowp_int4_chosen();
	lowp_int4_act act;
	int8_t	   *q = work;
	int32_t    *corr;
	float	   *da;

	act_bytes(M, quads, &corr_off, &da_off);
	corr = (int32_t *) ((char *) work + corr_off);
	da = (float *) ((char *) work + da_off);
	for (int r = 0; r < M; r++)
		quantize_quads(q + (size_t) r * quads * 128, corr + (size_t) r * quads * 16,
					   da + (size_t) r * quads * 16, A + (size_t) r * lda, K, quads);
	act = (lowp_int4_act) {q, corr, da, W->kb, quads};
#pragma omp parallel for num_threads(threads) if(threads > 1 && flops > 1e5) schedule(static)
	for (int t = 0; t < chunks; t++)
	{
		int			j0 = t * chunk,
					j1 = j0 + chunk < N ? j0 + chunk : N;

		kernel(&act, M, W, j0, j1, alpha, beta, C, ldc);
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
