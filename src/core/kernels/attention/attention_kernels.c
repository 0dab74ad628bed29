/*
 * attention_kernels.c — the two inner steps of attention that BLIS does not
 * do well at a head's shapes (softmax of a masked row of scores; the small
 * products Q·Kᵀ and P·V of a block of query rows), and the choice of their
 * path: AVX-512 (attention_kernels_avx512.c), else the products in 8 lanes
 * for AVX2 + FMA (attention_kernels_avx2.c, the same bits; the softmax
 * portable), else portable code (the softmax) or a refusal (the products:
 * the caller packs and calls BLIS).  AArch64 builds have the portable path
 * only (the x86 files are not compiled there).
 *
 * attention.c calls tfm_attn_softmax_row and tfm_attn_gemm.
 * TFM_ATTN_KERNELS=avx2 or =portable in the environment (TFM_NO_AVX512_ATTN
 * meaning portable) forces a lower path: how the tests run each on this CPU.
 */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "tfm/layers.h"
#include "attention_kernels.h"
#include "../vecmath.h"
#if defined(__x86_64__)
#include "attention_kernels_avx2.h"
#include "attention_kernels_avx512.h"
#endif

typedef enum
{
	ATTN_PORTABLE,
	ATTN_AVX2,
	ATTN_AVX512
} attn_path;

static int	chosen = -1;		/* an attn_path; -1: not decided yet */

/*
 * the CPU's best path, or the one TFM_ATTN_KERNELS names (portable, avx2,
 * avx512; one the CPU lacks falls to the best it has below it), or portable
 * where TFM_NO_AVX512_ATTN is set (as before there was an AVX2 path)
 */
static attn_path
decide(void)
{
	const char *env = getenv("TFM_ATTN_KERNELS");
	bool		cpu512 = false,
				cpu2 = false;
	attn_path	best;

#if defined(__x86_64__)
	__builtin_cpu_init();
	cpu512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
		__builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
	cpu2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
	best = cpu512 ? ATTN_AVX512 : cpu2 ? ATTN_AVX2 : ATTN_PORTABLE;
	if (getenv("TFM_NO_AVX512_ATTN") != NULL || (env && strcmp(env, "portable") == 0))
		return ATTN_PORTABLE;
	if (env && strcmp(env, "avx2") == 0)
		return cpu2 ? ATTN_AVX2 : ATTN_PORTABLE;
	return best;
}

/* first called from the core's threads at once: every one finds the same answer */
static attn_path
path(void)
{
	int			v = __atomic_load_n(&chosen, __ATOMIC_RELAXED);

	if (v < 0)
	{
		v = decide();
		__atomic_store_n(&chosen, v, __ATOMIC_RELAXED);
	}
	return (attn_path) v;
}

const char *
tfm_attn_kernels(void)
{
	static const char *const names[] = {"portable", "avx2", "avx512"};

	return names[path()];
}

/* ---- softmax --------------------------------------------------------------- */

/* the portable row: vectorized by the compiler for the CPU (TFM_HOT) */
TFM_HOT static void
softmax_row_portable(float *row, const uint8_t *pad, int n_visible, int Tk)
{
	float		mx = -INFINITY,
				sum = 0.0f,
				inv;

	if (pad)
		for (int c = 0; c < n_visible; c++)
			row[c] = pad[c] ? -INFINITY : row[c];
#pragma omp simd reduction(max:mx)
	for (int c = 0; c < n_visible; c++)
		mx = row[c] > mx ? row[c] : mx;
	if (mx == -INFINITY)
	{
		memset(row, 0, sizeof(float) * Tk);
		return;
	}
#pragma omp simd reduction(+:sum)
	for (int c = 0; c < n_visible; c++)
	{
		float		e = tfm_expf(row[c] - mx);

		row[c] = e;
		sum += e;
	}
	for (int c = n_visible; c < Tk; c++)
		row[c] = 0.0f;
	inv = 1.0f / sum;
	for (int c = 0; c < n_visible; c++)
		row[c] *= inv;
}

void
tfm_attn_softmax_row(float *row, const uint8_t *pad, int n_visible, int Tk, bool lowp)
{
	attn_path	p = lowp ? path() : ATTN_PORTABLE;

#if defined(__x86_64__)
	if (p == ATTN_AVX512)
	{
		tfm_attn_softmax_row_avx512(row, pad, n_visible, Tk);
		return;
	}
#endif
	(void) p;
	softmax_row_portable(row, pad, n_visible, Tk);
}

/* kt = kᵀ (s × T), in blocks of 8 keys (a cache line of kt's rows) */
static void
copy_kt_plain(float *kt, const float *k, ptrdiff_t rsk, int T, int s)
{
	for (int t0 = 0; t0 < T; t0 += 8)
	{
		int			nt = T - t0 < 8 ? T - t0 : 8;

		for (int c = 0; c < s; c++)
			for (int t = 0; t < nt; t++)
				kt[(size_t) c * T + t0 + t] = k[(size_t) (t0 + t) * rsk + c];
	}
}

void
tfm_attn_copy_kv(float *kt, float *vc, const float *k, ptrdiff_t rsk, const float *v,
				 ptrdiff_t rsv, int T, int s)
{
	tfm_attn_copy_rows(vc, v, rsv, T, s);
#if defined(__x86_64__)
	if (path() == ATTN_AVX512)
	{
		tfm_attn_copy_kt_avx512(kt, k, rsk, T, s);
		return;
	}
#endif
	copy_kt_plain(kt, k, rsk, T, s);
}

bool
tfm_attn_gemm_ok(void)
{
	return path() != ATTN_PORTABLE;
}

bool
tfm_attn_gemm(float *o, ptrdiff_t ldo, const float *a, ptrdiff_t rsa, ptrdiff_t csa, int m, int k,
			  const float *b, ptrdiff_t ldb, int n, float alpha, bool add)
{
	attn_path	p = path();

	if (p == ATTN_PORTABLE)
		return false;
	if (m <= 0 || n <= 0)
		return true;
	if (k <= 0)
	{
		/* an empty sum (a block of queries that sees no key): O = 0, or O unchanged */
		for (int i = 0; i < m && !add; i++)
			memset(o + (ptrdiff_t) i * ldo, 0, sizeof(float) * n);
		return true;
	}
#if defined(__x86_64__)
	if (p == ATTN_AVX2)
		tfm_attn_gemm_avx2(o, ldo, a, rsa, csa, m, k, b, ldb, n, alpha, add);
	else
		tfm_attn_gemm_avx512(o, ldo, a, rsa, csa, m, k, b, ldb, n, alpha, add);
#else
	/* not reached: the portable path is the only one here */
	(void) a, (void) rsa, (void) csa, (void) b, (void) ldb, (void) alpha;
#endif
	return true;
}

/* dst (T × s, contiguous) = the T rows of s values at src, rs apart */
void
tfm_attn_copy_rows(float *dst, const float *src, ptrdiff_t rs, int T, int s)
{
	for (int t = 0; t < T; t++)
		memcpy(dst + (size_t) t * s, src + (size_t) t * rs, sizeof(float) * s);
}
