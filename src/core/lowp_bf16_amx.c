/*
 * lowp_bf16_amx.c — bf16 products on AMX tiles (Intel Sapphire Rapids and
 * later), for products of more than TFM_LOWP_GEMV_ROWS rows whose K is a
 * multiple of 32.
 *
 * One TDPBF16PS multiplies a 16 × 32 bf16 tile of A by a 16 (pairs) × 16
 * (columns) tile of weights into a 16 × 16 fp32 tile of C, 8,192 products
 * summed in fp32.  The packed weights (tfm_bf16_pack) are already in the
 * layout it wants: a panel's row p holds, for each of its 32 columns, the
 * pair (w[2p][j], w[2p+1][j]), so a weight tile is 16 rows of a panel, 64
 * bytes each, 128 bytes apart.  A is rounded to bf16 row by row (rows past M
 * zero, up to a multiple of 32) into the caller's work buffer; a tile of A
 * is 16 of those rows, 32 bf16 each.
 *
 * A block of C of 32 rows × one panel (32 columns) lives in four tiles
 * through the whole of K (tiles 0-3; A in 4-5, weights in 6-7), then goes
 * through a small buffer to C with alpha and beta.  Threads take (32-row
 * block, run of panels) tasks; each configures its own tiles.
 *
 * The process must be allowed the tile state first (lowp_bf16_amx_enable,
 * Linux's ARCH_REQ_XCOMP_PERM); lowp_dispatch.c does that once and uses
 * this path only where it succeeded.  Like vdpbf16ps, the tiles treat bf16
 * subnormal inputs as zero and flush subnormal results.
 */
#include <immintrin.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tfm/blas.h"
#include "lowp_internal.h"

#define TARGET __attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw,avx512vl,avx512bf16")))

#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18

#define TILE_ROWS 16
#define BLOCK_ROWS (2 * TILE_ROWS)	/* rows of C per block */
#define PANELS_PER_TASK 8

/* palette 1: eight tiles of 16 rows × 64 bytes */
typedef struct tile_config
{
	uint8_t		palette;
	uint8_t		start_row;
	uint8_t		reserved[14];
	uint16_t	colsb[16];
	uint8_t		rows[16];
} __attribute__((packed)) tile_config;

bool
lowp_bf16_amx_enable(void)
{
#ifdef SYS_arch_prctl
	return syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
#else
	return false;
#endif
}

size_t
lowp_bf16_amx_work_bytes(int M, int K)
{
	size_t		pairs = lowp_round_up(K > 0 ? K : 1, 2) / 2;

	return lowp_round_up(lowp_round_up(M > 0 ? M : 1, BLOCK_ROWS) * pairs * sizeof(uint32_t),
						 LOWP_ALIGN);
}

/*
 * row i of A as bf16 pairs (zeros past M; an odd K's last pair ends in 0),
 * rounded to nearest even by vcvtne2ps2bf16 (which, as the tiles do, reads
 * subnormal floats as zero)
 */
TARGET static void
pack_row(uint32_t *dst, const float *A, ptrdiff_t lda, int M, int K, int pairs, int i)
{
	const float *x = A + (size_t) i * lda;
	int			k = 0;

	if (i >= M)
	{
		memset(dst, 0, sizeof(uint32_t) * pairs);
		return;
	}
	for (; k + 32 <= K; k += 32)
	{
		__m512bh	h = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(x + k + 16), _mm512_loadu_ps(x + k));

		_mm512_storeu_si512(dst + k / 2, (__m512i) h);
	}
	if (k < 2 * pairs)
	{
		uint16_t   *h = (uint16_t *) (dst + k / 2);

		for (int j = k; j < 2 * pairs; j++)
			h[j - k] = j < K ? tfm_bf16_from_float(x[j]) : 0;
	}
}

TARGET static void
configure_tiles(void)
{
	tile_config cfg;

	memset(&cfg, 0, sizeof(cfg));
	cfg.palette = 1;
	for (int t = 0; t < 8; t++)
	{
		cfg.rows[t] = TILE_ROWS;
		cfg.colsb[t] = 64;
	}
	_tile_loadconfig(&cfg);
}

