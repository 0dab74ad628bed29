/*
 * kquant_internal.h — what the K-quant paths share (kquant_ref.c,
 * kquant_avx2.c, kquant_avx512.c, kquant_neon.c): the fp16 reads (tfm/lowp.h's exact conversion), the
 * unpacking of a Q4_K/Q5_K block's twelve bytes into eight 6-bit scales
 * and eight mins (ggml's get_scale_min_k4), and the float step every path
 * takes per block, each product rounded on its own (no fma contraction,
 * whatever the target).
 */
#ifndef TFM_KQUANT_INTERNAL_H
#define TFM_KQUANT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tfm/kquant.h"
#include "tfm/lowp.h"

#if defined(__x86_64__)
#define KQ_NO_CONTRACT(v) __asm__("" : "+x"(v))
#else
#define KQ_NO_CONTRACT(v) __asm__("" : "+w"(v))
#endif

#define KQ_Q8_0 8
#define KQ_Q4_K 12
#define KQ_Q5_K 13
#define KQ_Q6_K 14

static inline float
kq_half(const uint8_t *p)
{
	return tfm_fp16_to_float((uint16_t) (p[0] | p[1] << 8));
}

/* sub-block j's scale and min (0-63) from the 12 bytes at q */
static inline void
kq_scales_mins(const uint8_t *q, uint8_t sc[8], uint8_t mn[8])
{
	for (int j = 0; j < 8; j++)
		if (j < 4)
		{
			sc[j] = q[j] & 63;
			mn[j] = q[j + 4] & 63;
		}
		else
		{
			sc[j] = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
			mn[j] = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
		}
}

/* sum + d·isum − dmin·msum, each product and step rounded to fp32 */
static inline float
kq_step_k(float sum, float d, int32_t isum, float dmin, int32_t msum)
{
	float		p = d * (float) isum,
				m;

	KQ_NO_CONTRACT(p);
	sum += p;
	m = dmin * (float) msum;
	KQ_NO_CONTRACT(m);
	return sum - m;
}

/* sum + isum·d */
static inline float
kq_step(float sum, int32_t isum, float d)
{
	float		p = (float) isum * d;

	KQ_NO_CONTRACT(p);
	return sum + p;
}

/* *c = alpha·v + beta·*c (beta·*c rounded on its own), as every path stores */
static inline void
kq_store(float *c, float v, float alpha, float beta)
{
	float		x = alpha * v,
				b;

	if (beta != 0.0f)
	{
		b = beta * *c;
		KQ_NO_CONTRACT(b);
		x += b;
	}
	*c = x;
}

/* the bytes of one block of weight type t */
static inline int
kq_block_bytes(uint32_t t)
{
	return t == KQ_Q8_0 ? 34 : t == KQ_Q6_K ? 210 : t == KQ_Q5_K ? 176 : 144;
}

/*
 * a panel's next block of nc columns (wb bytes apart, from nb) into L1
 * while the rows run on this one: its loads would otherwise wait on L3 or
 * memory line by line
 */
static inline void
kq_prefetch_block(const uint8_t *nb, size_t wb, int nc, int bb)
{
	for (int c = 0; c < nc; c++)
		for (int o = 0; o < bb; o += 64)
			__builtin_prefetch(nb + (size_t) c * wb + o, 0, 3);
}

/* a panel's row of nc sums v stored at c as every path stores them */
static inline void
kq_store_row(float *c, const float *v, int nc, float alpha, float beta)
{
	for (int k = 0; k < nc; k++)
		kq_store(c + k, v[k], alpha, beta);
}

/* rows of activation blocks one weight row is multiplied with at a time */
#define KQ_ROWS 4

/* each kernel with R known at compile time: its accumulators stay in registers */
#define KQ_ROWS_CASES(call) \
	switch (R) \
	{ \
		case 1: call(1); return; \
		case 2: call(2); return; \
		case 3: call(3); return; \
		default: call(4); return; \
	}

#if defined(__x86_64__)
float		kq_dot_avx2(uint32_t type, int n, const uint8_t *w, const void *a);
/* the same as kq_rows_avx512, on AVX2 + FMA + F16C (kquant_avx2.c) */
void		kq_rows_avx2(uint32_t type, int n, const uint8_t *w, const uint8_t *a, size_t ab,
						 int R, float *out);
/* weight rows (output columns) kq_panel_avx2 keeps in one vector's lanes */
#define KQ_PANEL_COLS_AVX2 8
/*
 * activation rows from which tfm_kq_gemm takes kq_panel_avx2: Q4_K, Q5_K
 * and Q8_0 from one (decoding too), Q6_K, whose repacking costs the most,
 * from three (bench_kquant, the AVX2 paths on Sapphire Rapids, best of
 * repetitions, the three Llama 3.2 1B shapes: Q4_K 1.8-1.9x the rows'
 * kernel at 1 row, Q5_K 1.3x, Q8_0 1.2-1.3x; Q6_K 0.8-0.9x at 1 row,
 * 0.93-1.2x at 2, 1.07-1.6x at 3; all 2x or more at 64)
 */
