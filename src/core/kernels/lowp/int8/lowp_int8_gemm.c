/*
 * lowp_int8_gemm.c — C = alpha · A · W + beta · C with W quantized per
 * column (tfm_int8_pack) and A quantized here, per row, into the caller's
 * work buffer (the rows' scales, then A's panels of unsigned bytes
 * a + 128); the kernel is the dispatched one (lowp_dispatch_x86.c,
 * lowp_dispatch_arm.c).
 *
 * Up to TFM_LOWP_GEMV_ROWS rows the loops are lowp_drive.c's
 * matrix-vector ones; above, gemm_blocked's (below), or on AMX-INT8
 * lowp_int8_amx.c's blocks (K a multiple of 64).  No K blocking: each
 * kernel call sums all of K in int32 before scaling (so every path gives
 * the same bits).  A block of A (INT8_MB rows × K bytes) and one weight
 * panel (32 × K bytes) stay in L2 for the model's K (≤ a few thousand).
 */
#include <string.h>

#include "tfm/blas.h"
#include "../lowp_internal.h"
#include "../../vecmath.h"

static size_t
scales_bytes(int M)
{
	return lowp_round_up(lowp_round_up(M > 0 ? M : 1, LOWP_MR) * sizeof(float), LOWP_ALIGN);
}

#define AMX_ROWS 32				/* lowp_int8_amx.c's rows a block: A's rows padded to this */

/* on AMX: the rows' scales, then A's rows of quads, rows padded to AMX_ROWS */
static size_t
amx_scales_bytes(int M)
{
	return lowp_round_up(lowp_round_up(M > 0 ? M : 1, AMX_ROWS) * sizeof(float), LOWP_ALIGN);
}

size_t
tfm_int8_work_bytes(int M, int K)
{
	size_t		rows = M <= TFM_LOWP_GEMV_ROWS ? (size_t) (M > 0 ? M : 1) :
		lowp_round_up(M, LOWP_MR),
				quads = lowp_round_up(K > 0 ? K : 1, 4) / 4,
				own = scales_bytes(M) + lowp_round_up(rows * quads * sizeof(uint32_t), LOWP_ALIGN),
				amx = M > TFM_LOWP_GEMV_ROWS ?
		amx_scales_bytes(M) + lowp_round_up(lowp_round_up(M, AMX_ROWS) * quads * sizeof(uint32_t),
											LOWP_ALIGN) : 0;

	return own > amx ? own : amx;
}

#define PACK_CHUNK 1024		/* activations quantized at a time, contiguously */
#define INT8_MB (16 * LOWP_MR)	/* rows of A per block of the GEMM: 16 panels, in L2 */

#if defined(__x86_64__)
#define QUANT_AVX512() lowp_int8_fast()
#else
#define QUANT_AVX512() false
#endif

/*
 * rows [r0, r0 + h) of A quantized into one panel of height h (rows past M
 * and k past K: zero activations, i.e. bytes 128); their scales to rs[].
 * Each row is quantized PACK_CHUNK values at a time into a contiguous
 * buffer (a loop the compiler vectorizes, or lowp_int8_avx512.c's, the
 * same operations), then spread to its panel slots.
 */
TFM_HOT static void
pack_panel(uint32_t *restrict dst, float *rs, int h, const float *A, ptrdiff_t lda,
		   int M, int K, int r0)
{
	int			quads = (K + 3) / 4;
	uint32_t	buf[PACK_CHUNK / 4];
	uint8_t    *b = (uint8_t *) buf;
	const bool	avx512 = QUANT_AVX512();

	for (int r = 0; r < h; r++)
	{
		const float *x = A + (size_t) (r0 + r) * lda;
		float		mx = 0.0f,
					s;

		if (r0 + r >= M)
		{
			for (int p = 0; p < quads; p++)
				dst[(size_t) p * h + r] = 0x80808080u;
			rs[r] = 0.0f;
			continue;
		}
#if defined(__x86_64__)
		if (avx512)
			mx = lowp_int8_avx512_absmax(x, K);
		else
#endif
			for (int k = 0; k < K; k++)
			{
				float		v = __builtin_fabsf(x[k]);

				mx = v > mx ? v : mx;
			}
		s = mx / 127.0f;
		rs[r] = s;
		for (int k0 = 0; k0 < quads * 4; k0 += PACK_CHUNK)
		{
			int			n = quads * 4 - k0 < PACK_CHUNK ? quads * 4 - k0 : PACK_CHUNK,
						real = K - k0 < n ? K - k0 : n;

			if (s > 0.0f && avx512)
			{
#if defined(__x86_64__)
				lowp_int8_avx512_quantize(b, x + k0, real, n, s);
#endif
			}
			else
			{
				if (s > 0.0f)
					for (int k = 0; k < real; k++)
						b[k] = (uint8_t) (lowp_quantize(x[k0 + k], s) + 128);
				else
					for (int k = 0; k < real; k++)
						b[k] = 128;
				for (int k = real; k < n; k++)
					b[k] = 128;
			}
			for (int p = 0; p < n / 4; p++)
				dst[(size_t) (k0 / 4 + p) * h + r] = buf[p];
		}
	}
}

