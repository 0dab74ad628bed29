/*
 * lowp_int8_amx.c — the int8 GEMM's blocks on AMX tiles (Intel Sapphire
 * Rapids and later): TDPBUSD adds to a 16 × 16 int32 tile of sums the
 * products of a 16-row tile of A (16 rows × 16 quads of unsigned bytes,
 * a + 128) and a tile of W (16 quads × 16 columns of signed bytes): 16384
 * multiply-adds an instruction, against 64 for a vpdpbusd.
 *
 * A comes quantized by lowp_int8_gemm.c (its rows' scales, and the rows of
 * bytes one after the other, kq quads a row, rows past M at 128); W is read
 * in place: a packed panel (tfm_int8_pack) is 32 columns of 4 bytes a quad,
 * so columns 0-15 and 16-31 of 16 consecutive quads are two tiles of stride
 * 128.  Blocks of C of 32 × 32 (four tiles of sums, two of A and two of W a
 * step of 16 quads) are handed out to the threads, a task's rows outermost.
 * A block sums all of K in its tiles, then scales the sums as
 * lowp_int8_avx512.c's block12 does, operation for operation (the 128
 * offset out with the column sums, then the row and column scales, the
 * bias as beta 1 would add it), and runs the activation over each row: the
 * int32 sums are exact in any order, so every path gives the same bits.
 * K (in quads) must be a multiple of 16; lowp_int8_gemm.c checks.
 */
#include <immintrin.h>
#include <string.h>

#include "tfm/blas.h"
#include "../lowp_internal.h"
#include "../amx_tiles.h"

#define TARGET __attribute__((target("amx-tile,amx-int8,avx512f,avx512bw,avx512vl")))

#define AMX_ROWS 32				/* rows of C per block: two A tiles */
#define AMX_COLS LOWP_NR		/* columns of C per block: one weight panel */
#define AMX_NC (8 * LOWP_NR)	/* columns per task */
#define AMX_MC (4 * AMX_ROWS)	/* rows per task */

/* C's block from its sums s (32 × 32 int32): rows [0, m), columns [0, n) */
TARGET static void
scale_block(const int32_t (*s)[AMX_COLS], float *c, ptrdiff_t ldc, int m, int n, float alpha,
			const float *rscale, const float *cscale, const int32_t *colsum, float beta,
			const float *bias, tfm_row_fn act)
{
	__mmask16	m0 = n >= 16 ? 0xFFFF : (__mmask16) ((1u << n) - 1),
				m1 = n >= 32 ? 0xFFFF : n > 16 ? (__mmask16) ((1u << (n - 16)) - 1) : 0;
	__m512i		o0 = _mm512_slli_epi32(_mm512_maskz_loadu_epi32(m0, colsum), 7),
				o1 = _mm512_slli_epi32(_mm512_maskz_loadu_epi32(m1, colsum + 16), 7);
	__m512		s0 = _mm512_maskz_loadu_ps(m0, cscale),
				s1 = _mm512_maskz_loadu_ps(m1, cscale + 16);

	for (int r = 0; r < m; r++)
	{
		float	   *row = c + (size_t) r * ldc;
		__m512		sr = _mm512_set1_ps(alpha * rscale[r]),
					v0 = _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_load_si512(s[r]), o0)),
					v1 = _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_load_si512(s[r] + 16), o1)),
					t0 = _mm512_mul_ps(sr, s0),
					t1 = _mm512_mul_ps(sr, s1);

		if (bias)
		{
			/* the driver's bias set into C, then beta 1: 1 · bias is the bias */
			v0 = _mm512_fmadd_ps(v0, t0, _mm512_maskz_loadu_ps(m0, bias));
			v1 = _mm512_fmadd_ps(v1, t1, _mm512_maskz_loadu_ps(m1, bias + 16));
		}
		else if (beta == 0.0f)
		{
			v0 = _mm512_mul_ps(v0, t0);
			v1 = _mm512_mul_ps(v1, t1);
		}
		else
		{
			__m512		vb = _mm512_set1_ps(beta);

			v0 = _mm512_fmadd_ps(v0, t0, _mm512_mul_ps(vb, _mm512_maskz_loadu_ps(m0, row)));
			v1 = _mm512_fmadd_ps(v1, t1, _mm512_mul_ps(vb, _mm512_maskz_loadu_ps(m1, row + 16)));
		}
		_mm512_mask_storeu_ps(row, m0, v0);
		_mm512_mask_storeu_ps(row + 16, m1, v1);
		if (act)
			act(row, row, (size_t) n);
	}
}

