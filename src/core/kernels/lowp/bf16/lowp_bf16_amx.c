/*
 * lowp_bf16_amx.c — the bf16 GEMM on AMX tiles (Intel Sapphire Rapids and
 * later): TDPBF16PS adds to a 16 × 16 fp32 tile of C the product of a
 * 16-row tile of A (16 rows × 16 pairs of bf16) and a tile of W (16 pairs ×
 * 16 columns, each 32-bit element the pair (w[2p][j], w[2p+1][j])): 8192
 * multiply-adds per instruction, against 32 for a vdpbf16ps.
 *
 * W is read in place: a packed panel (include/tfm/lowp.h; kp a multiple of
 * TFM_BF16_KP pairs) is NR = 32 columns of 128 bytes per pair, so columns
 * 0-15 and 16-31 of 16 consecutive pairs are two tiles of stride 128.
 * A is rounded to bf16 row by row (row-major, kp values a row, zeros past K
 * and in the rows past M up to a multiple of 32) into the work buffer, from
 * any strides: A[i][k] at A[i·rsa + k·csa] (rsa = 1 is a transposed
 * operand, Xᵀ for dW = Xᵀ·dY).
 *
 * Blocks of C of 32 × 32 (four accumulator tiles, two tiles of A and two
 * of W per step of 16 pairs) are handed out to the threads, row block
 * outermost in each task so its A rows stay in L1 while the panels pass.
 * A whole block with alpha 1 and beta 0 or 1 (every product of training)
 * goes straight between C and the tiles (beta 1: the sums start from C);
 * otherwise the tiles go to a small buffer and from there, with alpha and
 * beta, to C (only its m × n part is written).  A K longer than AMX_KC
 * pairs (a weight gradient sums over a batch's rows) goes in slices, the
 * later ones adding to C, so a task's A rows and panel slices stay in L2.
 * tfm_bf16_gemm_fused's epilogue starts the sums from the bias and runs the
 * activation on each block in L1.  Each thread configures its tiles
 * (amx_tiles.h) per call and releases them at the end.
 *
 * Numerics: products of bf16 are exact in fp32 and summed in fp32 (round to
 * nearest even) in an order of AMX's own; denormal inputs count as zero and
 * denormal sums are flushed, as with vdpbf16ps.
 *
 * Compiled for AMX by function attribute only; lowp_dispatch_x86.c lets the
 * driver call it only where the CPU has AMX-BF16 and the kernel granted the
 * process the tile state (arch_prctl ARCH_REQ_XCOMP_PERM).
 */
#include <immintrin.h>
#include <string.h>

#include "tfm/blas.h"
#include "../lowp_internal.h"
#include "../../transpose16.h"
#include "bf16_round_avx512.h"
#include "../amx_tiles.h"

#define TARGET __attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw,avx512vl")))

#define AMX_ROWS 32				/* rows of C per block: two A tiles */
#define AMX_COLS LOWP_NR		/* columns of C per block: one weight panel */
#define AMX_NC (8 * LOWP_NR)	/* columns per task */
#define AMX_MC (4 * AMX_ROWS)	/* rows per task */
#define AMX_KC 512				/* pairs of K per slice: a task's A and W slices fit L2 */

size_t
lowp_amx_work_bytes(int M, int K)
{
	size_t		rows = lowp_round_up(M > 0 ? M : 1, AMX_ROWS),
				kp = lowp_round_up(K > 0 ? K : 1, 2 * TFM_BF16_KP);

	return lowp_round_up(rows * kp * sizeof(uint16_t), LOWP_ALIGN);
}

/*
 * A transposed (rsa = 1: A[i][k] at A[k·csa + i], a row-major K × M
 * matrix): pairs [p0, p0 + 16) of every row (mp rows, zeros past M and K).
 * The 32 source rows of k are read along (they stay in L1), 16 rows of A
 * × 16 pairs at a time, transposed in registers.
 */
TARGET static void
pack_cols(uint16_t *dst, int kp, const float *A, ptrdiff_t csa, int M, int K, int mp, int p0)
{
	for (int i0 = 0; i0 < mp; i0 += 16)
	{
		int			live = M - i0 >= 16 ? 16 : M - i0 <= 0 ? 0 : M - i0;
		__mmask16	rows = live == 16 ? 0xFFFF : (__mmask16) ((1u << live) - 1);
		uint32_t   *d = (uint32_t *) dst + (size_t) i0 * (kp / 2) + p0;
		__m512i		v[16];

		for (int j = 0; j < 16; j++)
		{
			int			k = 2 * (p0 + j);
			const float *x = A + (size_t) k * csa + i0;
			__m512		x0 = _mm512_maskz_loadu_ps(k < K ? rows : 0, x),
						x1 = _mm512_maskz_loadu_ps(k + 1 < K ? rows : 0, x + csa);

			v[j] = _mm512_or_si512(bf16_round16(x0), _mm512_slli_epi32(bf16_round16(x1), 16));
		}
		transpose16(v);
		for (int r = 0; r < 16; r++)
			_mm512_storeu_si512(d + (size_t) r * (kp / 2), v[r]);
	}
}

