/*
 * lowp.h — low-precision products: bf16, int8 and int4 weights for inference.
 *
 * Both compute C = alpha · A · W + beta · C with A an M × K matrix of fp32
 * activations (row stride lda) and W the K × N weight of tfm's linear layers
 * (stored (in, out), so y = x·W), converted once into a packed form:
 *
 * bf16.  W is rounded to bf16 (round to nearest even) and stored as panels
 *   of TFM_LOWP_NR columns; inside a panel, K runs in pairs and each
 *   32-bit slot holds (w[k][j], w[k+1][j]) — the operand layout of
 *   AVX512_BF16's vdpbf16ps and of AMX-BF16's tdpbf16ps; K is padded with
 *   zeros to a multiple of 2·TFM_BF16_KP (an AMX tile's depth).  A is
 *   rounded to bf16 per call (into the caller's work buffer) and the
 *   products are summed in fp32.  A product of two bf16 numbers is exact in
 *   fp32, so the fast paths and the portable fallback differ only in the
 *   order of the fp32 sums — and in one more thing: vdpbf16ps and tdpbf16ps
 *   treat bf16 subnormals (|x| < 2^-126) as zero and flush subnormal sums,
 *   the fallback does not.  A may be strided both ways (tfm_bf16_gemm_strided:
 *   a transposed activation, for a weight's gradient Xᵀ·dY), and any fp32
 *   matrix may be packed as W (an activation too: dY of that product).
 *
 * int8.  W is quantized per output channel (column j): scale s_j =
 *   max_k |w[k][j]| / 127, q = round(w / s_j) in [-127, 127], in panels of
 *   TFM_LOWP_NR columns with 4 consecutive k per 32-bit slot (the layout of
 *   AVX512_VNNI's vpdpbusd), plus Σ_k q[k][j] per column.  Each row of A is
 *   quantized per call: r_i = max_k |a[i][k]| / 127, a = round(x / r_i),
 *   stored as a + 128 (unsigned, as vpdpbusd wants); the int32 sums are
 *   corrected by 128 · Σ_k q[k][j].  C[i][j] = alpha · r_i · s_j · Σ a·q +
 *   beta · C[i][j].  The integer sums are exact on every path (K ≤
 *   TFM_INT8_MAX_K keeps them within int32), so the fast path and the
 *   fallback give identical results.  Activations must be finite.
 *
 * int4.  W is quantized in blocks of 32 consecutive k of one column, each
 *   block exactly GGUF's Q4_0: an fp16 scale d and 16 bytes of nibbles
 *   (element t < 16 in the low nibble of byte t, element 16 + t in its high
 *   nibble), w = d · (q − 8), q in 0..15; d = (the block's value of largest
 *   magnitude) / −8, as ggml's quantize_row_q4_0_ref (so a Q4_0 tensor of a
 *   GGUF file, N rows of K / 32 blocks, row j = column j, is such a weight
 *   block for block).  K is padded to a multiple of 32 (zeros).  The blocks
 *   are stored interleaved for the kernels, as llama.cpp repacks Q4_0 at
 *   load: columns in groups of TFM_INT4_GROUP (N padded with zero columns),
 *   per group and block 4 × 64 bytes of nibbles — the i-th 64 holding, for
 *   each column jj of the group, bytes 4i .. 4i + 3 of its block at 4·jj
 *   (one vpdpbusd operand per 4 k) — and, in a second array, the group's 16
 *   fp16 scales per block.  Packing moves bytes only: tfm_int4_put_block
 *   and tfm_int4_get_block write and read a column's block in GGUF's form.
 *   Products of M ≤ TFM_LOWP_GEMV_ROWS rows (decoding) quantize each row of
 *   A per block of 32 as GGUF's Q8_0 does (fp32 scale r = max|x| / 127, q =
 *   round(x / r)); per column and block the exact int32 sum
 *   s = Σ (q_w − 8)·q_a scales into one fp32 sum, acc = fma(s, d·r, acc),
 *   block after block, on every path (src/core/kernels/lowp/lowp_internal.h), so
 *   every path gives the same bits.  Larger products (batched passes) run
 *   the same way where a SIMD kernel does (AVX512_VNNI, AVX2, NEON), four rows a
 *   call with a group's blocks in cache (on Zen 4 2.4× and 1.2× BLIS's
 *   fp32), so each row's result is the one it has alone; the plain-C
 *   fallback dequantizes W to fp32 in tiles of columns for them (exactly:
 *   d · (q − 8) is an fp32 number) and multiplies by A in fp32 with BLIS,
 *   A staying fp32.
 *
 * Products with M ≤ TFM_LOWP_GEMV_ROWS (decoding one to four tokens) take a
 * matrix-vector path that streams each weight once; larger ones a register-
 * and cache-blocked GEMM.  Both use the core's threads (tfm_set_threads).
 * beta = 0 never reads C (it may hold NaN).  K = 0 gives C = beta · C.
 *
 * Paths (lowp_dispatch_x86.c): bf16 runs "amx" where the CPU has AMX-BF16 and
 * the OS grants the tile state (the GEMM on tiles, the matrix-vector path
 * on AVX512_BF16), else "avx512bf16" where the CPU has that; int8
 * "avx512vnni"; without those, both run "avx2" where the CPU has AVX2 +
 * FMA (bf16 widened to fp32 in registers; int8 by vpmaddubsw/vpmaddwd,
 * the same integer sums); otherwise (or when TFM_LOWP_FORCE=fallback is in
 * the environment at the first call, or after tfm_lowp_force_fallback(true))
 * both run "fallback": plain C, compiled for AVX-512F, AVX2+FMA and
 * baseline x86-64, the version picked at load time (TFM_HOT).
 * TFM_LOWP_FORCE=avx2 (or tfm_lowp_force_avx2(true)) skips the AVX-512
 * paths; TFM_LOWP_FORCE=noamx (or tfm_lowp_force_noamx(true)) keeps bf16
 * off AMX.  On AArch64 (lowp_dispatch_arm.c) bf16 runs "neon" (widened to
 * fp32) and int8 "neon-dotprod" (SDOT) where the CPU has the dot-product
 * instructions, else "neon" (int4 the same); TFM_LOWP_FORCE=neon (or
 * tfm_lowp_force_avx2(true)) keeps int8 off SDOT, =fallback as above.
 * Every path reads the same packed weights, so a weight packed once serves
 * all.
 *
 * The core's way: nothing here allocates.  Packed weights live in caller
 * memory of tfm_bf16_pack_bytes / tfm_int8_pack_bytes bytes, and each
 * product takes a work buffer of tfm_bf16_work_bytes / tfm_int8_work_bytes;
 * both must be 64-byte aligned.
 */
