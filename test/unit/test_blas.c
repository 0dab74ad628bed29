/*
 * test_blas.c — the core's own use of BLIS's micro-kernel: tfm_gemm_packed
 * against a double-precision reference on every shape class it meets (tiles
 * full and cut at the kernel's MR and NR, K of 1 to 130), every stride
 * layout of A, B and C (row- or column-major views with leading dimensions
 * larger than the matrix), beta 0 and 1 and alpha ≠ 1.  C's view sits in a
 * larger buffer whose other floats must come back untouched.
 * tfm_gemm_strided (BLIS's own gemm) is checked the same way on some.
 * Panels kept across products (tfm_pack_left / tfm_pack_right and
 * tfm_gemm_panels): leading rows and columns of the packed operands and
 * windows of their inner dimension (a prefix, a suffix, different starts
 * on the two sides), as attention's causal blocks use them.
 */
#include "check.h"
#include "tfm/blas.h"
#include "tfm/rng.h"

static tfm_rng rng;

static float *
rand_buf(size_t n)
{
	float	   *x = malloc((n + 16) * sizeof(float));

	for (size_t i = 0; i < n + 16; i++)
		x[i] = tfm_rng_uniform(&rng) - 0.5f;
	return x;
}

typedef struct view
{
	ptrdiff_t	rs,
				cs;
	size_t		floats;
} view;

/* an R × C view, row-major (ld = C + 3) or column-major (ld = R + 5) */
static view
make_view(int R, int C, bool col_major)
{
	view		v;

	if (col_major)
		v = (view) {1, R + 5, (size_t) (R + 5) * C};
	else
		v = (view) {C + 3, 1, (size_t) R * (C + 3)};
	return v;
}

static void
check_one(int M, int N, int K, bool acol, bool bcol, bool ccol, float alpha, float beta,
		  int which)
{
	view		va = make_view(M, K, acol),
				vb = make_view(K, N, bcol),
				vc = make_view(M, N, ccol);
	float	   *A = rand_buf(va.floats),
			   *B = rand_buf(vb.floats),
			   *C = rand_buf(vc.floats),
			   *C0 = malloc((vc.floats + 16) * sizeof(float)),
			   *pack = NULL;
	double		worst = 0.0;
	bool		outside_ok = true;

	memcpy(C0, C, (vc.floats + 16) * sizeof(float));
	if (which == 0)
	{
		pack = malloc(tfm_gemm_packed_floats(M, N, K) * sizeof(float));
		tfm_gemm_packed(M, N, K, alpha, A, va.rs, va.cs, B, vb.rs, vb.cs, beta, C, vc.rs, vc.cs,
						pack);
	}
	else
		tfm_gemm_strided(M, N, K, alpha, A, va.rs, va.cs, B, vb.rs, vb.cs, beta, C, vc.rs, vc.cs);

	for (int i = 0; i < M; i++)
		for (int j = 0; j < N; j++)
		{
			double		ref = 0.0;
			size_t		ic = (size_t) i * vc.rs + (size_t) j * vc.cs;

			for (int p = 0; p < K; p++)
				ref += (double) A[i * va.rs + p * va.cs] * B[p * vb.rs + j * vb.cs];
			ref = alpha * ref + (beta != 0.0f ? beta * (double) C0[ic] : 0.0);
			worst = fmax(worst, fabs(C[ic] - ref) / (1e-6 * (K + 1)));
		}
	/* everything outside the view, slack included, is as it was */
	for (size_t x = 0; x < vc.floats + 16; x++)
	{
		size_t		r = ccol ? x % vc.cs : x / vc.rs,
					c = ccol ? x / vc.cs : x % vc.rs;

		if ((r >= (size_t) M || c >= (size_t) N) && C[x] != C0[x])
			outside_ok = false;
	}
	CHECK(worst <= 1.0, "%s %dx%dx%d A%s B%s C%s alpha %g beta %g: error %.3g of the tolerance",
		  which == 0 ? "packed" : "strided", M, N, K, acol ? "col" : "row", bcol ? "col" : "row",
		  ccol ? "col" : "row", alpha, beta, worst);
	CHECK(outside_ok, "%s %dx%dx%d wrote outside C's view", which == 0 ? "packed" : "strided",
		  M, N, K);
	free(A);
	free(B);
	free(C);
	free(C0);
	free(pack);
}

