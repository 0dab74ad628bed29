/*
 * blas.c — the only file that calls BLIS (OpenMP build of Debian's 0.9).
 *
 * Kernel choice.  BLIS 0.9 reads BLIS_ARCH_TYPE (an integer index into its
 * arch_t enum) once, at bli_init.  Where its own detection goes wrong, tfm
 * picks the set before the first BLIS call (blas_cpu_auto_arch).  A user's
 * choice (the tfm.blis_arch setting, or BLIS_ARCH_TYPE in the environment)
 * wins, but is validated first: an out-of-range index aborts BLIS, and a
 * kernel set the CPU lacks dies with SIGILL.  What the CPU family adds
 * (blas_cpu.h: the named kernel sets, what each needs, tfm's choice, the
 * vector transposes for packing) is in blas_cpu_x86.c or blas_cpu_arm.c,
 * whichever the build targets.
 *
 * Small products.  tfm_gemm_packed and the kept panels (tfm_pack_left,
 * tfm_pack_right, tfm_gemm_panels) call the kernel set's own sgemm
 * micro-kernel on panels packed here; rows become panels by AVX2 8 × 8
 * transposes where the CPU has AVX2 (TFM_NO_AVX2_PACK in the environment
 * turns that off, so the tests cover the plain-C packing as well; on
 * AArch64 the plain C packing always).
 *
 * Threads.  Signals are blocked while a larger OpenMP team is first started,
 * so pooled worker threads inherit a full signal mask and the host process
 * (a PostgreSQL backend) keeps receiving its signals on its own thread.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <omp.h>

#include <blis.h>

#include "tfm/blas.h"
#include "blas_cpu.h"

static bool blas_ready = false;

/* the native sgemm micro-kernel of the chosen kernel set, for tfm_gemm_packed */
typedef void (*sgemm_ukr_fn) (dim_t m, dim_t n, dim_t k, float *alpha, float *a, float *b,
							  float *beta, float *c, inc_t rs_c, inc_t cs_c,
							  auxinfo_t *data, cntx_t *cntx);
static cntx_t *ukr_cntx;
static sgemm_ukr_fn ukr_fn;
static int	ukr_mr,
			ukr_nr;
static bool ukr_cols;			/* the kernel prefers column-stored C */
static bool pack_vec;			/* panels of rows by the CPU's vector transposes (blas_cpu.h) */
static char arch_reason[128] = "not initialised";
static int	n_threads = 1;
static int	n_threads_started = 1;

static const blas_arch_entry *
arch_by_name(const char *name)
{
	for (const blas_arch_entry *e = blas_arch_table; e->name; e++)
		if (strcmp(e->name, name) == 0)
			return e;
	return NULL;
}

const char *
tfm_blas_arch_names(void)
{
	return blas_arch_names;
}

bool
tfm_blas_arch_supported(const char *arch)
{
	const blas_arch_entry *e;

	if (arch == NULL || strcmp(arch, "auto") == 0)
		return true;
	e = arch_by_name(arch);
	return e != NULL && e->needs <= blas_cpu_level();
}

static void
set_arch_env(arch_t id)
{
	char		buf[16];

	snprintf(buf, sizeof(buf), "%d", (int) id);
	setenv("BLIS_ARCH_TYPE", buf, 1);
}

