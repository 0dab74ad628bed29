/*
 * lowp_quant.c — int8 quantization: weights per output channel, packed into
 * the kernels' panels (LOWP_NR columns, 4 consecutive k per 32-bit slot)
 * with each column's scale and sum, and activations per row.
 *
 * Both round to nearest even (rintf in the default rounding mode) and clamp
 * to [-127, 127], so −128 never occurs and a + 128 fits an unsigned byte.
 */
#include <math.h>
#include <string.h>

#include "../lowp_internal.h"

/* the packed weight buffer: quantized panels, then scales, then sums */
static void
int8_layout(int K, int N, size_t *data_bytes, size_t *vec_bytes)
{
	size_t		kp = lowp_round_up(K > 0 ? K : 1, 4),
				np = lowp_round_up(N > 0 ? N : 1, LOWP_NR);

	*data_bytes = lowp_round_up(kp * np, LOWP_ALIGN);
	*vec_bytes = lowp_round_up(np * 4, LOWP_ALIGN);
}

size_t
tfm_int8_pack_bytes(int K, int N)
{
	size_t		data,
				vec;

	int8_layout(K, N, &data, &vec);
	return data + 2 * vec;
}

void
tfm_int8_view(tfm_int8_weights *w, void *buf, int K, int N)
{
	size_t		data,
				vec;
	char	   *b = buf;

	int8_layout(K, N, &data, &vec);
	*w = (tfm_int8_weights) {(int8_t *) b, (float *) (b + data), (int32_t *) (b + data + vec),
	K, N, (int) lowp_round_up(K > 0 ? K : 0, 4)};
}

void
tfm_int8_pack(tfm_int8_weights *w, void *buf, const float *W,
			  ptrdiff_t rs, ptrdiff_t cs, int K, int N)
{
	int			np = (int) lowp_round_up(N > 0 ? N : 0, LOWP_NR);

	tfm_int8_view(w, buf, K, N);
	for (int c = 0; c < np; c++)
	{
		float		mx = 0.0f;

		for (int k = 0; k < K && c < N; k++)
		{
			float		a = fabsf(W[(size_t) k * rs + (size_t) c * cs]);

			mx = a > mx ? a : mx;
		}
		w->scale[c] = mx / 127.0f;
		w->colsum[c] = 0;
	}
	for (int q = 0; q < np; q += LOWP_NR)
		for (int p = 0; p < w->kp / 4; p++)
		{
			int8_t	   *s = w->data + (size_t) q * w->kp + (size_t) p * 4 * LOWP_NR;

			for (int j = 0; j < LOWP_NR; j++)
				for (int t = 0; t < 4; t++)
				{
					int			k = 4 * p + t,
								c = q + j;
					float		v = 0.0f;

					if (k < K && c < N && w->scale[c] > 0.0f)
					{
						v = rintf(W[(size_t) k * rs + (size_t) c * cs] / w->scale[c]);
						v = v > 127.0f ? 127.0f : v < -127.0f ? -127.0f : v;
					}
					s[4 * j + t] = (int8_t) v;
					w->colsum[c] += (int32_t) v;
				}
		}
}

int
tfm_int8_weight(const tfm_int8_weights *w, int k, int j)
{
	int			q = j / LOWP_NR * LOWP_NR;

	return w->data[(size_t) q * w->kp + (size_t) (k / 4) * 4 * LOWP_NR + 4 * (j - q) + (k & 3)];
}

float
tfm_int8_quantize_row(int8_t *q, const float *x, int n)
{
	float		mx = 0.0f,
				r;

	for (int k = 0; k < n; k++)
	{
		float		a = fabsf(x[k]);

		mx = a > mx ? a : mx;
	}
	r = mx / 127.0f;
	for (int k = 0; k < n; k++)
		q[k] = r > 0.0f ? lowp_quantize(x[k], r) : 0;
	return r;
}
