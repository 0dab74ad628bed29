/*
 * lowp_int4_gemm.c — C = alpha · A · W + beta · C with W in Q4_0 blocks
 * (tfm_int4_pack), two ways:
 *
 * M ≤ TFM_LOWP_GEMV_ROWS (decoding): A's rows quantized per block of 32
 * into the work buffer (their int8 values, scales and lane corrections:
 * lowp_int4_act), then the dispatched kernel streams W's rows, the
 * columns shared out among the core's threads in contiguous runs so each
 * weight is read once, in address order.
 *
 * Larger M (batched, compute-bound): W dequantized to fp32, a tile of
 * columns at a time (about 512 KB, so it stays in L2), and multiplied by
 * A with BLIS (tfm_gemm, Bᵀ read in place).  A 4-bit product on AVX2
 * (vpmaddubsw, a scale per 32 values) does fewer useful operations a
 * cycle than BLIS's fp32 FMAs, so this is the faster way there, and A
 * keeps its fp32 values.  Every path dequantizes to the same tile.
 */
#include "tfm/blas.h"
#include "lowp_internal.h"

#define TILE_FLOATS (1 << 17)	/* a weight tile: 512 KB of fp32 */

/* columns per tile for rows of kp values: a multiple of 16, at least 16 */
static int
tile_columns(size_t kp)
{
	size_t		n = TILE_FLOATS / kp / 16 * 16;

	return n < 16 ? 16 : (int) n;
}

/* the matrix-vector path's buffer: q (M·kp bytes), d (M·kb floats), corr (M·kb·8 int32) */
static size_t
act_bytes(int M, int kb, size_t *d_off, size_t *corr_off)
{
	size_t		rows = (size_t) (M > 0 ? M : 1),
				q = lowp_round_up(rows * kb * TFM_INT4_BLOCK, LOWP_ALIGN),
				d = lowp_round_up(rows * kb * sizeof(float), LOWP_ALIGN);

	*d_off = q;
	*corr_off = q + d;
	return q + d + lowp_round_up(rows * kb * 8 * sizeof(int32_t), LOWP_ALIGN);
}

size_t
tfm_int4_work_bytes(int M, int K)
{
	int			kb = ((K > 0 ? K : 1) + TFM_INT4_BLOCK - 1) / TFM_INT4_BLOCK;
	size_t		kp = (size_t) kb * TFM_INT4_BLOCK,
				d_off,
				corr_off;

	if (M <= TFM_LOWP_GEMV_ROWS)
		return act_bytes(M, kb, &d_off, &corr_off);
	return lowp_round_up((size_t) tile_columns(kp) * kp * sizeof(float), LOWP_ALIGN);
}

static void
gemv(int M, int N, int K, float alpha, const float *A, ptrdiff_t lda,
	 const tfm_int4_weights *W, float beta, float *C, ptrdiff_t ldc, void *work)
{
	const int	kb = W->kb,
				threads = tfm_get_threads(),
				chunk = 16,
				chunks = (N + chunk - 1) / chunk;
	const double flops = 2.0 * M * N * K;
	size_t		d_off,
				corr_off;
	lowp_int4_kernel kernel = lowp_int4_chosen();
	lowp_int4_act act;
	int8_t	   *q = work;
	float	   *d;
	int32_t    *corr;

	act_bytes(M, kb, &d_off, &corr_off);
	d = (float *) ((char *) work + d_off);
	corr = (int32_t *) ((char *) work + corr_off);
	for (int r = 0; r < M; r++)
	{
		int8_t	   *qr = q + (size_t) r * kb * TFM_INT4_BLOCK;
		int32_t    *cr = corr + (size_t) r * kb * 8;

		tfm_int4_quantize_row(qr, d + (size_t) r * kb, A + (size_t) r * lda, K);
		for (int l = 0; l < kb * 8; l++)
			cr[l] = -8 * (qr[4 * l] + qr[4 * l + 1] + qr[4 * l + 2] + qr[4 * l + 3]);
	}
	act = (lowp_int4_act) {q, d, corr, kb};
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
	for (int j0 = 0; j0 < N; j0 += nc)
	{
		int			n = N - j0 < nc ? N - j0 : nc,
					parts = n / 16 > 0 ? n / 16 : 1;

#pragma omp parallel for num_threads(threads) if(threads > 1 && (double) n * kp > 1e5) schedule(static)
		for (int p = 0; p < parts; p++)
		{
			int			c0 = p * 16,
						c1 = p == parts - 1 ? n : c0 + 16;

			lowp_int4_dequantize(tile + (size_t) c0 * kp, W, j0 + c0, c1 - c0);
		}
		tfm_gemm(false, true, M, n, K, alpha, A, (int) lda, tile, (int) kp, beta, C + j0, (int) ldc);
	}
}
