/*
 * lowp_int4_ref.c — the portable int4 kernels: the matrix-vector sums in
 * the order every path keeps (include/tfm/lowp.h: 8 lanes of 4 elements a
 * block, each lane's exact int32 sum scaled by d_w · d_a into its own fp32
 * accumulator with one fma per block, the lanes added pairwise at the
 * end), and the dequantization of weight tiles for the batched products
 * (exact, so any order gives the same tile).
 */
#include <string.h>

#include "lowp_internal.h"
#include "vecmath.h"

/* the 8 lanes added as the SIMD paths add them: (0+4, 2+6) + (1+5, 3+7) */
static inline float
lanes_sum(const float *a)
{
	float		s0 = a[0] + a[4],
				s1 = a[1] + a[5],
				s2 = a[2] + a[6],
				s3 = a[3] + a[7];

	return (s0 + s2) + (s1 + s3);
}

TFM_HOT void
lowp_int4_ref_kernel(const lowp_int4_act *a, int h, const tfm_int4_weights *W,
					 int j0, int j1, float alpha, float beta, float *C, ptrdiff_t ldc)
{
	const int	kb = a->kb;

	for (int j = j0; j < j1; j++)
		for (int r = 0; r < h; r++)
		{
			const uint8_t *blk = W->data + (size_t) j * kb * TFM_INT4_BLOCK_BYTES;
			const int8_t *q = a->q + (size_t) r * kb * TFM_INT4_BLOCK;
			const int32_t *corr = a->corr + (size_t) r * kb * 8;
			float		acc[8] = {0},
						s;
			float	   *c = C + (size_t) r * ldc + j;

			for (int b = 0; b < kb; b++, blk += TFM_INT4_BLOCK_BYTES)
			{
				uint16_t	hd;
				float		d;
				uint8_t		u[TFM_INT4_BLOCK];

				memcpy(&hd, blk, 2);
				d = tfm_fp16_to_float(hd) * a->d[(size_t) r * kb + b];
				for (int t = 0; t < 16; t++)
				{
					u[t] = blk[2 + t] & 0x0F;
					u[16 + t] = blk[2 + t] >> 4;
				}
				for (int l = 0; l < 8; l++)
				{
					int32_t		sum = corr[(size_t) b * 8 + l];

					for (int t = 0; t < 4; t++)
						sum += u[4 * l + t] * q[(size_t) b * TFM_INT4_BLOCK + 4 * l + t];
					acc[l] = __builtin_fmaf((float) sum, d, acc[l]);
				}
			}
			s = lanes_sum(acc);
			*c = beta == 0.0f ? alpha * s : __builtin_fmaf(alpha, s, beta * *c);
		}
}

TFM_HOT void
lowp_int4_dequantize(float *dst, const tfm_int4_weights *W, int j0, int n)
{
	const size_t kp = (size_t) W->kb * TFM_INT4_BLOCK;

	for (int jj = 0; jj < n; jj++)
	{
		const uint8_t *blk = W->data + (size_t) (j0 + jj) * W->kb * TFM_INT4_BLOCK_BYTES;
		float	   *out = dst + (size_t) jj * kp;

		for (int b = 0; b < W->kb; b++, blk += TFM_INT4_BLOCK_BYTES, out += TFM_INT4_BLOCK)
		{
			uint16_t	hd;
			float		d;

			memcpy(&hd, blk, 2);
			d = tfm_fp16_to_float(hd);
			for (int t = 0; t < 16; t++)
			{
				out[t] = d * (float) ((blk[2 + t] & 0x0F) - 8);
				out[16 + t] = d * (float) ((blk[2 + t] >> 4) - 8);
			}
		}
	}
}