#ifndef TFM_LOWP_H
#define TFM_LOWP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TFM_LOWP_NR 32			/* columns per weight panel */
#define TFM_LOWP_GEMV_ROWS 4	/* M up to this: the matrix-vector path */
#define TFM_INT8_MAX_K 65536	/* int32 sums of 255·127 products stay exact */
#define TFM_BF16_KP 16			/* bf16 pairs: packed K is a multiple of 2·this */
/*
 * The packed layouts' version: files of packed weights shared between
 * processes (src/pg/shared_weights.c) carry it, so a build that packs
 * differently never reads another build's file.  Bump it with any change
 * to the panels, their padding or the rounding.
 */
#define TFM_LOWP_PACK_VERSION 4	/* 4: int4 blocks interleaved in groups of 16 columns */

/* the precision of a model's products (tfm/precision.h) */
typedef enum tfm_precision
{
	TFM_PREC_FP32 = 0,
	TFM_PREC_BF16 = 1,
	TFM_PREC_INT8 = 2,
	TFM_PREC_INT4 = 3,
	TFM_PREC_GGUF = 4			/* a GGUF file's blocks as they are (tfm/kquant.h) */
} tfm_precision;

#define TFM_INT4_BLOCK 32		/* weights per int4 block (GGUF Q4_0) */
#define TFM_INT4_BLOCK_BYTES 18 /* fp16 scale + 16 bytes of nibbles (GGUF's form) */
#define TFM_INT4_GROUP 16		/* columns interleaved in the packed form */

