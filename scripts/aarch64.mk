# scripts/aarch64.mk — the numeric core and its unit tests built for AArch64
# and run there, with the forced paths of its low-precision products.
#
# Cross (scripts/test_aarch64.sh): objects and tests under OUT, BLIS from
# the arm64 packages unpacked at BLIS_ROOT, every test run through RUN:
#   make -f scripts/aarch64.mk CC=aarch64-linux-gnu-gcc OUT=build/aarch64 \
#        BLIS_ROOT=<sysroot> RUN="qemu-aarch64 -L /usr/aarch64-linux-gnu" unittest
# and the extension's shared library, src/pg compiled against arm64 server
# headers (PG_INC: postgresql-server-dev-15:arm64 unpacked) and linked with
# the core: `... PG_INC=<dir> extension`.  On an AArch64 machine
# `make unittest` runs the forced runs below itself (OUT=., RUN empty).
OUT       ?= build/aarch64
RUN       ?=
include src/core/core.mk

ifneq ($(TFM_MULTIARCH),aarch64-linux-gnu)
$(error scripts/aarch64.mk builds for AArch64; $(CC) targets $(TFM_TARGET))
endif

A64_OBJS  = $(patsubst %.c,$(OUT)/%.o,$(CORE_SRCS))
# what PGXS adds to the core's objects in the extension's build (pg_config
# --cflags, --cppflags; -fPIC for the shared library) that changes what the
# code means
PG_LIKE   = -fno-strict-aliasing -fwrapv -fexcess-precision=standard -D_GNU_SOURCE -fPIC

# the PG layer: PGXS's warnings, as the x86 build has them
PG_INC   ?=
PG_SRCS   = $(shell find src/pg -name '*.c')
A64_PG_OBJS = $(patsubst %.c,$(OUT)/%.o,$(PG_SRCS))
EXTVERSION = $(shell sed -n "s/default_version[[:space:]]*=[[:space:]]*'\([^']*\)'/\1/p" tfm.control)
PG_WARN   = -Wmissing-prototypes -Wpointer-arith -Wdeclaration-after-statement -Werror=vla \
            -Wendif-labels -Wmissing-format-attribute -Wimplicit-fallthrough=3 \
            -Wcast-function-type -Wformat-security -Wno-format-truncation \
            -Wno-stringop-truncation
$(A64_PG_OBJS): OBJ_EXTRA = $(PG_WARN) -Isrc/pg -DTFM_VERSION=\"$(EXTVERSION)\" -isystem $(PG_INC)
A64_UNITS = $(patsubst %.c,$(OUT)/%,$(wildcard test/unit/test_*.c))
FIXTURES  = TFM_TEST_DATA=$(CURDIR)/test/fixtures

.PHONY: all unittest unit-forced extension
all: $(A64_UNITS)

$(OUT)/src/%.o: src/%.c
	@mkdir -p $(dir $@)
	$(CC) $(TFM_CFLAGS) $(PG_LIKE) $(OBJ_EXTRA) -MMD -MP -c -o $@ $<

extension: $(OUT)/tfm.so
$(OUT)/tfm.so: $(A64_OBJS) $(A64_PG_OBJS)
	@test -n "$(PG_INC)" || { echo "PG_INC: the arm64 server headers" >&2; exit 1; }
	$(CC) -shared -o $@ $^ $(CORE_LIBS)

$(OUT)/test/unit/%: test/unit/%.c $(wildcard test/unit/*.h) $(A64_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(A64_UNIT_CFLAGS) -o $@ $< $(A64_OBJS) $(CORE_LIBS)

# Debian's aarch64 GCC 12.2 stops with an internal compiler error
# (vect_transform_reduction) on some tests' fmax reductions at -O3: the
# tests' own loops are not vectorized (the core's are)
A64_UNIT_CFLAGS = $(UNIT_CFLAGS) -fno-tree-vectorize

-include $(A64_OBJS:.o=.d) $(A64_PG_OBJS:.o=.d)

# every test on the CPU's best paths, then the forced ones
unittest: $(A64_UNITS)
	@set -e; for t in $(A64_UNITS); do echo "== $$t"; $(FIXTURES) $(RUN) $$t; done
	@$(MAKE) -s -f scripts/aarch64.mk unit-forced

# int8 on plain NEON (no SDOT), then both products on the portable fallback
unit-forced:
	@echo "== test_lowp, test_mixed, test_decode and test_kquant, plain NEON forced (TFM_LOWP_FORCE=neon: no SDOT)"
	@TFM_LOWP_FORCE=neon $(RUN) $(OUT)/test/unit/test_lowp
	@TFM_LOWP_FORCE=neon $(RUN) $(OUT)/test/unit/test_kquant
	@TFM_LOWP_FORCE=neon $(FIXTURES) $(RUN) $(OUT)/test/unit/test_mixed
	@TFM_LOWP_FORCE=neon $(FIXTURES) $(RUN) $(OUT)/test/unit/test_decode
	@echo "== test_lowp, test_mixed, test_model and test_kquant, the portable fallback forced (TFM_LOWP_FORCE=fallback)"
	@TFM_LOWP_FORCE=fallback $(RUN) $(OUT)/test/unit/test_lowp
	@TFM_LOWP_FORCE=fallback $(RUN) $(OUT)/test/unit/test_kquant
	@TFM_LOWP_FORCE=fallback $(FIXTURES) $(RUN) $(OUT)/test/unit/test_mixed
	@TFM_LOWP_FORCE=fallback $(FIXTURES) $(RUN) $(OUT)/test/unit/test_model