/* an int8 product for lowp_gemm_drive */
typedef struct int8_job
{
	lowp_gemm_job base;
	lowp_int8_kernel kernel;
	const float *A;
	ptrdiff_t	lda;
	const tfm_int8_weights *W;
	float	   *rs;				/* A's row scales */
} int8_job;

static void
int8_pack(const lowp_gemm_job *job, int r0, int h)
{
	const int8_job *q = (const int8_job *) job;

	pack_panel(job->a + (size_t) r0 * job->slots, q->rs + r0, h, q->A, q->lda,
			   job->pr.M, job->pr.K, r0);
}

/* one block takes all of K (kblock = slots: k0 is 0) */
static void
int8_block(const lowp_gemm_job *job, int h, int i, int m, int j, int n, int k0, int kc)
{
	const int8_job *q = (const int8_job *) job;
	const lowp_product *pr = &job->pr;

	(void) k0;
	q->kernel(kc, job->a + (size_t) i * job->slots, h,
			  (const uint32_t *) q->W->data + (size_t) j * job->slots,
			  pr->C + (size_t) i * pr->ldc + j, pr->ldc, m, n, pr->alpha, q->rs + i,
			  q->W->scale + j, q->W->colsum + j, pr->beta);
}

static inline int
min_int(int a, int b)
{
	return a < b ? a : b;
}

/*
 * a block's rows (m ≤ LOWP_MR, n ≤ LOWP_NR columns) set to the bias: a
 * full panel's rows by copies of a constant size, which the compiler
 * expands into vector moves (a memmove call per 128-byte row cost as much
 * as the copy: 3-4 % of an int8 encoder pass at 128 rows)
 */
static inline void
set_bias(float *restrict c, ptrdiff_t ldc, int m, const float *restrict bias, int n)
{
	if (n == LOWP_NR)
		for (int r = 0; r < m; r++)
			memcpy(c + (size_t) r * ldc, bias, sizeof(float) * LOWP_NR);
	else
		for (int r = 0; r < m; r++)
			memcpy(c + (size_t) r * ldc, bias, sizeof(float) * n);
}

/*
 * M > TFM_LOWP_GEMV_ROWS: A packed into panels of LOWP_MR rows (the threads
 * share the panels out), then tasks of one weight panel (LOWP_NR columns)
 * × one block of INT8_MB rows, shared out in contiguous runs (at 2 threads
 * and up to INT8_MB rows, each thread half of the columns: one weight
 * panel read by one thread, once, against every row panel).  With a bias,
 * each 12 × 32 block of C is set to it just before the kernel adds the
 * product (beta 1: fma(S, scale, bias), the bits of the bias broadcast
 * first); with an activation, the block's rows go through it right after,
 * while in L1.
 */
static void
gemm_blocked(int8_job *q, int M, int N, float alpha, float beta, const float *bias,
			 tfm_row_fn act, float *C, ptrdiff_t ldc)
{
	const int	slots = q->base.slots,
				threads = tfm_get_threads(),
				mpanels = (M + LOWP_MR - 1) / LOWP_MR,
				nq = (N + LOWP_NR - 1) / LOWP_NR,
				mt = (M + INT8_MB - 1) / INT8_MB;
	const double flops = 2.0 * M * N * q->base.pr.K;
	const uint32_t *w = (const uint32_t *) q->W->data,
			   *a = q->base.a;

#pragma omp parallel num_threads(threads) if(threads > 1 && flops > 1e6)
	{
#pragma omp for schedule(static)
		for (int i = 0; i < mpanels; i++)
			int8_pack(&q->base, i * LOWP_MR, LOWP_MR);
#pragma omp for schedule(static)
		for (int t = 0; t < mt * nq; t++)
		{
			int			i0 = t / nq * INT8_MB,
						i1 = min_int(M, i0 + INT8_MB),
						j = t % nq * LOWP_NR,
						n = min_int(N - j, LOWP_NR);

			for (int i = i0; i < i1; i += LOWP_MR)
			{
				int			m = min_int(i1 - i, LOWP_MR);
				float	   *c = C + (size_t) i * ldc + j;

				if (bias)
					set_bias(c, ldc, m, bias + j, n);
				q->kernel(slots, a + (size_t) i * slots, LOWP_MR, w + (size_t) j * slots, c, ldc,
						  m, n, alpha, q->rs + i, q->W->scale + j, q->W->colsum + j,
						  bias ? 1.0f : beta);
				if (act)
					for (int r = 0; r < m; r++)
						act(c + (size_t) r * ldc, c + (size_t) r * ldc, (size_t) n);
			}
		}
	}
}

