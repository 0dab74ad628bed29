/*
 * vecmath.h — exp and erf written so that the compiler vectorizes loops
 * over them (no calls into libm), and the attribute that compiles a hot
 * function for AVX-512, AVX2+FMA and baseline x86-64, chosen at load time
 * (on AArch64 one version, for NEON, which every AArch64 CPU has).
 *
 * tfm_expf: Cephes' range reduction x = n·ln2 + r, |r| ≤ ln2/2, and a
 * degree-6 polynomial for e^r; relative error below 2e-7 on [-87, 88];
 * below -87.3 it returns 0 (softmax's masked and tiny terms).
 * tfm_erff: a rational minimax fit on [-4, 4], absolute error below 5e-7.
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

/*
 * erf(x) ≈ x·P(x²)/Q(x²) on [-4, 4] (|erf| is 1 to float precision beyond),
 * P of degree 6 and Q of degree 4 in x²: the minimax fit Eigen and XLA use
 * for float erf.  No exp and one division, so GELU's loops vectorize into a
 * few FMAs per element.  Absolute error below 5e-7 (checked on a 1e-5 grid
 * of [-12, 12] against double erf); GELU = ½x(1 + erf(x/√2)) then has an
 * absolute error below 1.4e-6 and its derivative below 3e-7.
 */
static inline float
tfm_erff(float x)
{
	float		x2,
				p,
				q;

	x = x < -4.0f ? -4.0f : (x > 4.0f ? 4.0f : x);
	x2 = x * x;
	p = x2 * -2.72614225801306e-10f + 2.77068142495902e-08f;
	p = p * x2 + -2.10102402082508e-06f;
	p = p * x2 + -5.69250639462346e-05f;
	p = p * x2 + -7.34990630326855e-04f;
	p = p * x2 + -2.95459980854025e-03f;
	p = p * x2 + -1.60960333262415e-02f;
	q = x2 * -1.45660718464996e-05f + -2.13374055278905e-04f;
	q = q * x2 + -1.68282697438203e-03f;
	q = q * x2 + -7.37332916720468e-03f;
	q = q * x2 + -1.42647390514189e-02f;
	return x * p / q;
}

/*
 * alpha · sum rounded before o is added, as BLIS's micro-kernel does: GCC
 * would otherwise fuse a vector multiply and add (-ffp-contract=fast)
 */
#if defined(__aarch64__)
#define NO_CONTRACT(v) __asm__("" : "+w"(v))
#else
#define NO_CONTRACT(v) __asm__("" : "+x"(v))
#endif

#endif							/* TFM_VECMATH_H */
