/*
 * attention_kernels_avx2.h — attention's products for CPUs with AVX2 + FMA
 * but no AVX-512 (attention_kernels_avx2.c); attention_kernels.c calls
 * them only where the CPU has both.
 */
#ifndef TFM_ATTENTION_KERNELS_AVX2_H
#define TFM_ATTENTION_KERNELS_AVX2_H

#include <stdbool.h>
#include <stddef.h>

/* tfm_attn_gemm's contract (attention_kernels.h), in 8 lanes */
void		tfm_attn_gemm_avx2(float *o, ptrdiff_t ldo, const float *a, ptrdiff_t rsa,
							   ptrdiff_t csa, int m, int k, const float *b, ptrdiff_t ldb,
							   int n, float alpha, bool add);

#endif