/* the sums of a block: a its 32 rows (kq quads each), b its panel; all of K */
TARGET static void
block_sums(const uint32_t *a, const uint32_t *b, int kq, int32_t (*s)[AMX_COLS])
{
	size_t		as = (size_t) kq * sizeof(uint32_t),
				bs = LOWP_NR * sizeof(uint32_t);

	_tile_zero(0);
	_tile_zero(1);
	_tile_zero(2);
	_tile_zero(3);
	for (int p = 0; p < kq; p += 16)
	{
		_tile_loadd(4, a + p, as);
		_tile_loadd(5, a + 16 * (size_t) kq + p, as);
		_tile_loadd(6, b + (size_t) p * LOWP_NR, bs);
		_tile_loadd(7, b + (size_t) p * LOWP_NR + 16, bs);
		_tile_dpbusd(0, 4, 6);
		_tile_dpbusd(1, 4, 7);
		_tile_dpbusd(2, 5, 6);
		_tile_dpbusd(3, 5, 7);
	}
	_tile_stored(0, s[0], AMX_COLS * sizeof(int32_t));
	_tile_stored(1, s[0] + 16, AMX_COLS * sizeof(int32_t));
	_tile_stored(2, s[16], AMX_COLS * sizeof(int32_t));
	_tile_stored(3, s[16] + 16, AMX_COLS * sizeof(int32_t));
	TILE_MEMORY_BARRIER();
}

TARGET void
lowp_int8_amx_blocks(int M, int N, int kq, const uint32_t *a, const float *rscale,
					 const tfm_int8_weights *W, float alpha, float beta, const float *bias,
					 tfm_row_fn act, float *C, ptrdiff_t ldc)
{
	const uint32_t *w = (const uint32_t *) W->data;
	int			threads = tfm_get_threads(),
				mt = (M + AMX_MC - 1) / AMX_MC,
				nt = (N + AMX_NC - 1) / AMX_NC;
	double		flops = 8.0 * M * N * kq;

#pragma omp parallel num_threads(threads) if(threads > 1 && flops > 1e6)
	{
		int32_t		s[AMX_ROWS][AMX_COLS] __attribute__((aligned(64)));

		amx_config_tiles();
#pragma omp for schedule(dynamic)
		for (int t = 0; t < mt * nt; t++)
		{
			int			i0 = (t % mt) * AMX_MC,
						j0 = (t / mt) * AMX_NC,
						i1 = i0 + AMX_MC < M ? i0 + AMX_MC : M,
						j1 = j0 + AMX_NC < N ? j0 + AMX_NC : N;

			for (int i = i0; i < i1; i += AMX_ROWS)
				for (int j = j0; j < j1; j += AMX_COLS)
				{
					block_sums(a + (size_t) i * kq, w + (size_t) j * kq, kq, s);
					scale_block((const int32_t (*)[AMX_COLS]) s, C + (size_t) i * ldc + j, ldc,
								i1 - i < AMX_ROWS ? i1 - i : AMX_ROWS,
								j1 - j < AMX_COLS ? j1 - j : AMX_COLS, alpha, rscale + i,
								W->scale + j, W->colsum + j, beta, bias ? bias + j : NULL, act);
				}
		}
		amx_release_tiles();
	}
}
