/*
 * lowp_internal.h — what the bf16 and int8 drivers share with their kernels:
 * block sizes, the packed activation layout, the kernel signatures of each
 * path, and the dispatch flags.  Not part of the core's API (see
 * include/tfm/lowp.h).
 *
 * Packed activations (the caller's work buffer).  A's rows are cut into
 * panels of h rows (h = LOWP_MR for the GEMM, h = M for the matrix-vector
 * path); slot p of row r of a panel is the 32-bit word a[p·h + r], which
 * holds k = 2p, 2p+1 as bf16 (low half first) or k = 4p .. 4p+3 as
 * unsigned bytes (activation + 128).  Rows past M are zeros.
 */
#ifndef TFM_LOWP_INTERNAL_H
#define TFM_LOWP_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tfm/lowp.h"

#define LOWP_MR 12				/* rows per GEMM micro-kernel */
#define LOWP_NR TFM_LOWP_NR		/* columns per weight panel (two 16-float vectors) */
#define LOWP_MC (8 * LOWP_MR)	/* rows of A per cache block (L2) */
#define LOWP_NC (8 * LOWP_NR)	/* columns per task */
#define LOWP_KC 192				/* bf16 pairs per K block: one weight panel slice 24 KB (L1) */
#define LOWP_ALIGN 64

static inline size_t
lowp_round_up(size_t x, size_t m)
{
	return (x + m - 1) / m * m;
}

/*
 * The start of both drivers (lowp_drive.c): true if C = alpha · A · W + beta · C is done
 * already, for an empty C, or for K = 0 (C = beta · C, 0 for beta 0).
 */
bool		lowp_gemm_trivial(int M, int N, int K, float beta, float *C, ptrdiff_t ldc);

/* C = alpha · A · W + beta · C: the shape and output of one product */
typedef struct lowp_product
{
	int			M,
				N,
				K;
	float		alpha,
				beta;
	float	   *C;
	ptrdiff_t	ldc;
} lowp_product;

/*
 * One product for lowp_gemm_drive (lowp_drive.c), which runs the loops of
 * both drivers; each embeds this as the first member of its own job.
 * pack: A's rows [r0, r0 + h) into the panel of height h that starts at
 * row r0 (rows past M: zeros).  block: C's rows [i, i + m) × columns
 * [j, j + n) from the panel of height h at row i, over the kernel's slots
 * [k0, k0 + kc) of K (k0 > 0: added to what the earlier slots left in C).
 */
typedef struct lowp_gemm_job lowp_gemm_job;
struct lowp_gemm_job
{
	int			slots;			/* the kernel's slots of K: bf16 pairs or int8 quads */
	int			kblock;			/* slots per K block when M > TFM_LOWP_GEMV_ROWS */
	bool		rows_exact;		/* the blocked loops at every M: a row's bits never
								 * depend on M (tfm_lowp_linear_rows) */
	uint32_t   *a;				/* A's panels (slots words a row) */
	void		(*pack) (const lowp_gemm_job *job, int r0, int h);
	void		(*block) (const lowp_gemm_job *job, int h, int i, int m, int j, int n,
						  int k0, int kc);
	lowp_product pr;			/* set by lowp_gemm_drive */
};

void		lowp_gemm_drive(lowp_gemm_job *job, int M, int N, int K, float alpha, float beta,
							float *C, ptrdiff_t ldc);

/* task t of a driver's grid, mt tasks down the rows: rows [i0, i1), columns [j0, j1) */
typedef struct lowp_tile
{
	int			i0,
				i1,
				j0,
				j1;
} lowp_tile;

/* task t of tasks mc rows × nc columns, mt of them down the rows (the AMX drivers' sizes) */
static inline lowp_tile
lowp_tile_sized(int t, int mt, int M, int N, int mc, int nc)
{
	lowp_tile	b;

	b.i0 = (t % mt) * mc;
	b.j0 = (t / mt) * nc;
	b.i1 = b.i0 + mc < M ? b.i0 + mc : M;
	b.j1 = b.j0 + nc < N ? b.j0 + nc : N;
	return b;
}

static inline lowp_tile
lowp_tile_of(int t, int mt, int M, int N)
{
	return lowp_tile_sized(t, mt, M, N, LOWP_MC, LOWP_NC);
}