int
tfm_blas_init(const char *arch, char *err, size_t errlen)
{
	const char *env;

	if (blas_ready)
		return 0;

	env = getenv("BLIS_ARCH_TYPE");
	if (arch != NULL && arch[0] != '\0' && strcmp(arch, "auto") != 0)
	{
		const blas_arch_entry *e = arch_by_name(arch);

		if (e == NULL)
		{
			snprintf(err, errlen, "unknown BLIS kernel set \"%s\" (valid: %s)",
					 arch, tfm_blas_arch_names());
			return -1;
		}
		if (e->needs > blas_cpu_level())
		{
			snprintf(err, errlen, "this CPU cannot run the BLIS kernel set \"%s\"", arch);
			return -1;
		}
		set_arch_env(e->id);
		snprintf(arch_reason, sizeof(arch_reason), "chosen by setting");
	}
	else if (env != NULL && env[0] != '\0')
	{
		char	   *end;
		long		id = strtol(env, &end, 10);
		bool		ok = false;

		if (*end == '\0' && end != env)
			for (const blas_arch_entry *e = blas_arch_table; e->name; e++)
				if ((long) e->id == id && e->needs <= blas_cpu_level())
					ok = true;
		if (!ok)
		{
			snprintf(err, errlen,
					 "BLIS_ARCH_TYPE=\"%s\" is not a kernel set this CPU can run", env);
			return -1;
		}
		snprintf(arch_reason, sizeof(arch_reason), "BLIS_ARCH_TYPE from the environment");
	}
	else
	{
		int			id = blas_cpu_auto_arch(arch_reason, sizeof(arch_reason));

		if (id >= 0)
			set_arch_env((arch_t) id);
	}

	bli_init();
	bli_thread_set_num_threads(1);
	ukr_cntx = bli_gks_query_cntx();
	ukr_fn = (sgemm_ukr_fn) bli_cntx_get_l3_nat_ukr_dt(BLIS_FLOAT, BLIS_GEMM_UKR, ukr_cntx);
	ukr_mr = (int) bli_cntx_get_blksz_def_dt(BLIS_FLOAT, BLIS_MR, ukr_cntx);
	ukr_nr = (int) bli_cntx_get_blksz_def_dt(BLIS_FLOAT, BLIS_NR, ukr_cntx);
	ukr_cols = bli_cntx_l3_nat_ukr_prefers_cols_dt(BLIS_FLOAT, BLIS_GEMM_UKR, ukr_cntx);
	pack_vec = blas_cpu_pack_rows_ok() && getenv("TFM_NO_AVX2_PACK") == NULL;
	blas_ready = true;
	return 0;
}

const char *
tfm_blas_arch(void)
{
	if (!blas_ready)
		return "uninitialised";
	return bli_arch_string(bli_arch_query_id());
}

const char *
tfm_blas_arch_reason(void)
{
	return arch_reason;
}

static void
ensure_ready(void)
{
	if (!blas_ready)
	{
		char		err[256];

		if (tfm_blas_init(NULL, err, sizeof(err)) != 0)
		{
			/* a bad BLIS_ARCH_TYPE: ignore it rather than let BLIS abort */
			unsetenv("BLIS_ARCH_TYPE");
			(void) tfm_blas_init(NULL, err, sizeof(err));
		}
	}
}

void
tfm_set_threads(int n)
{
	ensure_ready();
	if (n < 1)
		n = 1;
	if (n > TFM_MAX_THREADS)
		n = TFM_MAX_THREADS;
	n_threads = n;
	bli_thread_set_num_threads(n);
	if (n > n_threads_started)
	{
		sigset_t	all,
					old;
		float		a[64] = {0},
					c[64];

		/* start the larger team now, with every signal blocked */
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
#pragma omp parallel num_threads(n)
		{
			(void) 0;
		}
		bli_sgemm(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, 8, 8, 8,
				  &(float) {1.0f}, a, 8, 1, a, 8, 1, &(float) {0.0f}, c, 8, 1);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		n_threads_started = n;
	}
}

int
tfm_get_threads(void)
{
	/* nested teams would get one thread anyway: say so, so work is split for one */
	return omp_in_parallel() ? 1 : n_threads;
}

/*
 * BLIS's "sup" path (small/unpacked products, no packing) is meant for a
 * small dimension.  Measured on Zen 3 with zen3 kernels, the layer products
 * of training (8,192 rows; d 128-1024) run 8-19% faster packed, the
 * weight-gradient products Xᵀ·dY up to 1.8× (sup 72-110 GFLOP/s, packed
 * 123-146 at 2 threads), so sup is left to BLIS only when a dimension is
 * below SUP_BELOW (decoding a few rows, small batches).
 */