/*
 * A (Mp × Kp) and B (Kp × Np) packed once; C = alpha·A[:M, a0:a0+K]·B[b0:b0+K, :N] + beta·C
 */
static void
check_panels(int Mp, int Np, int Kp, int M, int N, int K, int a0, int b0, bool acol, bool bcol,
			 bool ccol, float alpha, float beta)
{
	view		va = make_view(Mp, Kp, acol),
				vb = make_view(Kp, Np, bcol),
				vc = make_view(M, N, ccol);
	float	   *A = rand_buf(va.floats),
			   *B = rand_buf(vb.floats),
			   *C = rand_buf(vc.floats),
			   *C0 = malloc((vc.floats + 16) * sizeof(float)),
			   *pa = malloc(tfm_panels_floats(Mp, Kp) * sizeof(float)),
			   *pb = malloc(tfm_panels_floats(Np, Kp) * sizeof(float));
	tfm_panels	la,
				rb;
	double		worst = 0.0;
	bool		outside_ok = true;

	memcpy(C0, C, (vc.floats + 16) * sizeof(float));
	la = tfm_pack_left(pa, Mp, Kp, A, va.rs, va.cs);
	rb = tfm_pack_right(pb, Kp, Np, B, vb.rs, vb.cs);
	tfm_gemm_panels(M, N, K, alpha, &la, a0, &rb, b0, beta, C, vc.rs, vc.cs);
	for (int i = 0; i < M; i++)
		for (int j = 0; j < N; j++)
		{
			double		ref = 0.0;
			size_t		ic = (size_t) i * vc.rs + (size_t) j * vc.cs;

			for (int p = 0; p < K; p++)
				ref += (double) A[i * va.rs + (a0 + p) * va.cs] * B[(b0 + p) * vb.rs + j * vb.cs];
			ref = alpha * ref + (beta != 0.0f ? beta * (double) C0[ic] : 0.0);
			worst = fmax(worst, fabs(C[ic] - ref) / (1e-6 * (K + 1)));
		}
	for (size_t x = 0; x < vc.floats + 16; x++)
	{
		size_t		r = ccol ? x % vc.cs : x / vc.rs,
					c = ccol ? x / vc.cs : x % vc.rs;

		if ((r >= (size_t) M || c >= (size_t) N) && C[x] != C0[x])
			outside_ok = false;
	}
	CHECK(worst <= 1.0, "panels %dx%dx%d of %dx%dx%d from k %d/%d A%s B%s C%s: error %.3g of the tolerance",
		  M, N, K, Mp, Np, Kp, a0, b0, acol ? "col" : "row", bcol ? "col" : "row",
		  ccol ? "col" : "row", worst);
	CHECK(outside_ok, "panels %dx%dx%d wrote outside C's view", M, N, K);
	free(A);
	free(B);
	free(C);
	free(C0);
	free(pa);
	free(pb);
}

/* the panel layout at a height other CPUs' kernels use, against its definition */
static void
check_pack_height(int height, int M, int K, bool col_major)
{
	view		v = make_view(M, K, col_major);
	int			panels = (M + height - 1) / height;
	size_t		n = (size_t) panels * height * K;
	float	   *X = rand_buf(v.floats),
			   *dst = malloc((n + 8) * sizeof(float));
	size_t		wrong = 0;

	for (size_t i = 0; i < n + 8; i++)
		dst[i] = NAN;
	tfm_pack_panels(dst, height, X, v.rs, v.cs, M, K);
	for (int i = 0; i < panels; i++)
		for (int p = 0; p < K; p++)
			for (int r = 0; r < height; r++)
			{
				int			row = i * height + r;
				float		want = row < M ? X[row * v.rs + p * v.cs] : 0.0f;

				wrong += dst[(size_t) i * height * K + (size_t) p * height + r] != want;
			}
	CHECK(wrong == 0, "panels of height %d, %dx%d %s: %zu floats wrong", height, M, K,
		  col_major ? "col" : "row", wrong);
	free(X);
	free(dst);
}

