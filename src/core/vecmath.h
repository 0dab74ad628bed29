/*
 * vecmath.h — exp and erf written so that the compiler vectorizes loops
 * over them (no calls into libm), and the attribute that compiles a hot
 * function for AVX-512, AVX2+FMA and baseline x86-64, chosen at load time.
 *
 * tfm_expf: Cephes' range reduction x = n·ln2 + r, |r| ≤ ln2/2, and a
 * degree-6 polynomial for e^r; relative error below 2e-7 on [-87, 88];
 * below -87.3 it returns 0 (softmax's masked and tiny terms).
 * tfm_erff: Abramowitz & Stegun 7.1.26 refined, absolute error below 2e-7.
 */
#ifndef TFM_VECMATH_H
#define TFM_VECMATH_H

#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(TFM_NO_CLONES)
#define TFM_HOT __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define TFM_HOT
#endif

static inline float
tfm_expf(float x)
{
	const float log2e = 1.44269504088896341f;
	const float ln2_hi = 0.693359375f,
				ln2_lo = -2.12194440e-4f;
	float		n,
				r,
				p,
				scale;
	int32_t		e;
	uint32_t	bits;

	if (x > 88.0f)
		x = 88.0f;
	if (x < -87.3f)
		return 0.0f;
	n = __builtin_floorf(x * log2e + 0.5f);
	r = x - n * ln2_hi;
	r = r - n * ln2_lo;
	p = 1.9875691500e-4f;
	p = p * r + 1.3981999507e-3f;
	p = p * r + 8.3334519073e-3f;
	p = p * r + 4.1665795894e-2f;
	p = p * r + 1.6666665459e-1f;
	p = p * r + 5.0000001201e-1f;
	p = p * r * r + r + 1.0f;
	e = (int32_t) n + 127;
	bits = (uint32_t) e << 23;
	memcpy(&scale, &bits, sizeof(scale));
	return p * scale;
}

static inline float
tfm_erff(float x)
{
	/* erf(x) = 1 - t·exp(-x² + poly(t)), t = 1/(1 + |x|/2) (Numerical Recipes' erfc) */
	float		z = x < 0.0f ? -x : x;
	float		t = 1.0f / (1.0f + 0.5f * z);
	float		poly = -1.26551223f + t * (1.00002368f + t * (0.37409196f + t * (0.09678418f +
						t * (-0.18628806f + t * (0.27886807f + t * (-1.13520398f + t * (1.48851587f +
						t * (-0.82215223f + t * 0.17087277f))))))));
	float		r = 1.0f - t * tfm_expf(-z * z + poly);

	return x < 0.0f ? -r : r;
}

#endif							/* TFM_VECMATH_H */
