/*
 * lowp_convert.c — fp32 ↔ bf16 over arrays, and bf16 weights packed into
 * the panels the kernels read (include/tfm/lowp.h: panels of LOWP_NR
 * columns, K in pairs, one 32-bit slot per (pair, column)).
 */
#include <string.h>

#include "tfm/blas.h"
#include "../lowp_internal.h"
#include "../../vecmath.h"

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
	size_t		kp = lowp_round_up(K > 0 ? K : 1, 2 * TFM_BF16_KP),
				np = lowp_round_up(N > 0 ? N : 1, LOWP_NR);

	return kp * np * sizeof(uint16_t);
}

static inline uint32_t
pair(float lo, float hi)
{
	return (uint32_t) tfm_bf16_from_float(lo) | (uint32_t) tfm_bf16_from_float(hi) << 16;
}

/* one slot row of a full panel from two contiguous rows (vectorized) */
TFM_HOT static void
pair_row(uint32_t *restrict s, const float *r0, const float *r1)
{
	for (int j = 0; j < LOWP_NR; j++)
		s[j] = pair(r0[j], r1[j]);
}

/*
 * Panel q holds columns q·NR .. q·NR+NR−1; its slot (p, j) is at
 * data[(q·kp/2 + p)·NR + j] as two uint16: w[2p][j], then w[2p+1][j].
 * Rows of W contiguous (cs = 1: tfm's (in, out) weights, activations): a
 * panel's pair of rows at a time; columns contiguous (rs = 1: a transposed
 * operand): a column's pairs at a time.  Panels are shared out among the
 * core's threads.
 */
void
tfm_bf16_view(tfm_bf16_weights *w, void *buf, int K, int N)
{
	*w = (tfm_bf16_weights) {buf, K, N, (int) lowp_round_up(K > 0 ? K : 0, 2 * TFM_BF16_KP)};
}

void
tfm_bf16_pack(tfm_bf16_weights *w, void *buf, const float *W,
			  ptrdiff_t rs, ptrdiff_t cs, int K, int N)
{
	int			kp = (int) lowp_round_up(K > 0 ? K : 0, 2 * TFM_BF16_KP),
				np = (int) lowp_round_up(N > 0 ? N : 0, LOWP_NR),
				threads = tfm_get_threads();
	uint32_t   *d = buf;
	void		(*row) (uint32_t *, const float *, const float *) =
		lowp_bf16_fast() ? lowp_avx512_pair_row : pair_row;
	bool		par = threads > 1 && (size_t) kp * np > 262144;

	tfm_bf16_view(w, buf, K, N);
	if (cs == 1 || rs != 1)
	{
		/* along W's rows, two at a time, each across every panel */
#pragma omp parallel for num_threads(threads) if(par) schedule(static)
		for (int p = 0; p < kp / 2; p++)
		{
			int			k = 2 * p;

			for (int q = 0; q < np; q += LOWP_NR)
			{
				uint32_t   *s = d + (size_t) q * (kp / 2) + (size_t) p * LOWP_NR;
				int			nc = N - q < LOWP_NR ? N - q : LOWP_NR;
				const float *r0 = W + (size_t) k * rs + (size_t) q * cs,
						   *r1 = r0 + rs;

				if (k + 1 < K && nc == LOWP_NR && cs == 1)
				{
					row(s, r0, r1);
					continue;
				}
				for (int j = 0; j < LOWP_NR; j++)
					s[j] = j >= nc || k >= K ? 0 :
						pair(r0[(size_t) j * cs], k + 1 < K ? r1[(size_t) j * cs] : 0.0f);
			}
		}
		return;
	}
	/* along W's columns (rs = 1), a column's pairs at a time */
#pragma omp parallel for num_threads(threads) if(par) schedule(static)
	for (int q = 0; q < np; q += LOWP_NR)
	{
		uint32_t   *panel = d + (size_t) q * (kp / 2);
		int			nc = N - q < LOWP_NR ? N - q : LOWP_NR;

		for (int j = 0; j < LOWP_NR; j++)
		{
			const float *col = W + (size_t) (q + j) * cs;

			for (int p = 0; p < kp / 2; p++)
			{
				int			k = 2 * p;

				panel[(size_t) p * LOWP_NR + j] = j >= nc || k >= K ? 0 :
					pair(col[k], k + 1 < K ? col[k + 1] : 0.0f);
			}
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
