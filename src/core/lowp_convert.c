/*
 * lowp_convert.c — fp32 ↔ bf16 over arrays, and bf16 weights packed into
 * the panels the kernels read (include/tfm/lowp.h: panels of LOWP_NR
 * columns, K in pairs, one 32-bit slot per (pair, column)).
 */
#include <string.h>

#include "lowp_internal.h"

void
tfm_bf16_from_floats(uint16_t *dst, const float *src, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dst[i] = tfm_bf16_from_float(src[i]);
}

void
tfm_bf16_to_floats(float *dst, const uint16_t *src, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dst[i] = tfm_bf16_to_float(src[i]);
}

size_t
tfm_bf16_pack_bytes(int K, int N)
{
	size_t		kp = lowp_round_up(K > 0 ? K : 1, 2),
				np = lowp_round_up(N > 0 ? N : 1, LOWP_NR);

	return kp * np * sizeof(uint16_t);
}

/*
 * Panel q holds columns q·NR .. q·NR+NR−1; its slot (p, j) is at
 * data[(q·kp/2 + p)·NR + j] as two uint16: w[2p][j], then w[2p+1][j].
 */
void
tfm_bf16_pack(tfm_bf16_weights *w, void *buf, const float *W,
			  ptrdiff_t rs, ptrdiff_t cs, int K, int N)
{
	int			kp = (int) lowp_round_up(K > 0 ? K : 0, 2),
				np = (int) lowp_round_up(N > 0 ? N : 0, LOWP_NR);
	uint16_t   *d = buf;

	*w = (tfm_bf16_weights) {d, K, N, kp};
	for (int q = 0; q < np; q += LOWP_NR)
		for (int p = 0; p < kp / 2; p++)
		{
			uint16_t   *s = d + ((size_t) q * kp + (size_t) p * 2 * LOWP_NR);

			for (int j = 0; j < LOWP_NR; j++)
				for (int t = 0; t < 2; t++)
				{
					int			k = 2 * p + t,
								c = q + j;

					s[2 * j + t] = k < K && c < N ?
						tfm_bf16_from_float(W[(size_t) k * rs + (size_t) c * cs]) : 0;
				}
		}
}

float
tfm_bf16_weight(const tfm_bf16_weights *w, int k, int j)
{
	int			q = j / LOWP_NR * LOWP_NR;
	size_t		at = (size_t) q * w->kp + (size_t) (k / 2) * 2 * LOWP_NR +
		2 * (j - q) + (k & 1);

	return tfm_bf16_to_float(w->data[at]);
}