/*
 * C rows [0, m) × columns [0, n) of a 32 × 32 block: a points at the block's
 * first packed row, b at the panel; alpha · A·W + beta · C.
 */
TARGET static void
block(int pairs, const uint32_t *a, const uint32_t *b, float *C, ptrdiff_t ldc,
	  int m, int n, float alpha, float beta)
{
	float		acc[BLOCK_ROWS * LOWP_NR] __attribute__((aligned(64)));
	size_t		stride_a = (size_t) pairs * sizeof(uint32_t);

	_tile_zero(0);
	_tile_zero(1);
	_tile_zero(2);
	_tile_zero(3);
	for (int p = 0; p < pairs; p += TILE_ROWS)
	{
		_tile_loadd(4, a + p, stride_a);
		_tile_loadd(5, a + (size_t) TILE_ROWS * pairs + p, stride_a);
		_tile_loadd(6, b + (size_t) p * LOWP_NR, LOWP_NR * sizeof(uint32_t));
		_tile_loadd(7, b + (size_t) p * LOWP_NR + 16, LOWP_NR * sizeof(uint32_t));
		_tile_dpbf16ps(0, 4, 6);
		_tile_dpbf16ps(1, 4, 7);
		_tile_dpbf16ps(2, 5, 6);
		_tile_dpbf16ps(3, 5, 7);
	}
	_tile_stored(0, acc, LOWP_NR * sizeof(float));
	_tile_stored(1, acc + 16, LOWP_NR * sizeof(float));
	_tile_stored(2, acc + TILE_ROWS * LOWP_NR, LOWP_NR * sizeof(float));
	_tile_stored(3, acc + TILE_ROWS * LOWP_NR + 16, LOWP_NR * sizeof(float));
	for (int r = 0; r < m; r++)
	{
		float	   *c = C + (size_t) r * ldc;
		const float *s = acc + r * LOWP_NR;

		if (beta == 0.0f)
			for (int j = 0; j < n; j++)
				c[j] = alpha * s[j];
		else
			for (int j = 0; j < n; j++)
				c[j] = alpha * s[j] + beta * c[j];
	}
}

TARGET static void
release_tiles(void)
{
	_tile_release();
}

void
lowp_bf16_amx_gemm(int M, int N, int K, float alpha, const float *A, ptrdiff_t lda,
				   const tfm_bf16_weights *W, float beta, float *C, ptrdiff_t ldc, void *work)
{
	const uint32_t *w = (const uint32_t *) W->data;
	uint32_t   *a = work;
	int			pairs = W->kp / 2,
				threads = tfm_get_threads(),
				blocks = (M + BLOCK_ROWS - 1) / BLOCK_ROWS,
				panels = (N + LOWP_NR - 1) / LOWP_NR,
				runs = (panels + PANELS_PER_TASK - 1) / PANELS_PER_TASK;
	double		flops = 2.0 * M * N * K;

#pragma omp parallel num_threads(threads) if(threads > 1 && flops > 1e6)
	{
#pragma omp for schedule(static)
		for (int i = 0; i < blocks * BLOCK_ROWS; i++)
			pack_row(a + (size_t) i * pairs, A, lda, M, K, pairs, i);
		configure_tiles();
#pragma omp for schedule(dynamic)
		for (int t = 0; t < blocks * runs; t++)
		{
			int			ib = t % blocks,
						q0 = t / blocks * PANELS_PER_TASK,
						i0 = ib * BLOCK_ROWS,
						m = M - i0 < BLOCK_ROWS ? M - i0 : BLOCK_ROWS;

			for (int q = q0; q < q0 + PANELS_PER_TASK && q < panels; q++)
			{
				int			j0 = q * LOWP_NR;

				block(pairs, a + (size_t) i0 * pairs, w + (size_t) j0 * pairs,
					  C + (size_t) i0 * ldc + j0, ldc, m,
					  N - j0 < LOWP_NR ? N - j0 : LOWP_NR, alpha, beta);
			}
		}
		release_tiles();
	}
}
