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
 * lowp_int8_avx512.c's block12 does, by the same code
 * (int8_scale_avx512.h), and runs the activation over each row: the int32
 * sums are exact in any order, so every path gives the same bits.
 * K (in quads) must be a multiple of 16; lowp_int8_gemm.c checks.
 */
#include <immintrin.h>
#include <string.h>

#include "tfm/blas.h"
#include "../lowp_internal.h"
#include "../amx_tiles.h"

#define TARGET __attribute__((target("amx-tile,amx-int8,avx512f,avx512bw,avx512vl")))
#define INLINE static inline __attribute__((always_inline))

#include "int8_scale_avx512.h"

#define AMX_ROWS 32				/* rows of C per block: two A tiles */
#define AMX_COLS LOWP_NR		/* columns of C per block: one weight panel */
#define AMX_NC (8 * LOWP_NR)	/* columns per task */
#define AMX_MC (4 * AMX_ROWS)	/* rows per task */

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
			lowp_tile	tile = lowp_tile_sized(t, mt, M, N, AMX_MC, AMX_NC);

			for (int i = tile.i0; i < tile.i1; i += AMX_ROWS)
				for (int j = tile.j0; j < tile.j1; j += AMX_COLS)
				{
					int			m = tile.i1 - i < AMX_ROWS ? tile.i1 - i : AMX_ROWS,
								n = tile.j1 - j < AMX_COLS ? tile.j1 - j : AMX_COLS;
					float	   *c = C + (size_t) i * ldc + j;

					block_sums(a + (size_t) i * kq, w + (size_t) j * kq, kq, s);
					int8_scale_block(s[0], c, ldc, m, n, alpha, rscale + i, W->scale + j,
									 W->colsum + j, beta, bias ? bias + j : NULL);
					if (act)
						for (int r = 0; r < m; r++)
							act(c + (size_t) r * ldc, c + (size_t) r * ldc, (size_t) n);
				}
		}
		amx_release_tiles();
	}
}
