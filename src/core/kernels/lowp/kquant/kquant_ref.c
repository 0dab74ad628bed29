/*
 * kquant_ref.c — GGUF's quantized blocks run as they are, the portable
 * path: the activation quantizers (ggml's Q8_K and Q8_0), the reference
 * dot products of a row of Q4_K, Q5_K, Q6_K or Q8_0 blocks with them
 * (written from ggml's vec_dot_*: the same integer sums; the float step
 * per block of kquant_internal.h).  kquant_gemm.c chooses the path
 * (kquant_avx2.c on CPUs with AVX2 + FMA + F16C unless
 * TFM_LOWP_FORCE=fallback).
 */
#include <math.h>

#include "kquant_internal.h"
#include "tfm/lowp.h"

/* ggml's nearest_int: round to nearest, ties to even, for |f| < 2^22 */
static inline int
nearest(float f)
{
	float		v = f + 12582912.f;
	int32_t		i;

	memcpy(&i, &v, 4);
	return (i & 0x007fffff) - 0x00400000;
}

void
tfm_kq_quantize_q8_K(const float *x, tfm_block_q8_K *y, int64_t k)
{
	for (int64_t i = 0; i < k / TFM_QK_K; i++, x += TFM_QK_K)
	{
		float		max = 0.0f,
					amax = 0.0f,
					iscale;

		for (int j = 0; j < TFM_QK_K; j++)
		{
			float		ax = fabsf(x[j]);

			if (ax > amax)
			{
				amax = ax;
				max = x[j];
			}
		}
		if (amax == 0.0f)
		{
			memset(&y[i], 0, sizeof(y[i]));
			continue;
		}
		iscale = -127.f / max;
		for (int j = 0; j < TFM_QK_K; j++)
		{
			float		p = iscale * x[j];
			int			v;

			KQ_NO_CONTRACT(p);
			v = nearest(p);
			y[i].qs[j] = (int8_t) (v < 127 ? v : 127);
		}
		for (int j = 0; j < TFM_QK_K / 16; j++)
		{
			int			sum = 0;

			for (int l = 0; l < 16; l++)
				sum += y[i].qs[j * 16 + l];
			y[i].bsums[j] = (int16_t) sum;
		}
		y[i].d = 1.0f / iscale;
	}
}

void
tfm_kq_quantize_q8_0(const float *x, tfm_block_q8_0 *y, int64_t k)
{
	for (int64_t i = 0; i < k / TFM_QK8_0; i++, x += TFM_QK8_0)
	{
		float		amax = 0.0f,
					id;

		for (int j = 0; j < TFM_QK8_0; j++)
			amax = fmaxf(amax, fabsf(x[j]));
		y[i].d = tfm_fp16_from_float(amax / 127.f);
		id = amax != 0.0f ? 127.f / amax : 0.0f;
		for (int j = 0; j < TFM_QK8_0; j++)
		{
			float		p = x[j] * id;

			KQ_NO_CONTRACT(p);
			y[i].qs[j] = (int8_t) nearest(p);
		}
	}
}

bool
tfm_kq_supported(uint32_t t)
{
	return t == KQ_Q8_0 || t == KQ_Q4_K || t == KQ_Q5_K || t == KQ_Q6_K;
}

uint32_t
tfm_kq_act_type(uint32_t t)
{
	return t == KQ_Q8_0 ? 8 : 15;	/* ggml's Q8_0 and Q8_K */
}

int
tfm_kq_act_block_values(uint32_t t)
{
	return t == KQ_Q8_0 ? TFM_QK8_0 : TFM_QK_K;
}

/* Q4_K and Q5_K: per sub-block of 32, its scale · Σ q·q8; mins · bsums */
static float
dot_q45_k(int five, int n, const uint8_t *w, const tfm_block_q8_K *a)
{
	const int	bytes = five ? 176 : 144;
	float		sum = 0.0f;

	for (int i = 0; i < n / TFM_QK_K; i++, w += bytes)
	{
		const uint8_t *qh = w + 16,
				   *q = w + (five ? 48 : 16);
		const int8_t *q8 = a[i].qs;
		uint8_t		sc[8],
					mn[8];
		int32_t		isum = 0,
					msum = 0;

		kq_scales_mins(w + 4, sc, mn);
		for (int j = 0; j < 16; j++)
			msum += a[i].bsums[j] * mn[j / 2];
		for (int c = 0; c < 4; c++, q += 32, q8 += 64)
		{
			int32_t		lo = 0,
						hi = 0;

			for (int l = 0; l < 32; l++)
			{
				int			vl = q[l] & 0xF,
							vh = q[l] >> 4;

				if (five)
				{
					vl += ((qh[l] >> (2 * c)) & 1) << 4;
					vh += ((qh[l] >> (2 * c + 1)) & 1) << 4;
				}
				lo += vl * q8[l];
				hi += vh * q8[l + 32];
			}
			isum += sc[2 * c] * lo + sc[2 * c + 1] * hi;
		}
		sum = kq_step_k(sum, kq_half(w) * a[i].d, isum, kq_half(w + 2) * a[i].d, msum);
	}
	return sum;
}

/* Q6_K: per sub-block of 16, its int8 scale · Σ (q − 32)·q8 */
static float
dot_q6_k(int n, const uint8_t *w, const tfm_block_q8_K *a)
{
	float		sum = 0.0f;

	for (int i = 0; i < n / TFM_QK_K; i++, w += 210)
	{
		const uint8_t *ql = w,
				   *qh = w + 128;
		const int8_t *sc = (const int8_t *) (w + 192);
		const int8_t *q8 = a[i].qs;
		int32_t		isum = 0;

		for (int c = 0; c < 2; c++, ql += 64, qh += 32, sc += 8, q8 += 128)
		{
			int8_t		q[128];

			/* the chunk's 128 values in order, then each 16's sum scaled */
			for (int l = 0; l < 32; l++)
			{
				q[l] = (int8_t) (((ql[l] & 0xF) | ((qh[l] & 3) << 4)) - 32);
				q[l + 32] = (int8_t) (((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32);
				q[l + 64] = (int8_t) (((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
				q[l + 96] = (int8_t) (((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
			}
			for (int j = 0; j < 8; j++)
			{
				int32_t		s = 0;

				for (int l = 0; l < 16; l++)
					s += q[16 * j + l] * q8[16 * j + l];
				isum += sc[j] * s;
			}
		}
		sum = kq_step(sum, isum, kq_half(w + 208) * a[i].d);
	}
	return sum;
}

/* Q8_0: per block Σ q·q8, scaled by the two fp16 d's product */
static float
dot_q8_0(int n, const uint8_t *w, const tfm_block_q8_0 *a)
{
	float		sum = 0.0f;

	for (int i = 0; i < n / TFM_QK8_0; i++, w += 34)
	{
		int32_t		isum = 0;

		for (int l = 0; l < 32; l++)
			isum += (int8_t) w[2 + l] * a[i].qs[l];
		sum = kq_step(sum, isum, kq_half(w) * tfm_fp16_to_float(a[i].d));
	}
	return sum;
}

float
tfm_kq_dot_ref(uint32_t type, int n, const uint8_t *w, const void *a)
{
	switch (type)
	{
		case KQ_Q4_K:
			return dot_q45_k(0, n, w, a);
		case KQ_Q5_K:
			return dot_q45_k(1, n, w, a);
		case KQ_Q6_K:
			return dot_q6_k(n, w, a);
		case KQ_Q8_0:
			return dot_q8_0(n, w, a);
	}
	return NAN;
}
