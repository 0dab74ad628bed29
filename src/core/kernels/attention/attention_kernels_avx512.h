/*
 * attention_kernels_avx512.h — attention's inner steps for CPUs with
 * AVX-512 F/BW/VL/DQ (attention_kernels_avx512.c); attention_kernels.c
 * calls them only where the CPU has all four.  x86-64 builds only.
 */
#ifndef TFM_ATTENTION_KERNELS_AVX512_H
#define TFM_ATTENTION_KERNELS_AVX512_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* tfm_attn_softmax_row's contract (attention_kernels.h), in 16 lanes */
void		tfm_attn_softmax_row_avx512(float *row, const uint8_t *pad, int n_visible, int Tk);

/* tfm_attn_copy_kv's Kᵀ (kt: s × T, rows T apart), by 16 × 16 transposes */
void		tfm_attn_copy_kt_avx512(float *kt, const float *k, ptrdiff_t rsk, int T, int s);

/* tfm_attn_gemm's contract, k > 0, m > 0, n > 0 */
void		tfm_attn_gemm_avx512(float *o, ptrdiff_t ldo, const float *a, ptrdiff_t rsa,
								 ptrdiff_t csa, int m, int k, const float *b, ptrdiff_t ldb,
								 int n, float alpha, bool add);

#endif