/* one activation quantized against its row's r = max|x| / 127 (r > 0) */
static inline int8_t
lowp_quantize(float x, float r)
{
	float		v = __builtin_rintf(x / r);

	return (int8_t) (v > 127.0f ? 127.0f : v < -127.0f ? -127.0f : v);
}

/*
 * bf16 micro-kernel: C[0..m)[0..n) = alpha · Σ_p a·b + beta · C over kk
 * slots; a: panel of height h (slot p of row r at a[p·h + r]); b: one
 * weight panel's slots from the block's first pair (slot p of column j at
 * b[p·NR + j]).  beta = 0 does not read C.
 */
typedef void (*lowp_bf16_kernel) (int kk, const uint32_t *a, int h, const uint32_t *b,
								  float *c, ptrdiff_t ldc, int m, int n,
								  float alpha, float beta);

/*
 * int8 kernel: for r < m, j < n, with S = Σ_p (u8 a)·(s8 b) over kq slots
 * (exact, int32): C[r][j] = fma(S − 128·colsum[j] as float,
 * (alpha·rscale[r])·cscale[j], beta·C[r][j]) (beta = 0: the product only).
 */
typedef void (*lowp_int8_kernel) (int kq, const uint32_t *a, int h, const uint32_t *b,
								  float *c, ptrdiff_t ldc, int m, int n,
								  float alpha, const float *rscale, const float *cscale,
								  const int32_t *colsum, float beta);

/*
 * the paths: portable in lowp_bf16_ref.c and lowp_int8_ref.c; x86-64 in
 * lowp_bf16_avx512.c, lowp_bf16_avx2.c, lowp_int8_avx512.c,
 * lowp_int8_avx2.c; AArch64 in lowp_bf16_neon.c and lowp_int8_neon.c
 */
void		lowp_bf16_ref_kernel(int kk, const uint32_t *a, int h, const uint32_t *b,
								 float *c, ptrdiff_t ldc, int m, int n, float alpha, float beta);
void		lowp_int8_ref_kernel(int kq, const uint32_t *a, int h, const uint32_t *b,
								 float *c, ptrdiff_t ldc, int m, int n, float alpha,
								 const float *rscale, const float *cscale,
								 const int32_t *colsum, float beta);
#if defined(__x86_64__)
void		lowp_bf16_avx512_kernel(int kk, const uint32_t *a, int h, const uint32_t *b,
									float *c, ptrdiff_t ldc, int m, int n, float alpha, float beta);
void		lowp_bf16_avx2_kernel(int kk, const uint32_t *a, int h, const uint32_t *b,
								  float *c, ptrdiff_t ldc, int m, int n, float alpha, float beta);
/* rows [r0, r0 + h) of A (k contiguous) into a bf16 panel as pack_panel does (lowp_bf16_avx512.c) */
void		lowp_bf16_avx512_pack(uint32_t *dst, int h, const float *A, ptrdiff_t rsa,
								  int M, int K, int r0);
void		lowp_int8_avx512_kernel(int kq, const uint32_t *a, int h, const uint32_t *b,
									float *c, ptrdiff_t ldc, int m, int n, float alpha,
									const float *rscale, const float *cscale,
									const int32_t *colsum, float beta);
void		lowp_int8_avx2_kernel(int kq, const uint32_t *a, int h, const uint32_t *b,
								  float *c, ptrdiff_t ldc, int m, int n, float alpha,
								  const float *rscale, const float *cscale,
								  const int32_t *colsum, float beta);
/* a row of activations as lowp_int8_gemm.c's pack_panel quantizes it (lowp_int8_avx512.c) */
float		lowp_int8_avx512_absmax(const float *x, int K);
void		lowp_int8_avx512_quantize(uint8_t *q, const float *x, int K, int n, float r);
#elif defined(__aarch64__)
void		lowp_bf16_neon_kernel(int kk, const uint32_t *a, int h, const uint32_t *b,
								  float *c, ptrdiff_t ldc, int m, int n, float alpha, float beta);
/* int8 by widening multiplies (every AArch64 CPU) */
void		lowp_int8_neon_kernel(int kq, const uint32_t *a, int h, const uint32_t *b,
								  float *c, ptrdiff_t ldc, int m, int n, float alpha,
								  const float *rscale, const float *cscale,
								  const int32_t *colsum, float beta);
