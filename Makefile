# tfm — transformers inside PostgreSQL.  PGXS build.
#
#   make                 build the extension (tfm.so) and the core's unit tests
#   make install         install into the server that pg_config names
#   make unittest        run the core's C unit tests (no server needed; on
#                        AArch64 with the NEON paths forced too)
#   make valgrind        the same unit tests under valgrind memcheck
#   make fuzz            test/fuzz/chat_fuzz, a libFuzzer target (clang; not run by CI)
#   make installcheck    pg_regress against a running server (see scripts/test.sh)
#   scripts/test.sh      everything, against a throwaway cluster

PG_CONFIG   ?= pg_config
EXTENSION    = tfm
EXTVERSION   = $(shell grep default_version $(EXTENSION).control | sed -e "s/default_version[[:space:]]*=[[:space:]]*'\([^']*\)'/\1/")
MODULE_big   = tfm
# sql/tfm.sql is the install script of the current version (installed as
# tfm--<version>.sql).  It is, byte for byte, 0.1's script (sql/tfm--0.1.sql,
# not installed) followed by every upgrade script, so a fresh install and
# an upgraded one hold the same objects: `make check-install-script` checks
# it, `make install-script` writes it after a new upgrade script.  The
# upgrade scripts are installed for ALTER EXTENSION tfm UPDATE.
UPGRADES     = sql/$(EXTENSION)--0.1--0.2.sql sql/$(EXTENSION)--0.2--0.3.sql \
               sql/$(EXTENSION)--0.3--0.4.sql sql/$(EXTENSION)--0.4--0.5.sql
DATA_built   = sql/$(EXTENSION)--$(EXTVERSION).sql
# tfm_vector: tfm's embeddings as pgvector's vector type, an extension of its
# own (requires tfm and vector) so that tfm never needs pgvector
DATA         = $(UPGRADES) tfm_vector.control sql/tfm_vector--0.5.sql

# the core's sources, flags and BLIS, for x86-64 or AArch64 (the compiler's target)
include src/core/core.mk
# the PostgreSQL layer: each folder and its rooms (sql/jobs/, storage/models/, runtime/cache/, ...)
PG_SRCS      = $(wildcard src/pg/*.c src/pg/base/*.c src/pg/storage/*.c src/pg/storage/*/*.c \
               src/pg/runtime/*.c src/pg/runtime/*/*.c src/pg/import/*.c src/pg/sql/*.c src/pg/sql/*/*.c)
OBJS         = $(CORE_SRCS:.c=.o) $(PG_SRCS:.c=.o)