#ifndef KQ_PANEL_MIN_ROWS_AVX2
#define KQ_PANEL_MIN_ROWS_AVX2 1
#endif
#ifndef KQ_PANEL_MIN_ROWS_AVX2_Q6
#define KQ_PANEL_MIN_ROWS_AVX2_Q6 3
#endif
/* kq_panel_avx512's products on AVX2 + FMA + F16C (kquant_panel_avx2.c), the same bits */
void		kq_panel_avx2(uint32_t t, int M, int N, int K, const uint8_t *W, size_t wb,
						  const uint8_t *act, size_t ab, float alpha, float beta, float *C,
						  ptrdiff_t ldc, int g0, int g1);
/*
 * out[r] = the dot product of weight row w with activation row r (rows ab
 * bytes apart, from a), for R ≤ KQ_ROWS rows: each equal to
 * tfm_kq_dot_ref's bit for bit (kquant_avx512.c, AVX-512 VNNI)
 */
void		kq_rows_avx512(uint32_t type, int n, const uint8_t *w, const uint8_t *a, size_t ab,
						   int R, float *out);

/* weight rows (output columns) one call of kq_tile_avx512 covers */
#define KQ_COLS 4
/*
 * out[r·ldo + c] for R ≤ KQ_ROWS activation rows and nc ≤ KQ_COLS weight
 * rows wb bytes apart: kq_rows_avx512's bits (kquant_avx512.c; Q4_K, Q5_K
 * and Q6_K as tiles, each block of both read once; Q4_K's and Q5_K's
 * activations in the order kq_act_order_avx512 puts them)
 */
void		kq_tile_avx512(uint32_t type, int n, const uint8_t *w, size_t wb, int nc,
						   const uint8_t *a, size_t ab, int R, float *out, size_t ldo);
/* weight rows (output columns) kq_panel_avx512 keeps in one vector's lanes */
#define KQ_PANEL_COLS 16
/*
 * activation rows from which tfm_kq_gemm takes kq_panel_avx512 for Q4_K
 * and Q5_K, and for Q6_K (each block's repacking pays from there: thread
 * CPU time of tfm_kq_gemm on the Llama-134M shapes, AMD Zen 4, medians of
 * 100 calls: Q4_K 0.9x the 4×4 tiles' time at 8 rows, 0.75x at 12, 0.45x
 * at 128; Q6_K 1.15x at 8, 0.85-0.9x at 12, 0.46x at 128)
 */
#ifndef KQ_PANEL_MIN_ROWS
#define KQ_PANEL_MIN_ROWS 8
#endif
#ifndef KQ_PANEL_MIN_ROWS_Q6
#define KQ_PANEL_MIN_ROWS_Q6 12
#endif
/* and for Q8_0, whose tiles run one column at a time: the panel is faster from one row
 * (bench_kquant, Sapphire Rapids, 2048 × 8192: 1.6x at 1 row, 3.1x at 4, 7.1x at 64) */
#ifndef KQ_PANEL_MIN_ROWS_Q8
#define KQ_PANEL_MIN_ROWS_Q8 1
#endif
/*
 * C = alpha · the products (+ beta · C) for all M rows and the columns of
 * groups [g0, g1) of KQ_PANEL_COLS, columns in the vector lanes
 * (kquant_panel_avx512.c): tfm_kq_dot_ref's bits; the activations in
 * their own order
 */
void		kq_panel_avx512(uint32_t t, int M, int N, int K, const uint8_t *W, size_t wb,
							const uint8_t *act, size_t ab, float alpha, float beta, float *C,
							ptrdiff_t ldc, int g0, int g1);
/* tfm_kq_quantize_q8_K with AVX-512, bit for bit (kquant_avx512.c) */
void		kq_quantize_q8_K_avx512(const float *x, tfm_block_q8_K *y, int64_t k);
/* Q4_K's and Q5_K's activation rows put in kq_tile_avx512's order, in place */
void		kq_act_order_avx512(uint32_t type, uint8_t *act, int M, size_t ab, int K);
#elif defined(__aarch64__)
/* the same on AArch64 (kquant_neon.c): plain NEON, and SDOT (FEAT_DotProd) */
void		kq_rows_neon(uint32_t type, int n, const uint8_t *w, const uint8_t *a, size_t ab,
						 int R, float *out);
void		kq_rows_neondot(uint32_t type, int n, const uint8_t *w, const uint8_t *a, size_t ab,
							int R, float *out);
#endif

#endif