/* int8 by SDOT, where the CPU has the dot-product instructions (FEAT_DotProd) */
void		lowp_int8_neondot_kernel(int kq, const uint32_t *a, int h, const uint32_t *b,
									 float *c, ptrdiff_t ldc, int m, int n, float alpha,
									 const float *rscale, const float *cscale,
									 const int32_t *colsum, float beta);
#endif

/*
 * int4's matrix-vector path (lowp_int4_gemm.c): the h ≤ TFM_LOWP_GEMV_ROWS
 * rows of A quantized per block of 32 (tfm_int4_quantize_row): row r's
 * values at q[r·kb·32 ..] (zeros past K), per block b its scale
 * da[r·kb + b] and corr[r·kb + b] = −8 · Σ of its 32 values (so
 * Σ (q_w − 8)·q_a = Σ q_w·q_a + corr: the nibbles go in unsigned).
 */
/* the nibbles of one group's block in the interleaved layout (include/tfm/lowp.h): 4 × 64 bytes */
#define LOWP_INT4_GROUP_BLOCK_BYTES (TFM_INT4_GROUP * 16)

typedef struct lowp_int4_act
{
	const int8_t *q;
	const int32_t *corr;
	const float *da;
	int			kb;
} lowp_int4_act;

/*
 * int4 kernel: C[r][j] for r < h, j in [16·g0, 16·g1) ∩ [0, N): per column
 * and block b the exact int32 sum s_b = Σ q_w·q_a + corr, then
 * acc = fma(float(s_b), dw_b · da_b, acc) (dw_b: the weight block's scale)
 * block after block from acc = 0; C = alpha · acc (beta 0) or
 * fma(alpha, acc, beta · C).  Every path in this order.
 */
typedef void (*lowp_int4_kernel) (const lowp_int4_act *a, int h, const tfm_int4_weights *W,
								  int g0, int g1, float alpha, float beta,
								  float *C, ptrdiff_t ldc);

/* the paths, in lowp_int4_ref.c, lowp_int4_avx512.c, lowp_int4_avx2.c, lowp_int4_neon.c */
void		lowp_int4_ref_kernel(const lowp_int4_act *a, int h, const tfm_int4_weights *W,
								 int g0, int g1, float alpha, float beta, float *C, ptrdiff_t ldc);
void		lowp_int4_avx512_kernel(const lowp_int4_act *a, int h, const tfm_int4_weights *W,
									int g0, int g1, float alpha, float beta, float *C, ptrdiff_t ldc);
void		lowp_int4_avx2_kernel(const lowp_int4_act *a, int h, const tfm_int4_weights *W,
								  int g0, int g1, float alpha, float beta, float *C, ptrdiff_t ldc);
#if defined(__aarch64__)
/* lowp_int4_neon.c: plain NEON, and SDOT where the CPU has it */
void		lowp_int4_neon_kernel(const lowp_int4_act *a, int h, const tfm_int4_weights *W,
								  int g0, int g1, float alpha, float beta, float *C, ptrdiff_t ldc);
void		lowp_int4_neondot_kernel(const lowp_int4_act *a, int h, const tfm_int4_weights *W,
									 int g0, int g1, float alpha, float beta, float *C, ptrdiff_t ldc);
#endif
/*
 * columns [j0, j0 + n) of W as fp32 into dst, column j's kb·32 values at
 * dst + (j − j0)·kb·32 (exact products; lowp_int4_ref.c): the fallback's
 * batched products
 */
void		lowp_int4_dequantize(float *dst, const tfm_int4_weights *W, int j0, int n);

/* what a fused product does to C after A·W: C = act(A·W + bias), beta 0 */
typedef struct lowp_epilogue
{
	const float *bias;			/* N floats, or NULL */
	tfm_row_fn	act;			/* in place over pieces of rows, or NULL */
} lowp_epilogue;

#if defined(__x86_64__)
/*
 * the bf16 GEMM on AMX tiles (lowp_bf16_amx.c): the whole driver, M > 4;
 * epi NULL or (alpha 1, beta 0) a bias and activation applied in the blocks
 */