/* ---- conversions ---------------------------------------------------------- */

/* fp32 → bf16, round to nearest even; NaN stays NaN (made quiet), ±inf stays */
static inline uint16_t
tfm_bf16_from_float(float f)
{
	union
	{
		float		f;
		uint32_t	u;
	}			v = {f};

	if ((v.u & 0x7FFFFFFFu) > 0x7F800000u)
		return (uint16_t) ((v.u >> 16) | 0x0040u);
	return (uint16_t) ((v.u + 0x7FFFu + ((v.u >> 16) & 1u)) >> 16);
}

/* bf16 → fp32, exact */
static inline float
tfm_bf16_to_float(uint16_t h)
{
	union
	{
		uint32_t	u;
		float		f;
	}			v = {(uint32_t) h << 16};

	return v.f;
}

/* fp32 → IEEE fp16, round to nearest even (±inf past 65504, NaN stays NaN) */
static inline uint16_t
tfm_fp16_from_float(float f)
{
	union
	{
		float		f;
		uint32_t	u;
	}			v = {f};
	uint16_t	sign = (uint16_t) ((v.u >> 16) & 0x8000u);
	uint32_t	x = v.u & 0x7FFFFFFFu;

	if (x > 0x7F800000u)
		return sign | 0x7E00u;
	if (x >= 0x477FF000u)		/* 65520 and up round to inf */
		return sign | 0x7C00u;
	if (x < 0x38800000u)		/* below 2^-14: a subnormal half, m · 2^-24 */
	{
		v.u = x;
		return sign | (uint16_t) __builtin_rintf(v.f * 16777216.0f);
	}
	{
		uint32_t	h = ((x >> 23) - 112) << 10 | ((x >> 13) & 0x3FFu),
					rem = x & 0x1FFFu;

		h += rem > 0x1000u || (rem == 0x1000u && (h & 1u));
		return sign | (uint16_t) h;
	}
}

/* IEEE fp16 → fp32, exact (NaN keeps its payload; safetensors' F16 uses it too) */
static inline float
tfm_fp16_to_float(uint16_t h)
{
	union
	{
		uint32_t	u;
		float		f;
	}			v;
	uint32_t	sign = (uint32_t) (h & 0x8000u) << 16,
				e = (h >> 10) & 0x1Fu,
				m = h & 0x3FFu;

	if (e == 0)
	{
		float		f = (float) m * 5.9604644775390625e-8f;	/* 2^-24 */

		return sign ? -f : f;
	}
	v.u = sign | (e == 31 ? 0x7F800000u | m << 13 : (e + 112) << 23 | m << 13);
	return v.f;
}

void		tfm_bf16_from_floats(uint16_t *dst, const float *src, size_t n);
void		tfm_bf16_to_floats(float *dst, const uint16_t *src, size_t n);

/* ---- packed weights -------------------------------------------------------- */

typedef struct tfm_bf16_weights
{
	uint16_t   *data;			/* panels: (N/NR) × (kp/2) × NR × 2 */
	int			K,
				N;
	int			kp;				/* K rounded up to a multiple of 2·TFM_BF16_KP */
} tfm_bf16_weights;

typedef struct tfm_int8_weights
{
	int8_t	   *data;			/* panels: (N/NR) × (kp/4) × NR × 4 */
	float	   *scale;			/* (np) per column: max|w| / 127 (0 for a zero column) */
	int32_t    *colsum;			/* (np) per column: Σ_k q[k][j] */
	int			K,
				N;
	int			kp;				/* K rounded up to a multiple of 4 */
} tfm_int8_weights;

typedef struct tfm_int4_weights
{
	uint8_t    *data;			/* groups × kb × 256 bytes of nibbles (above) */
	uint16_t   *scales;			/* groups × kb × TFM_INT4_GROUP fp16 scales */
	int			K,
				N;
	int			kb;				/* blocks per column: K / 32 rounded up */
	int			groups;			/* N / TFM_INT4_GROUP rounded up */
} tfm_int4_weights;