#define SUP_BELOW 128

void
tfm_gemm(bool transa, bool transb, int M, int N, int K,
		 float alpha, const float *A, int lda,
		 const float *B, int ldb,
		 float beta, float *C, int ldc)
{
	inc_t		rsa = transa ? 1 : lda,
				csa = transa ? lda : 1;
	inc_t		rsb = transb ? 1 : ldb,
				csb = transb ? ldb : 1;
	rntm_t		rntm = BLIS_RNTM_INITIALIZER;

	ensure_ready();
	if (M == 0 || N == 0)
		return;
	if (!transa && M <= TFM_GEMV_ROWS && K > 0)
	{
		tfm_gemv_rows(tfm_get_threads(), transb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
		return;
	}
	bli_rntm_set_num_threads(tfm_get_threads(), &rntm);
	if (M >= SUP_BELOW && N >= SUP_BELOW && K >= SUP_BELOW)
		bli_rntm_disable_l3_sup(&rntm);
	bli_sgemm_ex(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, M, N, K,
				 &alpha, (float *) A, rsa, csa, (float *) B, rsb, csb,
				 &beta, C, ldc, 1, NULL, &rntm);
}

void
tfm_gemm_strided(int M, int N, int K, float alpha,
				 const float *A, ptrdiff_t rsa, ptrdiff_t csa,
				 const float *B, ptrdiff_t rsb, ptrdiff_t csb,
				 float beta, float *C, ptrdiff_t rsc, ptrdiff_t csc)
{
	rntm_t		rntm = BLIS_RNTM_INITIALIZER;

	ensure_ready();
	if (M == 0 || N == 0)
		return;
	bli_rntm_set_num_threads(1, &rntm);
	bli_sgemm_ex(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, M, N, K,
				 &alpha, (float *) A, rsa, csa, (float *) B, rsb, csb,
				 &beta, C, rsc, csc, NULL, &rntm);
}

/* ---- small products through the micro-kernel ----------------------------- */

#define PANEL_ALIGN 16			/* floats: 64 bytes, for aligned panel loads */
#define PANEL_HEIGHT_BOUND 32	/* rows: the highest panel of the kernels tfm meets */
#define PACK_MIN 4				/* smaller M or N: BLIS's unpacked small-matrix path */

static inline int
round_up(int x, int m)
{
	return (x + m - 1) / m * m;
}

size_t
tfm_gemm_packed_floats(int M, int N, int K)
{
	return tfm_panels_floats(M, K) + tfm_panels_floats(N, K);
}

/*
 * One panel height R at a time, R a constant in each instance (so the copy
 * of a panel's column unrolls into vector moves).  Full panels of a matrix
 * stored along its rows (cs == 1: Q, K, dO read as rows) or along its
 * columns (rs == 1: Pᵀ, dSᵀ, a transposed view) copy in the order that
 * writes the panel contiguously; a last, cut panel is padded with zeros.
 */
static inline __attribute__((always_inline)) void
pack_fixed(float *restrict dst, const int R, const float *restrict X, ptrdiff_t rs,
		   ptrdiff_t cs, int M, int K)
{
	for (int i0 = 0; i0 < M; i0 += R)
	{
		float	   *restrict d = dst + (size_t) i0 * K;
		const float *x = X + (size_t) i0 * rs;
		int			m = M - i0 < R ? M - i0 : R;

		if (m == R && rs == 1)
			for (int p = 0; p < K; p++)
				for (int r = 0; r < R; r++)
					d[(size_t) p * R + r] = x[(size_t) p * cs + r];
		else if (m == R && cs == 1)
			for (int p = pack_vec ? blas_cpu_pack_rows(d, R, x, rs, K) : 0; p < K; p++)
				for (int r = 0; r < R; r++)
					d[(size_t) p * R + r] = x[(size_t) r * rs + p];
		else
			for (int p = 0; p < K; p++)
				for (int r = 0; r < R; r++)
					d[(size_t) p * R + r] = r < m ? x[(size_t) r * rs + (size_t) p * cs] : 0.0f;
	}
}

/*
 * dst = the kernel's micro-panels of the M × K matrix X (strides rs, cs):
 * panel i holds rows i·R .. i·R+R-1, column p at dst[i·R·K + p·R + r];
 * rows past M are zeros.  A-panels (R = MR) and B-panels of Bᵀ (R = NR)
 * have the same layout.  The heights BLIS's kernels use get a copy of
 * pack_fixed compiled for their constant R; any other goes row by row.
 */
static void
pack_panels(float *restrict dst, int R, const float *X, ptrdiff_t rs, ptrdiff_t cs,
			int M, int K)
{
#define PACK_HEIGHT(h) case h: pack_fixed(dst, h, X, rs, cs, M, K); break;
	switch (R)
	{
		PACK_HEIGHT(6)
		PACK_HEIGHT(8)
		PACK_HEIGHT(12)
		PACK_HEIGHT(16)
		PACK_HEIGHT(32)
		default:
			for (int i0 = 0; i0 < M; i0 += R)
			{
				float	   *d = dst + (size_t) i0 * K;
				int			m = M - i0 < R ? M - i0 : R;

				for (int p = 0; p < K; p++)
					for (int r = 0; r < R; r++)
						d[(size_t) p * R + r] = r < m ?
							X[(size_t) (i0 + r) * rs + (size_t) p * cs] : 0.0f;
			}
	}
#undef PACK_HEIGHT
}

static inline float *
align_panels(float *buf)
{
	return (float *) (((uintptr_t) buf + PANEL_ALIGN * sizeof(float) - 1) &
					  ~(uintptr_t) (PANEL_ALIGN * sizeof(float) - 1));
}

size_t
tfm_panels_floats(int rows, int depth)
{
	int			n = rows > 0 ? rows : 1,
				r;

	ensure_ready();
	/*
	 * Either panel height; the kernels read a few vectors past the last
	 * panel.  With panels at most PANEL_HEIGHT_BOUND high (every BLIS 0.9
	 * sgemm kernel: skx 32 × 12, haswell and zen 6 × 16, armv8a 8 × 12),
	 * the bound is the same on every CPU, so tfm.work_mem's checks and
	 * tfm_workspace_bytes do not depend on the machine.
	 */
	if (ukr_mr <= PANEL_HEIGHT_BOUND && ukr_nr <= PANEL_HEIGHT_BOUND)
		return (size_t) (n + PANEL_HEIGHT_BOUND - 1) * (depth > 0 ? depth : 1) +
			PANEL_ALIGN + (size_t) 4 * (2 * PANEL_HEIGHT_BOUND);
	r = round_up(n, ukr_mr) > round_up(n, ukr_nr) ? round_up(n, ukr_mr) : round_up(n, ukr_nr);
	return (size_t) r * (depth > 0 ? depth : 1) +
		PANEL_ALIGN + (size_t) 4 * (ukr_mr + ukr_nr);
}

/*
 * The left operand of C = A·B becomes the kernel's A-panels, the right one
 * (as Bᵀ) its B-panels — or the other way round when the kernel prefers to
 * write C along columns (then tfm_gemm_panels computes Cᵀ = Bᵀ·Aᵀ).
 */
tfm_panels
tfm_pack_left(float *buf, int M, int K, const float *A, ptrdiff_t rs, ptrdiff_t cs)
{
	tfm_panels	p;

	ensure_ready();
	p = (tfm_panels) {align_panels(buf), M, K, ukr_cols ? ukr_nr : ukr_mr};
	pack_panels(p.data, p.height, A, rs, cs, M, K);
	return p;
}

tfm_panels
tfm_pack_right(float *buf, int K, int N, const float *B, ptrdiff_t rs, ptrdiff_t cs)
{
	tfm_panels	p;

	ensure_ready();
	p = (tfm_panels) {align_panels(buf), N, K, ukr_cols ? ukr_mr : ukr_nr};
	pack_panels(p.data, p.height, B, cs, rs, N, K);		/* Bᵀ: N × K */
	return p;
}

void
tfm_pack_panels(float *dst, int height, const float *X, ptrdiff_t rs, ptrdiff_t cs, int M, int K)
{
	ensure_ready();
	pack_panels(dst, height, X, rs, cs, M, K);
}

void
tfm_gemm_panels(int M, int N, int K, float alpha, const tfm_panels *a, int a_k0,
				const tfm_panels *b, int b_k0, float beta, float *C, ptrdiff_t rsc,
				ptrdiff_t csc)
{
	const tfm_panels *u = a,
			   *w = b;
	int			u_k0 = a_k0,
				w_k0 = b_k0;
	auxinfo_t	aux;

	if (M <= 0 || N <= 0)
		return;
	if (K <= 0)
	{
		/* an empty sum: C = beta·C */
		for (int i = 0; i < M; i++)
			for (int j = 0; j < N; j++)
			{
				float	   *c = C + (size_t) i * rsc + (size_t) j * csc;

				*c = beta == 0.0f ? 0.0f : beta * *c;
			}
		return;
	}
	if (ukr_cols)
	{
		/* Cᵀ = Bᵀ·Aᵀ: the kernel's A-panels hold B */
		int			t = M;
		ptrdiff_t	ts = rsc;

		u = b, w = a;
		u_k0 = b_k0, w_k0 = a_k0;
		M = N, N = t;
		rsc = csc, csc = ts;
	}
	memset(&aux, 0, sizeof(aux));
	for (int j0 = 0; j0 < N; j0 += w->height)
	{
		float	   *bp = w->data + (size_t) j0 * w->depth + (size_t) w_k0 * w->height;

		for (int i0 = 0; i0 < M; i0 += u->height)
		{
			float	   *ap = u->data + (size_t) i0 * u->depth + (size_t) u_k0 * u->height;
			bool		last_i = i0 + u->height >= M;

			aux.a_next = last_i ? u->data : ap + (size_t) u->height * u->depth;
			aux.b_next = last_i ? bp + (size_t) w->height * w->depth : bp;
			ukr_fn(M - i0 < u->height ? M - i0 : u->height,
				   N - j0 < w->height ? N - j0 : w->height, K,
				   &alpha, ap, bp, &beta, C + (size_t) i0 * rsc + (size_t) j0 * csc, rsc, csc,
				   &aux, ukr_cntx);
		}
	}
}

void
tfm_gemm_packed(int M, int N, int K, float alpha,
				const float *A, ptrdiff_t rsa, ptrdiff_t csa,
				const float *B, ptrdiff_t rsb, ptrdiff_t csb,
				float beta, float *C, ptrdiff_t rsc, ptrdiff_t csc,
				float *pack)
{
	tfm_panels	a,
				b;

	ensure_ready();
	if (M == 0 || N == 0)
		return;
	if (K == 0 || M < PACK_MIN || N < PACK_MIN)
	{
		/* a query or two (decoding): packing would copy as much as it computes */
		tfm_gemm_strided(M, N, K, alpha, A, rsa, csa, B, rsb, csb, beta, C, rsc, csc);
		return;
	}
	a = tfm_pack_left(pack, M, K, A, rsa, csa);
	b = tfm_pack_right(pack + tfm_panels_floats(M, K), K, N, B, rsb, csb);
	tfm_gemm_panels(M, N, K, alpha, &a, 0, &b, 0, beta, C, rsc, csc);
}
