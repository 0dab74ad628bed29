/*
 * blas_cpu_x86.c — blas_cpu.h for x86-64: the kernel sets by CPUID, tfm's
 * choice where BLIS 0.9 chooses badly, and AVX2 8 × 8 transposes for
 * packing panels of rows.
 *
 * BLIS 0.9 does not know AMD Zen 5 and falls back to its slow `generic`
 * kernels there, so tfm picks the set from CPUID: AVX-512 (F, DQ, BW, VL)
 * → skx, except on AMD Zen 4 (family 25), where BLIS's own zen3 choice is
 * right; AMD with only AVX2+FMA on a family BLIS does not list → haswell;
 * anything else is left to BLIS's own detection.  BLIS 0.9 picks skx on
 * Intel only for models it knows to have two AVX-512 FMA units, and
 * haswell on newer ones.
 */
#include <cpuid.h>
#include <immintrin.h>
#include <stdio.h>
#include <string.h>

#include "blas_cpu.h"

/* needs: 0 none, 1 avx, 2 avx2+fma, 3 avx-512 */
const blas_arch_entry blas_arch_table[] = {
	{"skx", BLIS_ARCH_SKX, 3},
	{"zen3", BLIS_ARCH_ZEN3, 2},
	{"zen2", BLIS_ARCH_ZEN2, 2},
	{"zen", BLIS_ARCH_ZEN, 2},
	{"haswell", BLIS_ARCH_HASWELL, 2},
	{"sandybridge", BLIS_ARCH_SANDYBRIDGE, 1},
	{"generic", BLIS_ARCH_GENERIC, 0},
	{NULL, BLIS_ARCH_GENERIC, 0},
};

const char	blas_arch_names[] = "auto, skx, zen3, zen2, zen, haswell, sandybridge, generic";

int
blas_cpu_level(void)
{
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
		__builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl"))
		return 3;
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
		return 2;
	if (__builtin_cpu_supports("avx"))
		return 1;
	return 0;
}

static bool
cpu_is_amd(unsigned *family)
{
	unsigned	a, b, c, d;
	char		vendor[13];

	if (!__get_cpuid(0, &a, &b, &c, &d))
		return false;
	memcpy(vendor, &b, 4);
	memcpy(vendor + 4, &d, 4);
	memcpy(vendor + 8, &c, 4);
	vendor[12] = '\0';
	if (!__get_cpuid(1, &a, &b, &c, &d))
		return false;
	*family = ((a >> 8) & 0xF) + ((a >> 20) & 0xFF);
	return strcmp(vendor, "AuthenticAMD") == 0;
}

int
blas_cpu_auto_arch(char *reason, size_t len)
{
	unsigned	family = 0;
	bool		amd = cpu_is_amd(&family);
	int			level = blas_cpu_level();

	if (level == 3 && amd && family < 26)
	{
		/* Zen 4 splits 512-bit operations: BLIS's zen3 kernels suit it */
		snprintf(reason, len, "detected by BLIS");
		return -1;
	}
	if (level == 3)
	{
		/*
		 * BLIS knows neither Zen 5 nor Intel models past its table (a
		 * Sapphire Rapids VM: haswell, 226 vs 338 GFLOP/s on 2 cores)
		 */
		snprintf(reason, len, "chosen by tfm: AVX-512 on %s CPU family %u",
				 amd ? "an AMD" : "a non-AMD", family);
		return BLIS_ARCH_SKX;
	}
	if (level == 2 && amd && family >= 26)
	{
		snprintf(reason, len, "chosen by tfm: AVX2 on AMD family %u", family);
		return BLIS_ARCH_HASWELL;
	}
	snprintf(reason, len, "detected by BLIS");
	return -1;
}

bool
blas_cpu_pack_rows_ok(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx2");
}

#define AVX2 __attribute__((target("avx2")))

/* r[j] = column j of the 8 × 8 block of rows r[0..7] */
static inline AVX2 void
transpose8(__m256 r[8])
{
	__m256		t[8],
				u[8];

	for (int i = 0; i < 8; i += 2)
	{
		t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
		t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
	}
	for (int i = 0; i < 8; i += 4)
	{
		u[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
		u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
		u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
		u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
	}
	for (int i = 0; i < 4; i++)
	{
		r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
		r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
	}
}

/*
 * Eight columns at a time, as 8 × 8 transposes of groups of eight rows (a
 * last group of fewer rows reads zeros).
 */
AVX2 int
blas_cpu_pack_rows(float *restrict d, int R, const float *x, ptrdiff_t rs, int K)
{
	int			p = 0;

	for (; p + 8 <= K; p += 8)
		for (int g = (R - 1) / 8 * 8; g >= 0; g -= 8)
		{
			int			n = R - g < 8 ? R - g : 8;
			__m256		r[8];

			for (int i = 0; i < 8; i++)
				r[i] = i < n ? _mm256_loadu_ps(x + (size_t) (g + i) * rs + p) : _mm256_setzero_ps();
			transpose8(r);
			/*
			 * Full 8-float stores.  The last group of rows, if it has n < 8,
			 * spills 8 − n zeros into the start of the next column: rows of
			 * group 0, stored after it (groups go last to first) or, when
			 * the panel is only that group, by the next column's store;
			 * past the chunk's last column the next chunk or the caller's
			 * tail overwrites them, past the panel's last column the next
			 * panel (packed later) or the slack tfm_panels_floats keeps.
			 * Masked stores would avoid the spill but are slow on AMD.
			 */
			for (int j = 0; j < 8; j++)
				_mm256_storeu_ps(d + (size_t) (p + j) * R + g, r[j]);
		}
	return p;
}
