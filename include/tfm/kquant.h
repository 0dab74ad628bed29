/*
 * kquant.h — GGUF's quantized blocks run as they are (issue 40): the
 * activation quantizers (ggml's Q8_K for the K-quants, Q8_0 for Q8_0
 * weights) and the dot product of one row of weight blocks, as the file
 * stores them, with one quantized activation row.
 *
 * The weights are the file's bytes (little-endian, ggml's layouts):
 *   Q8_0  34 bytes / 32 values:  fp16 d, 32 int8
 *   Q4_K 144 bytes / 256 values: fp16 d, fp16 dmin, 12 bytes of 6-bit
 *        scales and mins, 128 bytes of nibbles
 *   Q5_K 176 bytes / 256 values: as Q4_K, then 32 bytes of fifth bits
 *        before the nibbles
 *   Q6_K 210 bytes / 256 values: 128 bytes low nibbles, 64 bytes high
 *        2 bits, 16 int8 scales, fp16 d
 *
 * The integer sums are ggml's (vec_dot_q4_K_q8_K, q5_K, q6_K, q8_0_q8_0)
 * exactly; the float part is one fp32 sum over the blocks in order, each
 * block's d · isum (and − dmin · msum) added unfused, the same on every
 * path (kquant_ref.c, kquant_avx2.c), so the paths agree bit for bit.
 */
#ifndef TFM_KQUANT_H
#define TFM_KQUANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TFM_QK_K 256
#define TFM_QK8_0 32

/* ggml's block_q8_K: the activations of 256 values */
typedef struct tfm_block_q8_K
{
	float		d;
	int8_t		qs[TFM_QK_K];
	int16_t		bsums[TFM_QK_K / 16];	/* sums of each 16 qs */
} tfm_block_q8_K;

/* ggml's block_q8_0: 32 values, fp16 d (bits) */
typedef struct tfm_block_q8_0
{
	uint16_t	d;
	int8_t		qs[TFM_QK8_0];
} tfm_block_q8_0;

/*
 * ggml's quantize_row_q8_K (its reference, which x86 runs too): per 256
 * values, iscale = −127 / the value of largest magnitude, q = nearest
 * (ties to even) of iscale · x, at most 127; d = 1 / iscale.  k a multiple of 256.
 */
void		tfm_kq_quantize_q8_K(const float *x, tfm_block_q8_K *y, int64_t k);

/*
 * ggml's quantize_row_q8_0 as its x86 (AVX/AVX2) path computes it: per 32
 * values, d = amax / 127 (stored fp16), q = nearest (ties to even) of
 * x · (127 / amax).  k a multiple of 32.
 */
void		tfm_kq_quantize_q8_0(const float *x, tfm_block_q8_0 *y, int64_t k);

/* the activation block type a weight type is multiplied with, and its size */
bool		tfm_kq_supported(uint32_t ggml_type);
uint32_t	tfm_kq_act_type(uint32_t ggml_type);
int			tfm_kq_act_block_values(uint32_t ggml_type);

/*
 * The dot product of n values (a multiple of the type's block) of one
 * weight row w (ggml type 8 Q8_0, 12 Q4_K, 13 Q5_K, 14 Q6_K) with the
 * activations a (tfm_block_q8_0 for Q8_0, tfm_block_q8_K otherwise):
 * tfm_kq_dot on the fastest path (TFM_LOWP_FORCE=fallback forces the
 * reference), tfm_kq_dot_ref on the reference.
 */
float		tfm_kq_dot(uint32_t ggml_type, int n, const uint8_t *w, const void *a);
float		tfm_kq_dot_ref(uint32_t ggml_type, int n, const uint8_t *w, const void *a);

/*
 * The product of M activation rows with a weight of N rows of K values as
 * blocks (row j = output column j, as a GGUF matrix stores it):
 * C[i][j] = alpha · dot(quantized row i of A, row j of W) + beta · C[i][j]
 * (beta 0: C is only written).  K a multiple of the type's block; each row
 * of A quantized once into work (tfm_kq_work_bytes(type, M, K) bytes);
 * columns split over threads, each sum tfm_kq_dot's, so any thread count
 * gives the same C.  Returns false for a type tfm_kq_supported refuses.
 */
size_t		tfm_kq_row_bytes(uint32_t ggml_type, int K);
size_t		tfm_kq_work_bytes(uint32_t ggml_type, int M, int K);
bool		tfm_kq_gemm(uint32_t ggml_type, int M, int N, int K, const float *A, ptrdiff_t lda,
						const uint8_t *W, float alpha, float beta, float *C, ptrdiff_t ldc,
						void *work, int threads);

/* the name of the path tfm_kq_dot runs now ("avx2" or "reference") */
const char *tfm_kq_path(void);

#endif