/*
 * Pack the K × N weight W (element [k][j] at W[k·rs + j·cs]: rs = N, cs = 1
 * for tfm's (in, out) layout, rs = 1, cs = K for an (out, in) one) into buf,
 * which holds tfm_*_pack_bytes(K, N) bytes, 64-byte aligned.  Columns past
 * N and k past K are zeros.  The struct points into buf.  Large packs run
 * on the core's threads.
 */
size_t		tfm_bf16_pack_bytes(int K, int N);
void		tfm_bf16_pack(tfm_bf16_weights *w, void *buf, const float *W,
						  ptrdiff_t rs, ptrdiff_t cs, int K, int N);
/* the weight as the kernels see it: element [k][j] as fp32 */
float		tfm_bf16_weight(const tfm_bf16_weights *w, int k, int j);

/*
 * The struct of a K × N weight packed earlier into buf by tfm_*_pack (in
 * this process or another: the layout depends only on K and N), without
 * packing again: for packed copies shared between processes.
 */
void		tfm_bf16_view(tfm_bf16_weights *w, void *buf, int K, int N);
void		tfm_int8_view(tfm_int8_weights *w, void *buf, int K, int N);

size_t		tfm_int8_pack_bytes(int K, int N);
void		tfm_int8_pack(tfm_int8_weights *w, void *buf, const float *W,
						  ptrdiff_t rs, ptrdiff_t cs, int K, int N);
/* the quantized weight q[k][j] (dequantized: q · scale[j]) */
int			tfm_int8_weight(const tfm_int8_weights *w, int k, int j);

size_t		tfm_int4_pack_bytes(int K, int N);
void		tfm_int4_pack(tfm_int4_weights *w, void *buf, const float *W,
						  ptrdiff_t rs, ptrdiff_t cs, int K, int N);
void		tfm_int4_view(tfm_int4_weights *w, void *buf, int K, int N);
/* the weight as the kernels see it: element [k][j], d · (q − 8) */
float		tfm_int4_weight(const tfm_int4_weights *w, int k, int j);
/* block b of column j in GGUF's form (TFM_INT4_BLOCK_BYTES), written or read */
void		tfm_int4_put_block(tfm_int4_weights *w, int j, int b, const uint8_t *blk);
void		tfm_int4_get_block(const tfm_int4_weights *w, int j, int b, uint8_t *blk);
/*
 * One row of n activations quantized as tfm_int4_gemm's matrix-vector path
 * does: per block of 32, d[b] = max|x| / 127 and q = round(x / d[b])
 * (0 for a zero block); q has n rounded up to 32 entries (zeros past n).
 */
void		tfm_int4_quantize_row(int8_t *q, float *d, const float *x, int n);

/*
 * Quantize one row of n activations the way tfm_int8_gemm does: q[k] =
 * round(x[k] / r) in [-127, 127], returns r = max|x| / 127 (0 for a zero
 * row, then every q is 0).  For tests and callers who want the error.
 */
float		tfm_int8_quantize_row(int8_t *q, const float *x, int n);

/* ---- products -------------------------------------------------------------- */

size_t		tfm_bf16_work_bytes(int M, int K);
void		tfm_bf16_gemm(int M, int N, int K, float alpha,
						  const float *A, ptrdiff_t lda,
						  const tfm_bf16_weights *W,
						  float beta, float *C, ptrdiff_t ldc, void *work);
/*
 * The same with A[i][k] at A[i·rsa + k·csa] (rsa = lda, csa = 1 is
 * tfm_bf16_gemm; rsa = 1, csa = lda reads the M × K matrix Aᵀ of a
 * row-major K × M one, without a transposed copy).
 */
void		tfm_bf16_gemm_strided(int M, int N, int K, float alpha,
								  const float *A, ptrdiff_t rsa, ptrdiff_t csa,
								  const tfm_bf16_weights *W,
								  float beta, float *C, ptrdiff_t ldc, void *work);

/* an elementwise function over n floats (out may be in): an activation */
typedef void (*tfm_row_fn) (float *out, const float *in, size_t n);

/*
 * C (M × N) = act(A·W + bias): bias N floats or NULL, act NULL or applied
 * in place.  On AMX the sums start from the bias and the activation runs
 * on each block of C while it is in cache; elsewhere it is the product with
 * the bias broadcast first and the activation after.  Same work buffer as
 * tfm_bf16_gemm.
 */