# pg_regress tests: test/regress/sql/<name>.sql with test/regress/expected/<name>.out
TESTS        = $(sort $(wildcard test/regress/sql/*.sql))
REGRESS      = $(filter-out vector,$(patsubst test/regress/sql/%.sql,%,$(TESTS)))
# vector.sql needs pgvector (scripts/build_pgvector.sh): run where the server
# has it (scripts/test.sh makes sure CI's has)
ifneq ($(wildcard $(shell $(PG_CONFIG) --sharedir)/extension/vector.control),)
REGRESS     += vector
endif
REGRESS_OPTS = --inputdir=test/regress --load-extension=$(EXTENSION)

# PostgreSQL's own headers as system headers: -Wextra stays on for tfm's code only
PG_CPPFLAGS  = $(TFM_CFLAGS) -Isrc/pg -DTFM_VERSION=\"$(EXTVERSION)\" -isystem $(shell $(PG_CONFIG) --includedir-server) -MMD -MP
SHLIB_LINK   = $(CORE_LIBS)

EXTRA_CLEAN  = $(UNIT_BINS) test/unit/*.o $(OBJS:.o=.d) test/fuzz/chat_fuzz

# No LLVM bitcode: JIT-inlining tfm's C is of no use, and clang's -MMD for
# x.bc wrote the same x.d as gcc's for x.o, so header edits rebuilt nothing.
override with_llvm = no

PGXS        := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

sql/$(EXTENSION)--$(EXTVERSION).sql: sql/$(EXTENSION).sql
	cp $< $@

.PHONY: check-install-script install-script
check-install-script:
	@cat sql/$(EXTENSION)--0.1.sql $(UPGRADES) | cmp -s - sql/$(EXTENSION).sql || \
	  { echo "sql/$(EXTENSION).sql is not sql/$(EXTENSION)--0.1.sql followed by the upgrade scripts (make install-script)" >&2; exit 1; }
install-script:
	cat sql/$(EXTENSION)--0.1.sql $(UPGRADES) > sql/$(EXTENSION).sql

# ---- the numeric core's unit tests: plain C, no server -----------------------
UNIT_SRCS  = $(wildcard test/unit/test_*.c)
UNIT_BINS  = $(UNIT_SRCS:.c=)
CORE_OBJS  = $(CORE_SRCS:.c=.o)

test/unit/%: test/unit/%.c $(wildcard test/unit/*.h) $(CORE_OBJS)
	$(CC) $(UNIT_CFLAGS) -o $@ $< $(CORE_OBJS) $(CORE_LIBS)

all: $(UNIT_BINS)

.PHONY: unittest valgrind
unittest: $(UNIT_BINS)
	@set -e; for t in $(UNIT_BINS); do echo "== $$t"; TFM_TEST_DATA=$(CURDIR)/test/fixtures $$t; done
	@$(if $(filter aarch64-linux-gnu,$(TFM_MULTIARCH)),$(MAKE) -s -f scripts/aarch64.mk OUT=. unit-forced,true)
	@echo "== test/unit/test_blas, panels packed without the AVX2 transposes" && TFM_NO_AVX2_PACK=1 test/unit/test_blas
	@echo "== test/unit/test_lowp, the fallback forced from the environment" && TFM_LOWP_FORCE=fallback test/unit/test_lowp
	@echo "== test/unit/test_lowp, AMX off from the environment (AVX512_BF16 where the CPU has it)" && TFM_LOWP_FORCE=noamx test/unit/test_lowp
	@echo "== test/unit/test_mixed, the fallback forced from the environment" && TFM_LOWP_FORCE=fallback TFM_TEST_DATA=$(CURDIR)/test/fixtures test/unit/test_mixed
	@echo "== test/unit/test_lowp, the AVX2 path forced from the environment (as on a CPU without AVX-512)" && TFM_LOWP_FORCE=avx2 test/unit/test_lowp
	@echo "== test/unit/test_mixed and test/unit/test_decode, the AVX2 path forced from the environment" && TFM_LOWP_FORCE=avx2 TFM_TEST_DATA=$(CURDIR)/test/fixtures test/unit/test_mixed && TFM_LOWP_FORCE=avx2 TFM_TEST_DATA=$(CURDIR)/test/fixtures test/unit/test_decode
	@echo "== test/unit/test_attn_kernels, test/unit/test_layers, test/unit/test_model and test/unit/test_task_heads, attention's portable path (and test_model's products on AVX2)" && TFM_NO_AVX512_ATTN=1 test/unit/test_attn_kernels && TFM_NO_AVX512_ATTN=1 test/unit/test_layers && TFM_NO_AVX512_ATTN=1 TFM_LOWP_FORCE=avx2 TFM_TEST_DATA=$(CURDIR)/test/fixtures test/unit/test_model && TFM_NO_AVX512_ATTN=1 test/unit/test_task_heads
	@echo "== test/unit/test_attn_kernels, test/unit/test_layers, test/unit/test_model, test/unit/test_mixed and test/unit/test_task_heads, attention's AVX2 path (as on a CPU without AVX-512; products on AVX2 too)" && TFM_ATTN_KERNELS=avx2 test/unit/test_attn_kernels && TFM_ATTN_KERNELS=avx2 test/unit/test_layers && TFM_ATTN_KERNELS=avx2 TFM_LOWP_FORCE=avx2 TFM_TEST_DATA=$(CURDIR)/test/fixtures test/unit/test_model && TFM_ATTN_KERNELS=avx2 TFM_LOWP_FORCE=avx2 TFM_TEST_DATA=$(CURDIR)/test/fixtures test/unit/test_mixed && TFM_ATTN_KERNELS=avx2 TFM_LOWP_FORCE=avx2 TFM_BLIS_ARCH=haswell test/unit/test_task_heads
	@echo "== test/unit/test_lowp_int4, the fallback and then the AVX2 path forced from the environment" && TFM_LOWP_FORCE=fallback test/unit/test_lowp_int4 && TFM_LOWP_FORCE=avx2 test/unit/test_lowp_int4
	@echo "== test/unit/test_kquant, the reference forced from the environment" && TFM_LOWP_FORCE=fallback test/unit/test_kquant
	@echo "== test/unit/test_varlen, the row-exact products' AVX2 kernel forced from the environment (as on a CPU without AVX-512)" && TFM_SGEMM_FORCE=avx2 TFM_TEST_DATA=$(CURDIR)/test/fixtures test/unit/test_varlen
	@echo "== test/unit/test_kquant and test/unit/test_gguf_kept, the AVX2 path forced from the environment (as on a CPU without AVX-512 VNNI)" && TFM_LOWP_FORCE=avx2 test/unit/test_kquant && TFM_LOWP_FORCE=avx2 TFM_TEST_DATA=$(CURDIR)/test/fixtures test/unit/test_gguf_kept

# skx kernels die with SIGILL under valgrind 3.19: force the haswell path,
# and the low-precision products' plain-C fallback (no AVX-512 either);
# PCRE2's interpreter (its JIT code reads what valgrind takes as undefined).
valgrind: $(UNIT_BINS)
	@set -e; for t in $(UNIT_BINS); do echo "== valgrind $$t"; \
	  TFM_BLIS_ARCH=$(VALGRIND_BLIS) TFM_LOWP_FORCE=fallback TFM_NO_PCRE2_JIT=1 TFM_TEST_QUICK=1 OMP_NUM_THREADS=1 TFM_TEST_DATA=$(CURDIR)/test/fixtures \
	  valgrind --quiet --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect $$t; done

# libFuzzer targets, built with clang and the sanitizers; run by hand (test/fuzz/chat_fuzz.c
# says how), not by CI, where test/unit/test_chat_fuzz runs seeded inputs instead
FUZZ_CC    ?= clang
CHAT_SRCS   = $(wildcard src/core/chat/*.c) src/core/util/status.c
.PHONY: fuzz
fuzz: test/fuzz/chat_fuzz
test/fuzz/chat_fuzz: test/fuzz/chat_fuzz.c $(CHAT_SRCS) $(wildcard src/core/chat/*.h) include/tfm/chat_template.h
	$(FUZZ_CC) -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined -Iinclude -o $@ test/fuzz/chat_fuzz.c $(CHAT_SRCS)

# header dependencies (PGXS does not track them)
-include $(OBJS:.o=.d)
