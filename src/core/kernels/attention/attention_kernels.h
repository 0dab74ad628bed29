/*
 * attention_kernels.h — attention's inner steps with a CPU-specific path
 * (attention_kernels.c: the choice and the portable code;
 * attention_kernels_avx512.c and attention_kernels_avx2.c the x86 paths):
 * one masked softmax row, and the small products of a block of query rows
 * (Q·Kᵀ, P·V).
 */
#ifndef TFM_ATTENTION_KERNELS_H
#define TFM_ATTENTION_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * tfm_attn_kernels (tfm/layers.h) names the path: the CPU's best (AVX-512
 * F/BW/VL/DQ, else AVX2 + FMA), unless the environment sets
 * TFM_ATTN_KERNELS=avx2 or =portable (or TFM_NO_AVX512_ATTN, which means
 * portable), read once.
 */

/*
 * Softmax of row[0 .. n_visible) in place, keys with pad[c] ≠ 0 masked out;
 * row[n_visible .. Tk) set to 0.  A row that sees nothing becomes all 0.
 * lowp (a bf16/int8 pass): the AVX-512 row where that path runs (on the
 * AVX2 path the portable row, as fast there).  An fp32
 * pass always takes the portable row, whose sums run in the order every
 * earlier tfm did: SET tfm.precision = 'fp32' keeps giving the same bits
 * (the products of tfm_attn_gemm already equal BLIS's micro-kernel's).
 */
void		tfm_attn_softmax_row(float *row, const uint8_t *pad, int n_visible, int Tk,
								 bool lowp);

/* whether tfm_attn_gemm runs (the avx512 or avx2 path) */
bool		tfm_attn_gemm_ok(void);

/*
 * kt (s × T, rows T apart) = kᵀ and vc (T × s) = v, from rows rsk and rsv
 * apart: the operands of tfm_attn_gemm for one (sequence, head).  Only
 * where tfm_attn_gemm_ok().
 */
void		tfm_attn_copy_kv(float *kt, float *vc, const float *k, ptrdiff_t rsk,
							 const float *v, ptrdiff_t rsv, int T, int s);

/*
 * o[i·ldo + j] = alpha · Σ_k a[i·rsa + k·csa] · b[k·ldb + j] for i < m,
 * j < n (add: o += that; k = 0 is an empty sum).  A is read where it lies, any strides (csa = 1
 * its rows, rsa = 1 its transpose); B's rows best contiguous.  Each output
 * is a chain of FMAs over k in order, then alpha · sum (+ o): BLIS's
 * micro-kernel's bits, on either path.  Returns false, touching nothing,
 * on the portable path: the caller uses BLIS.
 */
bool		tfm_attn_gemm(float *o, ptrdiff_t ldo, const float *a, ptrdiff_t rsa, ptrdiff_t csa,
						  int m, int k, const float *b, ptrdiff_t ldb, int n, float alpha,
						  bool add);

/* dst (T × s, contiguous) = the T rows of s values at src, rs apart */
void		tfm_attn_copy_rows(float *dst, const float *src, ptrdiff_t rs, int T, int s);


#endif
