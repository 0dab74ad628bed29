/*
 * lowp_dispatch_arm.c — which path the bf16, int8 and int4 products run
 * on AArch64, and why (lowp_dispatch_x86.c: on x86-64).
 *
 * Every AArch64 CPU has NEON: bf16 runs "neon" (widened to fp32 by shifts,
 * fp32 FMA; lowp_bf16_neon.c) and int8 runs "neon-dotprod" (SDOT) where
 * the kernel reports the dot-product instructions (getauxval(AT_HWCAP) &
 * HWCAP_ASIMDDP: FEAT_DotProd, Armv8.2 and later — Neoverse N1/V1/V2,
 * Graviton 2-4, Ampere Altra, Apple M1 and later), else "neon" (widening
 * multiplies; lowp_int8_neon.c); int4 the same way (lowp_int4_neon.c).
 * Decided once, at the first product or
 * query, then TFM_LOWP_FORCE=fallback (the portable fallback) or =neon (no
 * SDOT) in the environment; tfm_lowp_force_fallback and
 * tfm_lowp_force_avx2 (its x86 name: the path below the CPU's best, here
 * plain NEON) switch between products; tfm_lowp_force_noamx does nothing
 * here.  As on AVX2, bf16 inference products of many rows run fp32
 * instead (lowp_set.c, lowp_bf16_batched_fp32).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#include "lowp_internal.h"

#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1UL << 20)
#endif

static bool ready = false;
static bool cpu_dot;
static bool env_forced,
			call_forced,
			env_neon,
			call_neon;
static char reason[256];

static void
describe(void)
{
	snprintf(reason, sizeof(reason), "%s%s; CPU %s the dot-product instructions (AArch64 NEON)",
			 call_forced ? "fallback forced by tfm_lowp_force_fallback" :
			 env_forced ? "fallback forced by TFM_LOWP_FORCE=fallback" :
			 "chosen from CPU flags",
			 call_forced || env_forced ? "" :
			 call_neon ? ", dot product off by tfm_lowp_force_avx2" :
			 env_neon ? ", dot product off by TFM_LOWP_FORCE=neon" : "",
			 cpu_dot ? "has" : "lacks");
}

static void
lowp_init(void)
{
	const char *env;

	if (ready)
		return;
	cpu_dot = (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
	env = getenv("TFM_LOWP_FORCE");
	env_forced = env != NULL && strcmp(env, "fallback") == 0;
	env_neon = env != NULL && strcmp(env, "neon") == 0;
	describe();
	ready = true;
}

static bool
forced_fallback(void)
{
	lowp_init();
	return env_forced || call_forced;
}

/* SDOT for int8 */
static bool
int8_dot(void)
{
	return !forced_fallback() && cpu_dot && !env_neon && !call_neon;
}

bool
lowp_bf16_batched_fp32(void)
{
	return !forced_fallback();
}

lowp_bf16_kernel
lowp_bf16_chosen(void)
{
	return forced_fallback() ? lowp_bf16_ref_kernel : lowp_bf16_neon_kernel;
}

lowp_int8_kernel
lowp_int8_chosen(void)
{
	return int8_dot() ? lowp_int8_neondot_kernel :
		forced_fallback() ? lowp_int8_ref_kernel : lowp_int8_neon_kernel;
}

const char *
tfm_lowp_bf16_kernel(void)
{
	return forced_fallback() ? "fallback" : "neon";
}

bool
tfm_lowp_bf16_native(void)
{
	return false;
}

const char *
tfm_lowp_int8_kernel(void)
{
	return int8_dot() ? "neon-dotprod" : forced_fallback() ? "fallback" : "neon";
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

void
tfm_lowp_force_avx2(bool on)
{
	lowp_init();
	call_neon = on;
	describe();
}

void
tfm_lowp_force_noamx(bool on)
{
	(void) on;
}

/* int4: as int8, SDOT where the CPU has it, else plain NEON */
lowp_int4_kernel
lowp_int4_chosen(void)
{
	return int8_dot() ? lowp_int4_neondot_kernel :
		forced_fallback() ? lowp_int4_ref_kernel : lowp_int4_neon_kernel;
}

const char *
tfm_lowp_int4_kernel(void)
{
	return int8_dot() ? "neon-dotprod" : forced_fallback() ? "fallback" : "neon";
}

/* GGUF's K-quant blocks (kquant_gemm.c): as int8, SDOT where the CPU has it, else plain NEON */
int
lowp_kq_neon_level(void)
{
	return forced_fallback() ? 0 : int8_dot() ? 2 : 1;
}