void		tfm_bf16_gemm_fused(int M, int N, int K, const float *A, ptrdiff_t lda,
								const tfm_bf16_weights *W, const float *bias, tfm_row_fn act,
								float *C, ptrdiff_t ldc, void *work);
/*
 * The same with each row of C a function of its row of A alone, the same
 * bits whatever M is (one loop order at every M: AMX's tiles where usable,
 * else the blocked loops); its work buffer is
 * tfm_bf16_work_bytes(max(M, TFM_LOWP_GEMV_ROWS + 1), K).
 */
void		tfm_bf16_gemm_rows(int M, int N, int K, const float *A, ptrdiff_t lda,
							   const tfm_bf16_weights *W, const float *bias, tfm_row_fn act,
							   float *C, ptrdiff_t ldc, void *work);

/* every one of the M rows of C (ldc apart) = row (N values): a bias broadcast */
void		tfm_lowp_rows_set(float *C, ptrdiff_t ldc, int M, int N, const float *row);
/* act over the M rows of N values of C (ldc apart), in place, on the core's threads */
void		tfm_lowp_rows_apply(tfm_row_fn act, float *C, ptrdiff_t ldc, int M, int N);

size_t		tfm_int8_work_bytes(int M, int K);
void		tfm_int8_gemm(int M, int N, int K, float alpha,
						  const float *A, ptrdiff_t lda,
						  const tfm_int8_weights *W,
						  float beta, float *C, ptrdiff_t ldc, void *work);

/*
 * C (M × N) = act(A·W + bias) (bias N floats or NULL, act NULL or in
 * place): the bits of tfm_int8_gemm with beta 1 over C set to the bias,
 * then act over C; above TFM_LOWP_GEMV_ROWS rows the bias and act are
 * applied block by block while C's block is in cache.  Same work buffer.
 */
void		tfm_int8_gemm_fused(int M, int N, int K, const float *A, ptrdiff_t lda,
								const tfm_int8_weights *W, const float *bias, tfm_row_fn act,
								float *C, ptrdiff_t ldc, void *work);

size_t		tfm_int4_work_bytes(int M, int K);
void		tfm_int4_gemm(int M, int N, int K, float alpha,
						  const float *A, ptrdiff_t lda,
						  const tfm_int4_weights *W,
						  float beta, float *C, ptrdiff_t ldc, void *work);
/* the same on the quantized path at every M: each row of C a function of its row of A */
void		tfm_int4_gemm_rows(int M, int N, int K, float alpha,
							   const float *A, ptrdiff_t lda,
							   const tfm_int4_weights *W,
							   float beta, float *C, ptrdiff_t ldc, void *work);

/* ---- dispatch -------------------------------------------------------------- */

/*
 * the path each product runs: "amx" / "avx512bf16" / "avx512vnni" / "avx2",
 * "neon" / "neon-dotprod" (AArch64) or "fallback"
 */
const char *tfm_lowp_bf16_kernel(void);
const char *tfm_lowp_int8_kernel(void);
/*
 * int4's kernel: "avx512vnni" / "avx2" / "neon-dotprod" / "neon" /
 * "fallback" (whose batched products are BLIS's on dequantized tiles)
 */
const char *tfm_lowp_int4_kernel(void);
/* true where bf16 products run on the CPU's own bf16 instructions (AMX, AVX512_BF16) */
bool		tfm_lowp_bf16_native(void);
/* why (CPU flags found or missing, forced by the environment or a call) */
const char *tfm_lowp_reason(void);
/* true: every product runs the fallback; false: back to what the CPU has */
void		tfm_lowp_force_fallback(bool on);
/*
 * true: no AVX-512 path (AVX2 + FMA where the CPU has it, else the
 * fallback); on AArch64 no SDOT (plain NEON)
 */
void		tfm_lowp_force_avx2(bool on);
/* true: bf16 products do not use AMX (AVX512_BF16 or the fallback instead) */
void		tfm_lowp_force_noamx(bool on);

#endif							/* TFM_LOWP_H */
