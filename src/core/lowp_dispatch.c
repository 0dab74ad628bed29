/*
 * lowp_dispatch.c — which path the bf16 and int8 products run, and why.
 *
 * Decided once, at the first product or query: the CPU's flags (through
 * __builtin_cpu_supports, which also checks that the OS saves the AVX-512
 * state), then TFM_LOWP_FORCE=fallback in the environment.  AMX tiles
 * (bf16 products of more than a few rows) need the CPU's AMX-BF16 and the
 * kernel's permission for the tile state, asked for here once per process;
 * TFM_LOWP_FORCE=noamx keeps them off (then AVX512_BF16 runs everything).
 * tfm_lowp_force_fallback switches at any time between products (not
 * during one: the flags are plain variables read by the drivers).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lowp_internal.h"

static bool ready = false;
static bool cpu_bf16,
			cpu_vnni,
			cpu_amx;
static bool amx_off;			/* TFM_LOWP_FORCE=noamx */
static bool env_forced,
			call_forced;
static char reason[192];

static void
describe(void)
{
	snprintf(reason, sizeof(reason), "%s; CPU %s AVX512_BF16, %s AVX512_VNNI, %s",
			 call_forced ? "fallback forced by tfm_lowp_force_fallback" :
			 env_forced ? "fallback forced by TFM_LOWP_FORCE=fallback" :
			 "chosen from CPU flags",
			 cpu_bf16 ? "has" : "lacks", cpu_vnni ? "has" : "lacks",
			 !cpu_amx ? "no AMX tiles" :
			 amx_off ? "AMX tiles off (TFM_LOWP_FORCE=noamx)" :
			 "AMX tiles for bf16 products of more than 4 rows");
}

static void
lowp_init(void)
{
	const char *env;

	if (ready)
		return;
	__builtin_cpu_init();
	cpu_bf16 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
		__builtin_cpu_supports("avx512bf16");
	cpu_vnni = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
		__builtin_cpu_supports("avx512vnni");
	env = getenv("TFM_LOWP_FORCE");
	env_forced = env != NULL && strcmp(env, "fallback") == 0;
	amx_off = env != NULL && strcmp(env, "noamx") == 0;
	cpu_amx = cpu_bf16 && __builtin_cpu_supports("amx-tile") &&
		__builtin_cpu_supports("amx-bf16") && lowp_bf16_amx_enable();
	describe();
	ready = true;
}

bool
lowp_bf16_fast(void)
{
	lowp_init();
	return cpu_bf16 && !env_forced && !call_forced;
}

bool
lowp_bf16_amx(void)
{
	return lowp_bf16_fast() && cpu_amx && !amx_off;
}

bool
lowp_int8_fast(void)
{
	lowp_init();
	return cpu_vnni && !env_forced && !call_forced;
}

const char *
tfm_lowp_bf16_kernel(void)
{
	return lowp_bf16_fast() ? "avx512bf16" : "fallback";
}

const char *
tfm_lowp_int8_kernel(void)
{
	return lowp_int8_fast() ? "avx512vnni" : "fallback";
}

const char *
tfm_lowp_reason(void)
{
	lowp_init();
	return reason;
}

void
tfm_lowp_force_fallback(bool on)
{
	lowp_init();
	call_forced = on;
	describe();
}
