/*
 * lowp_int8_gemm.c — C = alpha · A · W + beta · C with W quantized per
 * column (tfm_int8_pack) and A quantized here, per row, into the caller's
 * work buffer (the rows' scales, then A's panels of unsigned bytes
 * a + 128); the kernel is the dispatched one (lowp_dispatch.c).
 *
 * The loops are lowp_bf16_gemm.c's without K blocking: each kernel call
 * sums all of K in int32 before scaling (so every path gives the same
 * bits).  A task's A block (LOWP_MC rows × K bytes) and one weight panel
 * (32 × K bytes) stay in L2 for the model's K (≤ a few thousand).
 */
#include "tfm/blas.h"
#include "lowp_internal.h"
#include "vecmath.h"

static size_t
scales_bytes(int M)
{
	return lowp_round_up(lowp_round_up(M > 0 ? M : 1, LOWP_MR) * sizeof(float), LOWP_ALIGN);
}

size_t
tfm_int8_work_bytes(int M, int K)
{
	size_t		rows = M <= TFM_LOWP_GEMV_ROWS ? (size_t) (M > 0 ? M : 1) :
		lowp_round_up(M, LOWP_MR),
				quads = lowp_round_up(K > 0 ? K : 1, 4) / 4;

	return scales_bytes(M) + lowp_round_up(rows * quads * sizeof(uint32_t), LOWP_ALIGN);
}

#define PACK_CHUNK 1024		/* activations quantized at a time, contiguously */

/*
 * rows [r0, r0 + h) of A quantized into one panel of height h (rows past M
 * and k past K: zero activations, i.e. bytes 128); their scales to rs[].
 * Each row is quantized PACK_CHUNK values at a time into a contiguous
 * buffer (a loop the compiler vectorizes), then spread to its panel slots.
 */
TFM_HOT static void
pack_panel(uint32_t *restrict dst, float *rs, int h, const float *A, ptrdiff_t lda,
		   int M, int K, int r0)
{
	int			quads = (K + 3) / 4;
	uint32_t	buf[PACK_CHUNK / 4];
	uint8_t    *b = (uint8_t *) buf;

	for (int r = 0; r < h; r++)
	{
		const float *x = A + (size_t) (r0 + r) * lda;
		float		mx = 0.0f,
					s;

		if (r0 + r >= M)
		{
			for (int p = 0; p < quads; p++)
				dst[(size_t) p * h + r] = 0x80808080u;
			rs[r] = 0.0f;
			continue;
		}
		for (int k = 0; k < K; k++)
		{
			float		v = __builtin_fabsf(x[k]);

			mx = v > mx ? v : mx;
		}
		s = mx / 127.0f;
		rs[r] = s;
		for (int k0 = 0; k0 < quads * 4; k0 += PACK_CHUNK)
		{
			int			n = quads * 4 - k0 < PACK_CHUNK ? quads * 4 - k0 : PACK_CHUNK,
						real = K - k0 < n ? K - k0 : n;

			if (s > 0.0f)
				for (int k = 0; k < real; k++)
					b[k] = (uint8_t) (lowp_quantize(x[k0 + k], s) + 128);
			else
				for (int k = 0; k < real; k++)
					b[k] = 128;
			for (int k = real; k < n; k++)
				b[k] = 128;
			for (int p = 0; p < n / 4; p++)
				dst[(size_t) (k0 / 4 + p) * h + r] = buf[p];
		}
	}
}

void
tfm_int8_gemm(int M, int N, int K, float alpha,
			  const float *A, ptrdiff_t lda,
			  const tfm_int8_weights *W,
			  float beta, float *C, ptrdiff_t ldc, void *work)
{
	lowp_int8_kernel kernel = lowp_int8_chosen();
	const uint32_t *w = (const uint32_t *) W->data;
	float	   *rs = work;
	uint32_t   *a = (uint32_t *) ((char *) work + scales_bytes(M));
	int			quads = W->kp / 4,
				threads = tfm_get_threads();
	double		flops = 2.0 * M * N * K;

	if (lowp_gemm_trivial(M, N, K, beta, C, ldc))
		return;

	if (M <= TFM_LOWP_GEMV_ROWS)
	{
		int			panels = (N + LOWP_NR - 1) / LOWP_NR;

		pack_panel(a, rs, M, A, lda, M, K, 0);
#pragma omp parallel for num_threads(threads) if(threads > 1 && flops > 1e5) schedule(static)
		for (int q = 0; q < panels; q++)
		{
			int			j0 = q * LOWP_NR;

			kernel(quads, a, M, w + (size_t) j0 * quads, C + j0, ldc,
				   M, N - j0 < LOWP_NR ? N - j0 : LOWP_NR, alpha, rs,
				   W->scale + j0, W->colsum + j0, beta);
		}
		return;
	}

	{
		int			mpanels = (M + LOWP_MR - 1) / LOWP_MR,
					mt = (M + LOWP_MC - 1) / LOWP_MC,
					nt = (N + LOWP_NC - 1) / LOWP_NC;

#pragma omp parallel num_threads(threads) if(threads > 1 && flops > 1e6)
		{
#pragma omp for schedule(static)
			for (int i = 0; i < mpanels; i++)
				pack_panel(a + (size_t) i * LOWP_MR * quads, rs + i * LOWP_MR, LOWP_MR,
						   A, lda, M, K, i * LOWP_MR);
#pragma omp for schedule(dynamic)
			for (int t = 0; t < mt * nt; t++)
			{
				lowp_tile	tile = lowp_tile_of(t, mt, M, N);

				for (int j = tile.j0; j < tile.j1; j += LOWP_NR)
					for (int i = tile.i0; i < tile.i1; i += LOWP_MR)
						kernel(quads, a + (size_t) i * quads, LOWP_MR,
							   w + (size_t) j * quads, C + (size_t) i * ldc + j, ldc,
							   tile.i1 - i < LOWP_MR ? tile.i1 - i : LOWP_MR,
							   tile.j1 - j < LOWP_NR ? tile.j1 - j : LOWP_NR, alpha, rs + i,
							   W->scale + j, W->colsum + j, beta);
			}
		}
	}
}