/*
 * tfm_gemm with at most TFM_GEMV_ROWS rows (tfm_gemv_rows): B as stored and
 * transposed, leading dimensions larger than the matrices, C's other floats
 * untouched, beta 0 never reading C (NaN there), and the same bits at 1
 * and 2 threads.
 */
static void
check_gemv(int M, int N, int K, bool transb, float alpha, float beta)
{
	int			lda = K + 3,
				ldb = (transb ? K : N) + 5,
				ldc = N + 2;
	size_t		nb = (size_t) (transb ? N : K) * (size_t) ldb,
				nc = (size_t) M * (size_t) ldc;
	float	   *A,
			   *B,
			   *C,
			   *C1,
			   *C2;
	double		worst = 0.0;
	size_t		touched = 0;

	if (M < 1 || N < 1 || K < 1 || nc > ((size_t) 1 << 30) || nb > ((size_t) 1 << 30))
		abort();
	A = rand_buf((size_t) M * lda);
	B = rand_buf(nb);
	C = rand_buf(nc);
	C1 = malloc(nc * sizeof(float));
	C2 = malloc(nc * sizeof(float));
	for (size_t i = 0; i < nc; i++)
		if (beta == 0.0f && (int) (i % ldc) < N)
			C[i] = NAN;
	memcpy(C1, C, nc * sizeof(float));
	memcpy(C2, C, nc * sizeof(float));
	tfm_set_threads(1);
	tfm_gemm(false, transb, M, N, K, alpha, A, lda, B, ldb, beta, C1, ldc);
	tfm_set_threads(2);
	tfm_gemm(false, transb, M, N, K, alpha, A, lda, B, ldb, beta, C2, ldc);
	tfm_set_threads(1);
	for (int m = 0; m < M; m++)
	{
		for (int j = 0; j < N; j++)
		{
			double		s = 0.0,
						mag = 0.0;

			for (int k = 0; k < K; k++)
			{
				double		b = transb ? B[(size_t) j * ldb + k] : B[(size_t) k * ldb + j];

				s += (double) A[m * lda + k] * b;
				mag += fabs((double) A[m * lda + k] * b);
			}
			s *= alpha;
			if (beta != 0.0f)
				s += (double) beta * C[m * ldc + j];
			mag = mag * fabs(alpha) + 1.0;
			if (fabs(C1[m * ldc + j] - s) / mag > worst || isnan(C1[m * ldc + j]))
				worst = isnan(C1[m * ldc + j]) ? INFINITY : fabs(C1[m * ldc + j] - s) / mag;
		}
		for (int j = N; j < ldc; j++)
			touched += C1[m * ldc + j] != C[m * ldc + j];
	}
	CHECK(worst < 1e-5, "gemv %dx%dx%d%s alpha %g beta %g: error %g", M, N, K,
		  transb ? " Bt" : "", alpha, beta, worst);
	CHECK(touched == 0, "gemv %dx%dx%d: %zu floats outside C changed", M, N, K, touched);
	CHECK(memcmp(C1, C2, nc * sizeof(float)) == 0, "gemv %dx%dx%d%s: 1 and 2 threads differ",
		  M, N, K, transb ? " Bt" : "");
	free(A);
	free(B);
	free(C);
	free(C1);
	free(C2);
}

