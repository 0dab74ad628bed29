# src/core/core.mk — the numeric core's sources, flags and BLIS for the
# compiler's target, x86-64 or AArch64 (from `$(CC) -dumpmachine`).
# Included by the Makefile and by scripts/aarch64.mk (the cross build that
# scripts/test_aarch64.sh runs under qemu-aarch64).  The sources are
# src/core/<area>/*.c and up to two levels deeper (formats/hf/,
# kernels/attention/, kernels/lowp/bf16/).  Files of the other CPU family
# are left out of the build, by name, in whatever folder they stand:
#
#   x86-64 only:  *_x86.c, *_avx2.c, *_avx512.c, *_amx.c (intrinsics, CPUID)
#   AArch64 only: *_arm.c, *_neon.c (NEON, HWCAP)
#
# BLIS_ROOT (empty: this system) is where Debian's BLIS for the target is
# unpacked: a cross build's sysroot.
TFM_TARGET := $(shell $(CC) -dumpmachine)
ifneq ($(filter aarch64-%,$(TFM_TARGET)),)
TFM_MULTIARCH  = aarch64-linux-gnu
TFM_MARCH      = -march=armv8-a
TFM_OTHER_ARCH = %_x86.c %_avx2.c %_avx512.c %_amx.c
VALGRIND_BLIS  = auto
else ifneq ($(filter x86_64-%,$(TFM_TARGET)),)
TFM_MULTIARCH  = x86_64-linux-gnu
TFM_MARCH      = -march=x86-64-v2 -mtune=native
TFM_OTHER_ARCH = %_arm.c %_neon.c
# valgrind 3.19 dies with SIGILL in BLIS's skx kernels
VALGRIND_BLIS  = haswell
else
$(error tfm builds for x86-64 and AArch64; $(CC) targets $(TFM_TARGET))
endif

CORE_SRCS    = $(filter-out $(TFM_OTHER_ARCH),$(wildcard src/core/*/*.c src/core/*/*/*.c src/core/*/*/*/*.c))

BLIS_INC     = $(BLIS_ROOT)/usr/include/$(TFM_MULTIARCH)/blis-openmp
BLIS_LIB     = $(BLIS_ROOT)/usr/lib/$(TFM_MULTIARCH)/blis-openmp

# No -ffast-math: tfm checks for NaN/Inf losses, so finite-math must stay off.
TFM_CFLAGS   = -std=gnu11 -O3 $(TFM_MARCH) -fopenmp -Wall -Wextra \
               -fno-math-errno -fno-trapping-math -Iinclude -isystem $(BLIS_INC)
# the unit tests: their extra warnings off, and what they link with
UNIT_CFLAGS  = $(TFM_CFLAGS) -Wno-unused-parameter -Wno-missing-field-initializers
# PCRE2 (tokenizer.json's Split rules): the system's, or a cross build's
# from the sysroot at BLIS_ROOT
ifneq ($(BLIS_ROOT),)
TFM_CFLAGS  += -isystem $(BLIS_ROOT)/usr/include
PCRE2_LIB    = -L$(BLIS_ROOT)/usr/lib/$(TFM_MULTIARCH) -Wl,-rpath,$(BLIS_ROOT)/usr/lib/$(TFM_MULTIARCH)
endif
CORE_LIBS    = -fopenmp -L$(BLIS_LIB) -Wl,-rpath,$(BLIS_LIB) -lblis $(PCRE2_LIB) -lpcre2-8 -lm
