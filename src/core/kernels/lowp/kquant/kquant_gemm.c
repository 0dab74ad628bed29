/*
 * kquant_gemm.c — the product of activation rows with a weight kept as
 * GGUF blocks (include/tfm/kquant.h): each row quantized once (Q8_K, or
 * Q8_0 for Q8_0 weights), then per output column one tfm_kq_dot per row,
 * the columns split statically over the core's threads (a column's sums
 * never depend on the split); and tfm_kq_dot, the choice of path
 * (AVX-512 VNNI, AVX2, AArch64's NEON with or without SDOT, or the
 * reference) for one dot product.  Decoding is
 * M = 1; the AVX-512 path runs tiles of KQ_ROWS rows × KQ_COLS columns
 * (Q4_K, Q5_K and Q6_K: each weight block unpacked once for the rows, each
 * activation block read once for the columns, the columns' float steps in
 * one vector), and prefill's products (Q4_K and Q5_K from
 * KQ_PANEL_MIN_ROWS rows, Q6_K from KQ_PANEL_MIN_ROWS_Q6, Q8_0 from one
 * row) as panels of KQ_PANEL_COLS columns in the vector lanes over all
 * the rows (kquant_panel_avx512.c); the AVX2 path runs panels of
 * KQ_PANEL_COLS_AVX2 columns (kquant_panel_avx2.c; Q6_K from
 * KQ_PANEL_MIN_ROWS_AVX2_Q6 rows, below which each weight block is
 * unpacked once for KQ_ROWS rows), the reference one dot product per row.
 */
#include <omp.h>

#include "kquant_internal.h"
#include "tfm/lowp.h"
#include "../lowp_internal.h"

const char *
tfm_kq_path(void)
{
#if defined(__aarch64__)
	{
		int			level = lowp_kq_neon_level();

		return level == 2 ? "neon-dotprod" : level == 1 ? "neon" : "reference";
	}
#else
	return lowp_int4_fast() ? "avx512vnni (Q4_K, Q5_K, Q6_K, Q8_0)" : lowp_int4_avx2() ? "avx2" : "reference";
#endif
}

float
tfm_kq_dot(uint32_t type, int n, const uint8_t *w, const void *a)
{
#if defined(__x86_64__)
	if (lowp_int4_fast())
	{
		float		v;

		kq_rows_avx512(type, n, w, a, 0, 1, &v);
		return v;
	}
	if (lowp_int4_avx2())
		return kq_dot_avx2(type, n, w, a);
#elif defined(__aarch64__)
	if (lowp_kq_neon_level() > 0)
	{
		float		v;

		(lowp_kq_neon_level() == 2 ? kq_rows_neondot : kq_rows_neon) (type, n, w, a, 0, 1, &v);
		return v;
	}
#endif
	return tfm_kq_dot_ref(type, n, w, a);
}

/*
 * out[r] for R ≤ KQ_ROWS rows of act, ab bytes apart; path 2 AVX-512 VNNI
 * (AArch64: SDOT), 1 AVX2 (AArch64: NEON), 0 the reference
 */
static void
kq_rows(uint32_t t, int n, const uint8_t *w, const uint8_t *act, size_t ab, int R, float *out,
		int path)
{
#if defined(__x86_64__)
	if (path == 2)
	{
		kq_rows_avx512(t, n, w, act, ab, R, out);
		return;
	}
	if (path == 1)
	{
		kq_rows_avx2(t, n, w, act, ab, R, out);
		return;
	}
#elif defined(__aarch64__)
	if (path > 0)
	{
		(path == 2 ? kq_rows_neondot : kq_rows_neon) (t, n, w, act, ab, R, out);
		return;
	}
#endif
	(void) path;
	for (int r = 0; r < R; r++)
		out[r] = tfm_kq_dot_ref(t, n, w, act + (size_t) r * ab);
}

size_t
tfm_kq_row_bytes(uint32_t t, int K)
{
	switch (t)
	{
		case KQ_Q8_0:
			return (size_t) K / 32 * 34;
		case KQ_Q4_K:
			return (size_t) K / 256 * 144;
		case KQ_Q5_K:
			return (size_t) K / 256 * 176;
		case KQ_Q6_K:
			return (size_t) K / 256 * 210;
	}
	return 0;
}

/* one activation row's blocks */
static size_t
act_row_bytes(uint32_t t, int K)
{
	return t == KQ_Q8_0 ? (size_t) K / 32 * sizeof(tfm_block_q8_0)
		: (size_t) K / 256 * sizeof(tfm_block_q8_K);
}

size_t
tfm_kq_work_bytes(uint32_t t, int M, int K)
{
	return (size_t) M * act_row_bytes(t, K);
}

#if !defined(__aarch64__)
/* groups [g0, g1) of KQ_COLS columns, every row, through the AVX-512 tiles */
static void
tile_groups(uint32_t t, int M, int N, int K, const uint8_t *W, size_t wb, const uint8_t *act,
			size_t ab, float alpha, float beta, float *C, ptrdiff_t ldc, int g0, int g1)
{
	for (int g = g0; g < g1; g++)
	{
		const int	j0 = g * KQ_COLS,
					nc = N - j0 < KQ_COLS ? N - j0 : KQ_COLS;

		for (int i0 = 0; i0 < M; i0 += KQ_ROWS)
		{
			const int	R = M - i0 < KQ_ROWS ? M - i0 : KQ_ROWS;
			float		d[KQ_ROWS * KQ_COLS];

			if (alpha == 1.0f && beta == 0.0f)
			{
				/* C = the products: the tile stores them itself */
				kq_tile_avx512(t, K, W + (size_t) j0 * wb, wb, nc, act + i0 * ab, ab, R,
							   C + i0 * ldc + j0, (size_t) ldc);
				continue;
			}
			kq_tile_avx512(t, K, W + (size_t) j0 * wb, wb, nc, act + i0 * ab, ab, R, d, KQ_COLS);
			for (int r = 0; r < R; r++)
				for (int c = 0; c < nc; c++)
					kq_store(C + (i0 + r) * ldc + j0 + c, d[r * KQ_COLS + c], alpha, beta);
		}
	}
}