/*
 * Rows [r0, r0 + 32) of A rounded to bf16 into dst (row stride kp), zeros
 * past K and past M.  Rows contiguous (csa = 1): 16 values a step; other
 * strides (but a transposed A: pack_cols): one value at a time.
 */
TARGET static void
pack_rows(uint16_t *dst, int kp, const float *A, ptrdiff_t rsa, ptrdiff_t csa,
		  int M, int K, int r0)
{
	if (csa == 1)
	{
		for (int i = r0; i < r0 + AMX_ROWS; i++)
		{
			uint16_t   *d = dst + (size_t) i * kp;
			const float *x = A + (size_t) i * rsa;

			if (i >= M)
			{
				memset(d, 0, sizeof(uint16_t) * kp);
				continue;
			}
			for (int k = 0; k < kp; k += 16)
			{
				__mmask16	m = K - k >= 16 ? 0xFFFF : K - k <= 0 ? 0 : (__mmask16) ((1u << (K - k)) - 1);

				_mm256_storeu_si256((__m256i *) (d + k),
									_mm512_cvtepi32_epi16(bf16_round16(_mm512_maskz_loadu_ps(m, x + k))));
			}
		}
		return;
	}
	for (int i = r0; i < r0 + AMX_ROWS; i++)
		for (int k = 0; k < kp; k++)
			dst[(size_t) i * kp + k] = i < M && k < K ?
				tfm_bf16_from_float(A[(size_t) i * rsa + (size_t) k * csa]) : 0;
}

/* one slot row of a full weight panel from two rows of 32 values (tfm_bf16_pack) */
TARGET void
lowp_avx512_pair_row(uint32_t *s, const float *r0, const float *r1)
{
	for (int j = 0; j < LOWP_NR; j += 16)
		_mm512_storeu_si512(s + j, _mm512_or_si512(bf16_round16(_mm512_loadu_ps(r0 + j)),
												   _mm512_slli_epi32(bf16_round16(_mm512_loadu_ps(r1 + j)), 16)));
}

/* the m × n part of a 16 × 16 tile (buffer t) into C with alpha, beta */
TARGET static inline void
store_tile(float *c, ptrdiff_t ldc, const float *t, int m, int n, float alpha, float beta)
{
	__mmask16	k = n >= 16 ? (__mmask16) 0xFFFF : (__mmask16) ((1u << n) - 1u);
	__m512		va = _mm512_set1_ps(alpha),
				vb = _mm512_set1_ps(beta);

	for (int r = 0; r < m; r++)
	{
		float	   *row = c + (size_t) r * ldc;
		__m512		v = _mm512_mul_ps(va, _mm512_load_ps(t + r * 16));

		if (beta != 0.0f)
			v = _mm512_add_ps(v, _mm512_mul_ps(vb, _mm512_maskz_loadu_ps(k, row)));
		_mm512_mask_storeu_ps(row, k, v);
	}
}

/*
 * C block rows [i, i + 32) ∩ [0, M), columns [j, j + 32) ∩ [0, N): a holds
 * the block's 32 rows (stride kp bf16), b the panel (stride NR slots).
 * With an epilogue, the sums start from the bias (a 16-float row loaded
 * with stride 0 fills a tile) and the activation runs over the four tiles
 * in the buffer, in L1, before they go to C.
 */
