/*
 * lowp_dispatch_x86.c — which path the bf16, int8 and int4 products run on
 * x86-64, and why (lowp_dispatch_arm.c: on AArch64).
 *
 * Decided once, at the first product or query: the CPU's flags (through
 * __builtin_cpu_supports, which also checks that the OS saves the AVX-512
 * state; AMX from CPUID leaf 7 and the tile state the kernel grants the
 * process through arch_prctl(ARCH_REQ_XCOMP_PERM), Linux 5.16 and later),
 * then TFM_LOWP_FORCE=fallback, =avx2 or =noamx in the environment.
 * tfm_lowp_force_fallback, tfm_lowp_force_avx2 and tfm_lowp_force_noamx
 * switch at any time between products (not during one: the flags are plain
 * variables read by the drivers).
 *
 * The order: AMX, then AVX512_BF16 (bf16) or AVX512_VNNI (int8), then AVX2
 * + FMA, then the fallback.  int4's kernel (decoding, and batched
 * products but on the fallback) runs AVX512_VNNI (with AVX512VL) or AVX2 +
 * FMA + F16C like int8.  Forcing avx2 skips the AVX-512 paths (on a CPU
 * without AVX2 + FMA it leaves the fallback); forcing the fallback wins
 * over everything.  On AVX2, bf16 inference products of many rows run
 * fp32 instead (lowp_set.c, lowp_bf16_batched_fp32).
 */
#include <cpuid.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lowp_internal.h"

#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18

static bool ready = false;
static bool cpu_bf16,
			cpu_amx,
			cpu_amx_int8,
			cpu_vnni,
			cpu_avx2,
			cpu_vnni_vl,
			cpu_f16c;
static bool env_forced,
			call_forced,
			env_avx2,
			call_avx2,
			env_noamx,
			call_noamx;
static char reason[320];

static void
describe(void)
{
	snprintf(reason, sizeof(reason),
			 "%s%s%s; CPU %s AVX512_BF16, %s AMX-BF16, %s AMX-INT8, %s AVX512_VNNI, %s AVX2+FMA, %s F16C",
			 call_forced ? "fallback forced by tfm_lowp_force_fallback" :
			 env_forced ? "fallback forced by TFM_LOWP_FORCE=fallback" :
			 "chosen from CPU flags",
			 call_forced || env_forced ? "" :
			 call_avx2 ? ", AVX-512 off by tfm_lowp_force_avx2" :
			 env_avx2 ? ", AVX-512 off by TFM_LOWP_FORCE=avx2" : "",
			 call_noamx ? ", AMX off by tfm_lowp_force_noamx" :
			 env_noamx ? ", AMX off by TFM_LOWP_FORCE=noamx" : "",
			 cpu_bf16 ? "has" : "lacks", cpu_amx ? "has" : "lacks", cpu_amx_int8 ? "has" : "lacks",
			 cpu_vnni ? "has" : "lacks",
			 cpu_avx2 ? "has" : "lacks", cpu_f16c ? "has" : "lacks");
}

#define CPUID7_EDX_AMX_BF16 (1u << 22)
#define CPUID7_EDX_AMX_TILE (1u << 24)
#define CPUID7_EDX_AMX_INT8 (1u << 25)

/* AMX-TILE and the given AMX bits (CPUID leaf 7, EDX), and the tile data state granted to us */
static bool
amx_usable(unsigned int bits)
{
	unsigned int a,
				b,
				c,
				d;

	if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
		return false;
	bits |= CPUID7_EDX_AMX_TILE;
	if ((d & bits) != bits)
		return false;
	return syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
}

/* F16C (CPUID leaf 1, ECX bit 29): fp16 scales converted in registers */
static bool
f16c_present(void)
{
	unsigned int a,
				b,
				c,
				d;

	return __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29)) != 0;
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
	cpu_avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
	cpu_amx = cpu_bf16 && amx_usable(CPUID7_EDX_AMX_BF16);
	cpu_amx_int8 = cpu_vnni && amx_usable(CPUID7_EDX_AMX_INT8);
	cpu_vnni_vl = cpu_vnni && __builtin_cpu_supports("avx512vl");
	cpu_f16c = f16c_present();
	env = getenv("TFM_LOWP_FORCE");
	env_forced = env != NULL && strcmp(env, "fallback") == 0;
	env_avx2 = env != NULL && strcmp(env, "avx2") == 0;
	env_noamx = env != NULL && strcmp(env, "noamx") == 0;
	describe();
	ready = true;
}

/* no path but the fallback, or none above AVX2 */
static bool
forced_fallback(void)
{
	lowp_init();
	return env_forced || call_forced;
}

static bool
forced_avx2(void)
{
	return env_avx2 || call_avx2;
}

bool
lowp_bf16_fast(void)
{
	return !forced_fallback() && !forced_avx2() && cpu_bf16;
}

bool
lowp_bf16_amx(void)
{
	return lowp_bf16_fast() && cpu_amx && !env_noamx && !call_noamx;
}

bool
lowp_int8_fast(void)
{
	return !forced_fallback() && !forced_avx2() && cpu_vnni;
}

/* the int8 GEMM's blocks on AMX-INT8 (lowp_int8_amx.c), where VNNI runs too */
bool
lowp_int8_amx(void)
{
	return lowp_int8_fast() && cpu_amx_int8 && !env_noamx && !call_noamx;
}

bool
lowp_avx2(void)
{
	return !forced_fallback() && cpu_avx2;
}

bool
lowp_int4_fast(void)
{
	return lowp_int8_fast() && cpu_vnni_vl && cpu_f16c;
}

bool
lowp_int4_avx2(void)
{
	return lowp_avx2() && cpu_f16c;
}

bool
lowp_bf16_batched_fp32(void)
{
	return !lowp_bf16_fast() && lowp_avx2();
}

lowp_bf16_kernel
lowp_bf16_chosen(void)
{
	return lowp_bf16_fast() ? lowp_bf16_avx512_kernel :
		lowp_avx2() ? lowp_bf16_avx2_kernel : lowp_bf16_ref_kernel;
}

lowp_int8_kernel
lowp_int8_chosen(void)
{
	return lowp_int8_fast() ? lowp_int8_avx512_kernel :
		lowp_avx2() ? lowp_int8_avx2_kernel : lowp_int8_ref_kernel;
}

lowp_int4_kernel
lowp_int4_chosen(void)
{
	return lowp_int4_fast() ? lowp_int4_avx512_kernel :
		lowp_int4_avx2() ? lowp_int4_avx2_kernel : lowp_int4_ref_kernel;
}

const char *
tfm_lowp_int4_kernel(void)
{
	return lowp_int4_fast() ? "avx512vnni" : lowp_int4_avx2() ? "avx2" : "fallback";
}

const char *
tfm_lowp_bf16_kernel(void)
{
	return lowp_bf16_amx() ? "amx" : lowp_bf16_fast() ? "avx512bf16" :
		lowp_avx2() ? "avx2" : "fallback";
}

bool
tfm_lowp_bf16_native(void)
{
	return lowp_bf16_amx() || lowp_bf16_fast();
}

const char *
tfm_lowp_int8_kernel(void)
{
	return lowp_int8_amx() ? "amx" : lowp_int8_fast() ? "avx512vnni" :
		lowp_avx2() ? "avx2" : "fallback";
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
	call_avx2 = on;
	describe();
}

void
tfm_lowp_force_noamx(bool on)
{
	lowp_init();
	call_noamx = on;
	describe();
}