/* a kernel over groups [g0, g1) of columns, every row */
typedef void (*kq_groups_fn) (uint32_t t, int M, int N, int K, const uint8_t *W, size_t wb,
							  const uint8_t *act, size_t ab, float alpha, float beta, float *C,
							  ptrdiff_t ldc, int g0, int g1);

/*
 * fn over all groups: the threads take equal runs of them; one thread or a
 * small product opens no parallel region (libgomp's team of one costs
 * ~0.5 µs a call)
 */
static void
run_groups(kq_groups_fn fn, int groups, int threads, double flops, uint32_t t, int M, int N, int K,
		   const uint8_t *W, size_t wb, const uint8_t *act, size_t ab, float alpha, float beta,
		   float *C, ptrdiff_t ldc)
{
	if (threads <= 1 || flops <= 1e5)
	{
		fn(t, M, N, K, W, wb, act, ab, alpha, beta, C, ldc, 0, groups);
		return;
	}
#pragma omp parallel num_threads(threads)
	{
		const int	nt = omp_get_num_threads(),
					me = omp_get_thread_num(),
					per = (groups + nt - 1) / nt,
					g0 = me * per < groups ? me * per : groups,
					g1 = g0 + per < groups ? g0 + per : groups;

		fn(t, M, N, K, W, wb, act, ab, alpha, beta, C, ldc, g0, g1);
	}
}
#endif

bool
tfm_kq_gemm(uint32_t t, int M, int N, int K, const float *A, ptrdiff_t lda,
			const uint8_t *W, float alpha, float beta, float *C, ptrdiff_t ldc,
			void *work, int threads)
{
	const size_t ab = act_row_bytes(t, K),
				wb = tfm_kq_row_bytes(t, K);
	uint8_t    *act = work;
	double		flops = 2.0 * M * N * K;
	int			path;

	if (!tfm_kq_supported(t) || K % tfm_kq_act_block_values(t) != 0 || M < 0 || N < 0)
		return false;
#if defined(__aarch64__)
	path = lowp_kq_neon_level();
#else
	path = lowp_int4_fast() ? 2 : lowp_int4_avx2() ? 1 : 0;
#endif
	for (int i = 0; i < M; i++)
	{
		if (t == KQ_Q8_0)
			tfm_kq_quantize_q8_0(A + i * lda, (tfm_block_q8_0 *) (act + i * ab), K);
#if !defined(__aarch64__)
		else if (path == 2)
			kq_quantize_q8_K_avx512(A + i * lda, (tfm_block_q8_K *) (act + i * ab), K);
#endif
		else
			tfm_kq_quantize_q8_K(A + i * lda, (tfm_block_q8_K *) (act + i * ab), K);
	}
#if !defined(__aarch64__)
	if (path == 2 && M >= (t == KQ_Q6_K ? KQ_PANEL_MIN_ROWS_Q6 : t == KQ_Q8_0 ? KQ_PANEL_MIN_ROWS_Q8 :
						   KQ_PANEL_MIN_ROWS))
	{
		/* prefill: groups of KQ_PANEL_COLS columns in the lanes, all M rows */
		run_groups(kq_panel_avx512, (N + KQ_PANEL_COLS - 1) / KQ_PANEL_COLS, threads, flops,
				   t, M, N, K, W, wb, act, ab, alpha, beta, C, ldc);
		return true;
	}
	if (path == 1 && M >= (t == KQ_Q6_K ? KQ_PANEL_MIN_ROWS_AVX2_Q6 : KQ_PANEL_MIN_ROWS_AVX2))
	{
		/* prefill on AVX2: groups of KQ_PANEL_COLS_AVX2 columns in the lanes */
		run_groups(kq_panel_avx2, (N + KQ_PANEL_COLS_AVX2 - 1) / KQ_PANEL_COLS_AVX2, threads, flops,
				   t, M, N, K, W, wb, act, ab, alpha, beta, C, ldc);
		return true;
	}
	if (path == 2)
	{
		/* tiles of KQ_ROWS rows × KQ_COLS columns */
		kq_act_order_avx512(t, act, M, ab, K);
		run_groups(tile_groups, (N + KQ_COLS - 1) / KQ_COLS, threads, flops,
				   t, M, N, K, W, wb, act, ab, alpha, beta, C, ldc);
		return true;
	}
#endif
#pragma omp parallel for num_threads(threads) if(threads > 1 && flops > 1e5) schedule(static)
	for (int j = 0; j < N; j++)
	{
		const uint8_t *w = W + (size_t) j * wb;

		for (int i0 = 0; i0 < M; i0 += KQ_ROWS)
		{
			int			R = M - i0 < KQ_ROWS ? M - i0 : KQ_ROWS;
			float		d[KQ_ROWS];

			kq_rows(t, K, w, act + i0 * ab, ab, R, d, path);
			for (int r = 0; r < R; r++)
				kq_store(C + (i0 + r) * ldc + j, d[r], alpha, beta);
		}
	}
	return true;
}