size_t		lowp_amx_work_bytes(int M, int K);
void		lowp_bf16_amx_gemm(int M, int N, int K, float alpha,
							   const float *A, ptrdiff_t rsa, ptrdiff_t csa,
							   const tfm_bf16_weights *W, float beta, float *C, ptrdiff_t ldc,
							   void *work, const lowp_epilogue *epi);

/*
 * the int8 GEMM's blocks on AMX tiles (lowp_int8_amx.c): A quantized as
 * rows of kq quads one after the other (rows past M at 128, padded to 32),
 * kq a multiple of 16; bias (beta 0) and act as lowp_int8_gemm.c's blocks
 */
void		lowp_int8_amx_blocks(int M, int N, int kq, const uint32_t *a, const float *rscale,
								 const tfm_int8_weights *W, float alpha, float beta,
								 const float *bias, tfm_row_fn act, float *C, ptrdiff_t ldc);

/* s[0..NR) = pairs (r0[j], r1[j]) exactly rounded, with AVX-512 (lowp_bf16_amx.c) */
void		lowp_avx512_pair_row(uint32_t *s, const float *r0, const float *r1);

/*
 * dispatch (lowp_dispatch_x86.c): the AVX-512 paths (AVX512_BF16, AMX,
 * AVX512_VNNI), the AVX2 + FMA one, and the kernel each driver calls
 */
bool		lowp_bf16_fast(void);
bool		lowp_bf16_amx(void);
bool		lowp_int8_fast(void);
bool		lowp_int8_amx(void);
bool		lowp_avx2(void);
bool		lowp_int4_fast(void);
bool		lowp_int4_avx2(void);
#else

/* AArch64's path for the K-quant blocks: 0 the reference (forced), 1 NEON, 2 SDOT (lowp_dispatch_arm.c) */
int			lowp_kq_neon_level(void);

/*
 * No AMX or AVX-512 outside x86-64: lowp_bf16_fast, lowp_bf16_amx and
 * int4's x86 paths are false, so the drivers' calls below never run (and fold away); they keep
 * the drivers free of conditional compilation.
 */
static inline bool
lowp_int4_fast(void)
{
	return false;
}

static inline bool
lowp_int4_avx2(void)
{
	return false;
}

static inline bool
lowp_bf16_fast(void)
{
	return false;
}

static inline bool
lowp_bf16_amx(void)
{
	return false;
}

static inline bool
lowp_int8_amx(void)
{
	return false;
}

static inline void
lowp_int8_amx_blocks(int M, int N, int kq, const uint32_t *a, const float *rscale,
					 const tfm_int8_weights *W, float alpha, float beta, const float *bias,
					 tfm_row_fn act, float *C, ptrdiff_t ldc)
{
	(void) M, (void) N, (void) kq, (void) a, (void) rscale, (void) W, (void) alpha;
	(void) beta, (void) bias, (void) act, (void) C, (void) ldc;
}

static inline size_t
lowp_amx_work_bytes(int M, int K)
{
	(void) M, (void) K;
	return 0;
}

static inline void
lowp_bf16_amx_gemm(int M, int N, int K, float alpha, const float *A, ptrdiff_t rsa,
				   ptrdiff_t csa, const tfm_bf16_weights *W, float beta, float *C,
				   ptrdiff_t ldc, void *work, const lowp_epilogue *epi)
{
	(void) M, (void) N, (void) K, (void) alpha, (void) A, (void) rsa, (void) csa;
	(void) W, (void) beta, (void) C, (void) ldc, (void) work, (void) epi;
}

static inline void
lowp_avx512_pair_row(uint32_t *s, const float *r0, const float *r1)
{
	(void) s, (void) r0, (void) r1;
}
#endif

/*
 * dispatch (lowp_dispatch_x86.c or lowp_dispatch_arm.c): whether bf16
 * inference products of more than TFM_LOWP_GEMV_ROWS rows run fp32
 * (lowp_set.c), and the kernel each driver calls
 */
bool		lowp_bf16_batched_fp32(void);
lowp_bf16_kernel lowp_bf16_chosen(void);
lowp_int8_kernel lowp_int8_chosen(void);
lowp_int4_kernel lowp_int4_chosen(void);

#endif							/* TFM_LOWP_INTERNAL_H */
