/*
 * lowp_int4_ref.c — the portable int4 kernels: the matrix-vector sums in
 * the order every path keeps (lowp_internal.h: per column and block the
 * exact int32 sum scaled by dw · da into the column's one fp32 sum with an
 * fma, block after block), and the dequantization of weight tiles for the
 * batched products (exact, so any order gives the same tile).
 */
#include <string.h>

#include "../lowp_internal.h"
#include "../../vecmath.h"

/* nibble t (0-31) of a GGUF block: low nibbles are values 0-15, high ones 16-31 */
static inline int
nibble(const uint8_t *blk, int t)
{
	return t < 16 ? blk[2 + t] & 0x0F : blk[2 + t - 16] >> 4;
}

/* a GGUF block's scale */
static inline float
block_scale(const uint8_t *blk)
{
	uint16_t	h;

	memcpy(&h, blk, 2);
	return tfm_fp16_to_float(h);
}

TFM_HOT void
lowp_int4_ref_kernel(const lowp_int4_act *a, int h, const tfm_int4_weights *W,
					 int g0, int g1, float alpha, float beta, float *C, ptrdiff_t ldc)
{
	const int	kb = a->kb,
				j1 = g1 * TFM_INT4_GROUP < W->N ? g1 * TFM_INT4_GROUP : W->N;

	/* rows four at a time, each column's blocks read once for them */
	for (int r0 = 0; r0 < h; r0 += 4)
	{
		const int	rows = h - r0 < 4 ? h - r0 : 4;

		for (int j = g0 * TFM_INT4_GROUP; j < j1; j++)
		{
			float		acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};

			for (int b = 0; b < kb; b++)
			{
				uint8_t		blk[TFM_INT4_BLOCK_BYTES];
				int			w[TFM_INT4_BLOCK];
				float		dw;

				tfm_int4_get_block(W, j, b, blk);
				dw = block_scale(blk);
				for (int t = 0; t < TFM_INT4_BLOCK; t++)
					w[t] = nibble(blk, t);
				for (int r = 0; r < rows; r++)
				{
					const size_t rb = (size_t) (r0 + r) * kb + b;
					const int8_t *qa = a->q + rb * TFM_INT4_BLOCK;
					int32_t		sum = a->corr[rb];

					for (int t = 0; t < TFM_INT4_BLOCK; t++)
						sum += w[t] * qa[t];
					acc[r] = __builtin_fmaf((float) sum, dw * a->da[rb], acc[r]);
				}
			}
			for (int r = 0; r < rows; r++)
			{
				float	   *c = C + (size_t) (r0 + r) * ldc + j;

				*c = beta == 0.0f ? alpha * acc[r] : __builtin_fmaf(alpha, acc[r], beta * *c);
			}
		}
	}
}

TFM_HOT void
lowp_int4_dequantize(float *dst, const tfm_int4_weights *W, int j0, int n)
{
	const size_t kp = (size_t) W->kb * TFM_INT4_BLOCK;

	for (int jj = 0; jj < n; jj++)
	{
		float	   *out = dst + (size_t) jj * kp;

		for (int b = 0; b < W->kb; b++, out += TFM_INT4_BLOCK)
		{
			uint8_t		blk[TFM_INT4_BLOCK_BYTES];
			float		d;

			tfm_int4_get_block(W, j0 + jj, b, blk);
			d = block_scale(blk);
			for (int t = 0; t < TFM_INT4_BLOCK; t++)
				out[t] = d * (float) (nibble(blk, t) - 8);
		}
	}
}