TARGET static void
block(const uint16_t *a, int kp, int p0, int p1, const uint32_t *b, float *c, ptrdiff_t ldc,
	  int m, int n, float alpha, float beta, const lowp_epilogue *epi)
{
	float		t[4][16 * 16] __attribute__((aligned(64)));
	size_t		as = (size_t) kp * sizeof(uint16_t),
				cs = (size_t) ldc * sizeof(float);
	bool		direct = m == AMX_ROWS && n == AMX_COLS && alpha == 1.0f &&
		(beta == 0.0f || beta == 1.0f);

	if (epi && epi->bias)
	{
		/*
		 * From the caller's bias where the block is whole; a copy only at
		 * the right edge (a tile load right after vector stores to the
		 * same lines waits for them to drain: slow)
		 */
		float		bb[AMX_COLS] __attribute__((aligned(64)));
		const float *bias = epi->bias;

		if (n < AMX_COLS)
		{
			for (int j = 0; j < AMX_COLS; j++)
				bb[j] = j < n ? epi->bias[j] : 0.0f;
			TILE_MEMORY_BARRIER();
			bias = bb;
		}
		_tile_loadd(0, bias, 0);
		_tile_loadd(1, bias + 16, 0);
		_tile_loadd(2, bias, 0);
		_tile_loadd(3, bias + 16, 0);
	}
	else if (direct && beta == 1.0f)
	{
		/* C += A·W: the sums start from C itself (maybe just stored by store_tile) */
		TILE_MEMORY_BARRIER();
		_tile_loadd(0, c, cs);
		_tile_loadd(1, c + 16, cs);
		_tile_loadd(2, c + 16 * ldc, cs);
		_tile_loadd(3, c + 16 * ldc + 16, cs);
	}
	else
	{
		_tile_zero(0);
		_tile_zero(1);
		_tile_zero(2);
		_tile_zero(3);
	}
	for (int p = p0; p < p1; p += 16)
	{
		_tile_loadd(4, a + 2 * p, as);
		_tile_loadd(5, a + 16 * (size_t) kp + 2 * p, as);
		_tile_loadd(6, b + (size_t) p * LOWP_NR, LOWP_NR * sizeof(uint32_t));
		_tile_loadd(7, b + (size_t) p * LOWP_NR + 16, LOWP_NR * sizeof(uint32_t));
		_tile_dpbf16ps(0, 4, 6);
		_tile_dpbf16ps(1, 4, 7);
		_tile_dpbf16ps(2, 5, 6);
		_tile_dpbf16ps(3, 5, 7);
	}
	if (direct && !(epi && epi->act))
	{
		_tile_stored(0, c, cs);
		_tile_stored(1, c + 16, cs);
		_tile_stored(2, c + 16 * ldc, cs);
		_tile_stored(3, c + 16 * ldc + 16, cs);
		return;
	}
	_tile_stored(0, t[0], 64);
	_tile_stored(1, t[1], 64);
	_tile_stored(2, t[2], 64);
	_tile_stored(3, t[3], 64);
	TILE_MEMORY_BARRIER();
	if (epi && epi->act)
		epi->act(t[0], t[0], 4 * 16 * 16);	/* one call for the block, in L1 */
	store_tile(c, ldc, t[0], m < 16 ? m : 16, n < 16 ? n : 16, alpha, beta);
	if (n > 16)
		store_tile(c + 16, ldc, t[1], m < 16 ? m : 16, n - 16, alpha, beta);
	if (m > 16)
	{
		store_tile(c + 16 * ldc, ldc, t[2], m - 16, n < 16 ? n : 16, alpha, beta);
		if (n > 16)
			store_tile(c + 16 * ldc + 16, ldc, t[3], m - 16, n - 16, alpha, beta);
	}
}

TARGET void
lowp_bf16_amx_gemm(int M, int N, int K, float alpha,
				   const float *A, ptrdiff_t rsa, ptrdiff_t csa,
				   const tfm_bf16_weights *W, float beta, float *C, ptrdiff_t ldc,
				   void *work, const lowp_epilogue *epi)
{
	const uint32_t *w = (const uint32_t *) W->data;
	uint16_t   *a = work;
	int			kp = W->kp,
				threads = tfm_get_threads(),
				mb = (M + AMX_ROWS - 1) / AMX_ROWS,
				mt = (M + AMX_MC - 1) / AMX_MC,
				nt = (N + AMX_NC - 1) / AMX_NC;
	double		flops = 2.0 * M * N * K;

#pragma omp parallel num_threads(threads) if(threads > 1 && flops > 1e6)
	{
		if (rsa == 1 && csa != 1)
		{
#pragma omp for schedule(static)
			for (int p0 = 0; p0 < kp / 2; p0 += 16)
				pack_cols(a, kp, A, csa, M, K, mb * AMX_ROWS, p0);
		}
		else
		{
#pragma omp for schedule(static)
			for (int i = 0; i < mb; i++)
				pack_rows(a, kp, A, rsa, csa, M, K, i * AMX_ROWS);
		}
		amx_config_tiles();
#pragma omp for schedule(dynamic)
		for (int t = 0; t < mt * nt; t++)
		{
			lowp_tile	tile = lowp_tile_sized(t, mt, M, N, AMX_MC, AMX_NC);
			int			i0 = tile.i0,
						i1 = tile.i1,
						j0 = tile.j0,
						j1 = tile.j1;

			/*
			 * A long K (a weight gradient sums over every row of a batch) in
			 * slices of AMX_KC pairs, so the task's rows of A and panel
			 * slices stay in L2; the slices after the first add to C.  One
			 * slice with an epilogue (bias first, activation last).
			 */
			for (int p0 = 0; p0 < kp / 2; p0 += epi ? kp / 2 : AMX_KC)
			{
				int			p1 = epi || p0 + AMX_KC > kp / 2 ? kp / 2 : p0 + AMX_KC;

				for (int i = i0; i < i1; i += AMX_ROWS)
					for (int j = j0; j < j1; j += AMX_COLS)
						block(a + (size_t) i * kp, kp, p0, p1, w + (size_t) j * (kp / 2),
							  C + (size_t) i * ldc + j, ldc,
							  i1 - i < AMX_ROWS ? i1 - i : AMX_ROWS,
							  j1 - j < AMX_COLS ? j1 - j : AMX_COLS, alpha,
							  p0 == 0 ? beta : 1.0f,
							  epi && epi->bias ? &(lowp_epilogue)
							  {epi->bias + j, epi->act} : epi);
			}
		}
		amx_release_tiles();
	}
}