/*
 * M > TFM_LOWP_GEMV_ROWS on AMX: A quantized row by row (as pack_panel
 * does for a panel, each row its own panel of height 1: its quads one
 * after the other), rows past M up to a multiple of AMX_ROWS at 128, then
 * lowp_int8_amx.c's blocks
 */
static void
gemm_amx(int8_job *q, int M, int N, int K, float alpha, float beta, const float *bias,
		 tfm_row_fn act, float *C, ptrdiff_t ldc, void *work)
{
	const int	slots = q->base.slots,
				rows = lowp_round_up(M, AMX_ROWS),
				threads = tfm_get_threads();
	float	   *rs = work;
	uint32_t   *a = (uint32_t *) ((char *) work + amx_scales_bytes(M));

#pragma omp parallel for num_threads(threads) if(threads > 1 && 2.0 * M * N * K > 1e6) schedule(static)
	for (int r = 0; r < rows; r++)
		pack_panel(a + (size_t) r * slots, rs + r, 1, q->A, q->lda, M, K, r);
	lowp_int8_amx_blocks(M, N, slots, a, rs, q->W, alpha, beta, bias, act, C, ldc);
}

/* C = act(alpha · A · W + bias) (bias: beta 0), or alpha · A · W + beta · C */
static void
int8_gemm(int M, int N, int K, float alpha, const float *A, ptrdiff_t lda,
		  const tfm_int8_weights *W, float beta, const float *bias, tfm_row_fn act,
		  float *C, ptrdiff_t ldc, void *work)
{
	int8_job	job = {
		.base = {
			.slots = W->kp / 4,
			.kblock = W->kp / 4,
			.a = (uint32_t *) ((char *) work + scales_bytes(M)),
			.pack = int8_pack,
			.block = int8_block,
		},
		.kernel = lowp_int8_chosen(),
		.A = A, .lda = lda, .W = W,
		.rs = work,
	};

	if (M <= 0 || N <= 0)
		return;
	if (bias)
	{
		if (K <= 0 || M <= TFM_LOWP_GEMV_ROWS)
		{
			tfm_lowp_rows_set(C, ldc, M, N, bias);
			beta = 1.0f;
			bias = NULL;
		}
	}
	if (lowp_gemm_trivial(M, N, K, beta, C, ldc))
		;
	else if (M <= TFM_LOWP_GEMV_ROWS)
		lowp_gemm_drive(&job.base, M, N, K, alpha, beta, C, ldc);
	else if (lowp_int8_amx() && job.base.slots % 16 == 0)
	{
		/* (K in whole tiles: 64 bytes a row; any other K goes the VNNI way) */
		gemm_amx(&job, M, N, K, alpha, beta, bias, act, C, ldc, work);
		return;
	}
	else
	{
		job.base.pr = (lowp_product) {M, N, K, alpha, beta, C, ldc};
		gemm_blocked(&job, M, N, alpha, beta, bias, act, C, ldc);
		return;
	}
	if (act)
		tfm_lowp_rows_apply(act, C, ldc, M, N);
}

void
tfm_int8_gemm(int M, int N, int K, float alpha,
			  const float *A, ptrdiff_t lda,
			  const tfm_int8_weights *W,
			  float beta, float *C, ptrdiff_t ldc, void *work)
{
	int8_gemm(M, N, K, alpha, A, lda, W, beta, NULL, NULL, C, ldc, work);
}

void
tfm_int8_gemm_fused(int M, int N, int K, const float *A, ptrdiff_t lda,
					const tfm_int8_weights *W, const float *bias, tfm_row_fn act,
					float *C, ptrdiff_t ldc, void *work)
{
	int8_gemm(M, N, K, 1.0f, A, lda, W, 0.0f, bias, act, C, ldc, work);
}