int
main(void)
{
	static const int dims[] = {1, 5, 6, 7, 12, 16, 17, 32, 33, 70};
	static const int ks[] = {1, 3, 16, 32, 37, 130};
	const int	nd = (int) (sizeof(dims) / sizeof(dims[0])),
				nk = (int) (sizeof(ks) / sizeof(ks[0]));
	char		err[256];

	if (tfm_blas_init(getenv("TFM_BLIS_ARCH"), err, sizeof(err)) != 0)
	{
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	tfm_rng_seed(&rng, 99);
	for (int mi = 0; mi < nd; mi++)
		for (int ni = 0; ni < nd; ni++)
			for (int ki = 0; ki < nk; ki++)
				for (int layout = 0; layout < 8; layout++)
				{
					int			M = dims[mi],
								N = dims[ni],
								K = ks[ki];

					if (quick_mode() && (mi + ni + ki + layout) % 7 != 0)
						continue;
					check_one(M, N, K, layout & 1, layout & 2, layout & 4,
							  layout % 3 == 0 ? 0.7f : 1.0f, (layout + ki) % 2 ? 1.0f : 0.0f, 0);
					if (mi == ni && ki % 2 == 0 && layout % 4 == 0)
						check_one(M, N, K, layout & 1, layout & 2, layout & 4, 1.0f, 0.0f, 1);
				}
	for (int layout = 0; layout < 8; layout++)
	{
		static const int shapes[][2] = {{5, 7}, {16, 16}, {17, 40}, {33, 6}, {70, 33}};

		for (int si = 0; si < 5; si++)
		{
			int			Mp = shapes[si][0],
						Np = shapes[si][1];
			bool		ac = layout & 1,
						bc = layout & 2,
						cc = layout & 4;
			float		beta = layout % 2 ? 1.0f : 0.0f;

			/* whole operands; leading rows/columns; a prefix of K (keys seen) */
			check_panels(Mp, Np, 37, Mp, Np, 37, 0, 0, ac, bc, cc, 1.0f, beta);
			check_panels(Mp, Np, 64, Mp > 4 ? Mp - 3 : Mp, Np > 4 ? Np - 4 : Np, 64, 0, 0,
						 ac, bc, cc, 0.7f, beta);
			check_panels(Mp, Np, 64, Mp, Np, 33, 0, 0, ac, bc, cc, 1.0f, 1.0f - beta);
			/* suffixes and windows at different starts */
			check_panels(Mp, Np, 64, Mp, Np, 32, 32, 32, ac, bc, cc, 1.0f, beta);
			check_panels(Mp, Np, 64, Mp, Np, 20, 0, 44, ac, bc, cc, 0.7f, beta);
			check_panels(Mp, Np, 64, Mp, Np, 7, 50, 3, ac, bc, cc, 1.0f, 1.0f - beta);
		}
	}
	for (int hi = 0; hi < 8; hi++)
	{
		static const int heights[] = {4, 6, 8, 12, 14, 16, 24, 32};
		static const int kk[] = {1, 7, 8, 9, 16, 37};
		int			h = heights[hi];
		int			ms[] = {1, h - 1, h, 2 * h + 3, 37};

		for (int mi = 0; mi < 5; mi++)
			for (int ki = 0; ki < 6; ki++)
				for (int col = 0; col < 2; col++)
					if (ms[mi] > 0)
						check_pack_height(h, ms[mi], kk[ki], col);
	}
	for (int M = 1; M <= TFM_GEMV_ROWS; M++)
	{
		static const int gn[] = {1, 15, 16, 17, 511, 512, 513, 1100, 9000};
		static const int gk[] = {1, 3, 15, 16, 17, 100};

		for (int ni = 0; ni < 9; ni++)
			for (int ki = 0; ki < 6; ki++)
				for (int variant = 0; variant < 4; variant++)
					check_gemv(M, gn[ni], gk[ki], variant & 1, variant & 2 ? 0.7f : 1.0f,
							   (variant + ki) % 2 ? 1.0f : 0.0f);
	}
	printf("BLIS kernels: %s (%s)\n", tfm_blas_arch(), tfm_blas_arch_reason());
	return check_summary("test_blas");
}
