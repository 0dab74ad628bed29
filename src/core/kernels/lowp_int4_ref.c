/*
 * lowp_int4_ref.c — the portable int4 kernels: the matrix-vector sums in
 * the order every path keeps (lowp_internal.h: 16 lanes of 8 values a quad
 * of blocks, each lane's exact int32 sum scaled by dw · da into its own
 * fp32 accumulator with one fma per quad, the lanes folded and added
 * pairwise at the end), and the dequantization of weight tiles for the
 * batched products (exact, so any order gives the same tile).
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

/* nibble t (0-31) of a block: low nibbles are values 0-15, high ones 16-31 */
static inline int
nibble(const uint8_t *blk, int t)
{
	return t < 16 ? blk[2 + t] & 0x0F : blk[2 + t - 16] >> 4;
}

TFM_HOT void
lowp_int4_ref_kernel(const lowp_int4_act *a, int h, const tfm_int4_weights *W,
					 int j0, int j1, float alpha, float beta, float *C, ptrdiff_t ldc)
{
	const int	kb = a->kb;

	for (int j = j0; j < j1; j++)
		for (int r = 0; r < h; r++)
		{
			const uint8_t *row = W->data + (size_t) j * kb * TFM_INT4_BLOCK_BYTES;
			float		acc[16] = {0},
						fold[8];
			float	   *c = C + (size_t) r * ldc + j;

			for (int p = 0; p < a->quads; p++)
			{
				size_t		rp = (size_t) r * a->quads + p;
				const int8_t *qlo = a->q + rp * 128,
						   *qhi = qlo + 64;

				for (int l = 0; l < 16; l++)
				{
					/* lane l: block 4p + l/4, its values t0 .. t0 + 3 and 16 + t0 .. 16 + t0 + 3 */
					int			b = 4 * p + l / 4,
								t0 = 4 * (l % 4);
					int32_t		sum = a->corr[rp * 16 + l];
					float		dw = 0.0f;

					if (b < kb)
					{
						const uint8_t *blk = row + (size_t) b * TFM_INT4_BLOCK_BYTES;
						uint16_t	hd;

						memcpy(&hd, blk, 2);
						dw = tfm_fp16_to_float(hd);
						for (int i = 0; i < 4; i++)
							sum += nibble(blk, t0 + i) * qlo[4 * l + i] +
								nibble(blk, 16 + t0 + i) * qhi[4 * l + i];
					}
					acc[l] = __builtin_fmaf((float) sum, dw * a->da[rp * 16 + l], acc[l]);
				}
			}
			for (int l = 0; l < 8; l++)
				fold[l] = acc[l] + acc[l + 8];
			*c = beta == 0.0f ? alpha * lanes_sum(fold) :
				__builtin_fmaf(alpha, lanes_sum(fold), beta * *c);
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
