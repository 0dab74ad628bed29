/*
 * blas_cpu_arm.c — blas_cpu.h for AArch64.  Debian's arm64 BLIS 0.9 is
 * built for one configuration (cortexa57, the armv8a NEON kernels), which
 * it runs on every Arm CPU: the only set a user may name, and tfm leaves
 * the choice to BLIS.  Panels of rows are packed by plain C (no vector
 * transposes here).
 */
#include <stdio.h>

#include "blas_cpu.h"

const blas_arch_entry blas_arch_table[] = {
	{"cortexa57", BLIS_ARCH_CORTEXA57, 0},
	{NULL, BLIS_ARCH_GENERIC, 0},
};

const char	blas_arch_names[] = "auto, cortexa57";

int
blas_cpu_level(void)
{
	return 0;
}

int
blas_cpu_auto_arch(char *reason, size_t len)
{
	snprintf(reason, len, "detected by BLIS");
	return -1;
}

bool
blas_cpu_pack_rows_ok(void)
{
	return false;
}

int
blas_cpu_pack_rows(float *restrict d, int R, const float *x, ptrdiff_t rs, int K)
{
	(void) d, (void) R, (void) x, (void) rs, (void) K;
	return 0;
}
