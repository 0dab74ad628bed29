/*
 * lowp_int4_kernel.h — the entry every SIMD int4 kernel has
 * (lowp_int4_avx512.c, lowp_int4_avx2.c, lowp_int4_neon.c): a
 * lowp_int4_kernel (lowp_internal.h) running the file's
 * group(H, a, W, g, alpha, beta, C, ldc) — H rows (a constant, 1-4) against
 * the 16 columns of group g — over groups [g0, g1), one group at a time;
 * other heights go to the reference.  ATTR is the file's target attribute
 * (or nothing, where a pragma sets it).
 */
#ifndef TFM_LOWP_INT4_KERNEL_H
#define TFM_LOWP_INT4_KERNEL_H

#define LOWP_INT4_KERNEL(ATTR, name, group) \
ATTR void \
name(const lowp_int4_act *a, int h, const tfm_int4_weights *W, int g0, int g1, \
	 float alpha, float beta, float *C, ptrdiff_t ldc) \
{ \
	for (int g = g0; g < g1; g++) \
		switch (h) \
		{ \
			case 1: group(1, a, W, g, alpha, beta, C, ldc); break; \
			case 2: group(2, a, W, g, alpha, beta, C, ldc); break; \
			case 3: group(3, a, W, g, alpha, beta, C, ldc); break; \
			case 4: group(4, a, W, g, alpha, beta, C, ldc); break; \
			default: lowp_int4_ref_kernel(a, h, W, g, g + 1, alpha, beta, C, ldc); \
		} \
}

#endif							/* TFM_LOWP_INT4_KERNEL_H */
