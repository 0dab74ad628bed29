/*
 * test_varlen.c — a classifier's varlen passes (tfm_batch.lens: many texts'
 * rows in one matrix, attention per text) against the same texts passed
 * one at a time: every text's logits and pooled vector bit for bit the
 * same, whatever the batch around it (its size, order, neighbours; 1 to 150
 * rows each, up to ~1,500 rows in all), at fp32, bf16, int8 and int4, on
 * the fast paths and on the plain-C fallback, at 1 and 2 threads, and in
 * passes run side by side (tfm_model_forward_lanes).  And
 * the results are the padded pass's within rounding (the same model), so
 * the varlen pass computes the same function; bad lengths are refused.
 * TFM_SGEMM_FORCE=portable (make unittest) runs it on the plain-C kernel.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "check.h"
#include "tfm/blas.h"
#include "tfm/lowp.h"
#include "tfm/model.h"
#include "tfm/precision.h"
#include "tfm/rng.h"
#include "tfm/status_codes.h"

#define TEXTS 20
#define MAXLEN 150

static int32_t ids[TEXTS][MAXLEN];
static int	lens[TEXTS];

/* one varlen pass over texts pick[0..n): logits and pooled of each to lo/po (n rows) */
static int
pass(tfm_model *m, const int *pick, int n, float *lo, float *po)
{
	int32_t    *in = malloc(sizeof(int32_t) * n * MAXLEN);
	int		   *ln = malloc(sizeof(int) * n);
	tfm_batch	b;
	size_t		r = 0;
	int			T = 1,
				rc;
	const int	C = m->cfg.n_classes,
				d = m->cfg.d_model;

	for (int i = 0; i < n; i++)
	{
		ln[i] = lens[pick[i]];
		memcpy(in + r, ids[pick[i]], sizeof(int32_t) * ln[i]);
		r += ln[i];
		T = ln[i] > T ? ln[i] : T;
	}
	memset(&b, 0, sizeof(b));
	b.B = n;
	b.T = T;
	b.input = in;
	b.lens = ln;
	rc = tfm_model_forward(m, &b, false, 0);
	if (rc == 0)
	{
		memcpy(lo, m->logits, sizeof(float) * n * C);
		memcpy(po, m->pooled, sizeof(float) * n * d);
	}
	free(in);
	free(ln);
	return rc;
}

/*
 * The texts in passes of 1 to 4 (7 passes) run side by side
 * (tfm_model_forward_lanes, a pass a thread at 2 threads): the number of
 * texts whose logits or pooled vector differ from their passes alone.  A
 * stop flag set stops them (TFM_ECANCELED), and cleared they run again.
 */
static int
lanes_differ(tfm_model *m, const char *what, const float *alone_l, const float *alone_p)
{
	const int	C = m->cfg.n_classes,
				d = m->cfg.d_model,
				sizes[] = {4, 1, 3, 2, 4, 3, 3};
	tfm_batch	b[7];
	int32_t    *in = malloc(sizeof(int32_t) * TEXTS * MAXLEN);
	float	   *lo[7],
			   *po[7];
	volatile int stop = 1;
	int			bad = 0;

	for (int p = 0, t = 0, r = 0; p < 7; t += sizes[p++])
	{
		memset(&b[p], 0, sizeof(b[p]));
		b[p].B = sizes[p];
		b[p].input = in + r;
		b[p].lens = lens + t;
		for (int i = t; i < t + sizes[p]; i++)
		{
			memcpy(in + r, ids[i], sizeof(int32_t) * lens[i]);
			r += lens[i];
			b[p].T = lens[i] > b[p].T ? lens[i] : b[p].T;
		}
		lo[p] = malloc(sizeof(float) * sizes[p] * C);
		po[p] = malloc(sizeof(float) * sizes[p] * d);
	}
	{
		int			st[7];

		CHECK(tfm_model_forward_lanes(m, b, 7, lo, po, &stop, st) == TFM_ECANCELED &&
			  st[0] == TFM_ECANCELED && st[6] == TFM_ECANCELED, "%s: passes side by side stopped", what);
		stop = 0;
		CHECK(tfm_model_forward_lanes(m, b, 7, lo, po, &stop, st) == 0 && st[0] == 0 && st[6] == 0,
			  "%s: passes side by side", what);
	}
	for (int p = 0, t = 0; p < 7; t += sizes[p++])
	{
		for (int i = 0; i < sizes[p]; i++)
			if (memcmp(lo[p] + (size_t) i * C, alone_l + (size_t) (t + i) * C, sizeof(float) * C) ||
				memcmp(po[p] + (size_t) i * d, alone_p + (size_t) (t + i) * d, sizeof(float) * d))
				bad++;
		free(lo[p]);
		free(po[p]);
	}
	free(in);
	return bad;
}

/*
 * The threads the core's parallel regions run on never take the process's
 * signals (a PostgreSQL backend's handlers must not run on them): after
 * teams of every size a product or a group of passes asks for at 4
 * threads (2 panels, a few rows, 2 passes side by side), then a whole
 * team again, every thread but the main one blocks every signal.  libgomp
 * ends a pool's threads past a smaller team and starts the next whole
 * team's afresh, with the caller's mask, unless no team is smaller.
 */
static void
test_signal_masks(tfm_model *m)
{
	DIR		   *d;
	struct dirent *e;
	int			threads = 0,
				open_ = 0;
	float	   *A = calloc(64 * 512, sizeof(float)),
			   *B = calloc(512 * 512, sizeof(float)),
			   *C = calloc(64 * 512, sizeof(float));
	char		self[64];
	sigset_t	none,
				old;

	/* the caller's mask unblocked, as a backend's */
	sigemptyset(&none);
	pthread_sigmask(SIG_SETMASK, &none, &old);
	tfm_set_threads(4);
	tfm_gemm_rows(64, 64, 512, A, 512, B, 512, 0.0f, C, 512);	/* 2 panels */
	tfm_gemm(false, false, 3, 512, 512, 1.0f, A, 512, B, 512, 0.0f, C, 512);	/* a few rows */
	{
		tfm_batch	b[2];
		float		po[2][512];
		float	   *pp[2] = {po[0], po[1]};

		memset(b, 0, sizeof(b));
		for (int i = 0; i < 2; i++)
		{
			b[i].B = 1;
			b[i].T = lens[i];
			b[i].input = ids[i];
			b[i].lens = &lens[i];
		}
		CHECK(tfm_model_forward_lanes(m, b, 2, NULL, pp, NULL, NULL) == 0, "two passes side by side");
	}
	tfm_gemm_rows(64, 512, 512, A, 512, B, 512, 0.0f, C, 512);	/* the whole team */
	snprintf(self, sizeof(self), "%ld", (long) syscall(SYS_gettid));
	d = opendir("/proc/self/task");
	while (d && (e = readdir(d)))
	{
		char		path[300],
					line[256];
		FILE	   *f;

		if (e->d_name[0] == '.' || strcmp(e->d_name, self) == 0)
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/status", e->d_name);
		if (!(f = fopen(path, "r")))
			continue;
		while (fgets(line, sizeof(line), f))
			if (strncmp(line, "SigBlk:", 7) == 0)
			{
				unsigned long long blk = strtoull(line + 7, NULL, 16);
				const int	sigs[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGALRM, SIGUSR1, SIGUSR2,
				SIGCHLD, SIGPIPE, SIGURG};

				threads++;
				/* the signals a backend handles (bit s - 1 of the mask): all blocked */
				for (int i = 0; i < (int) (sizeof(sigs) / sizeof(sigs[0])); i++)
					if (!(blk & (1ULL << (sigs[i] - 1))))
					{
						open_++;
						break;
					}
			}
		fclose(f);
	}
	if (d)
		closedir(d);
	CHECK(threads >= 3 && open_ == 0, "the pool's %d threads block every signal (%d do not)",
		  threads, open_);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	free(A);
	free(B);
	free(C);
}

static void
test_model(const char *what, tfm_config *c, tfm_precision prec, bool fallback)
{
	tfm_model  *m;
	const int	C = c->n_classes,
				d = c->d_model;
	float	   *alone_l = malloc(sizeof(float) * TEXTS * C),
			   *alone_p = malloc(sizeof(float) * TEXTS * d),
			   *lo = malloc(sizeof(float) * TEXTS * C),
			   *po = malloc(sizeof(float) * TEXTS * d);
	int			pick[TEXTS];
	tfm_rng		rng;
	int			bad = 0;

	tfm_lowp_force_fallback(fallback);
	m = tfm_model_create(c);
	tfm_model_init(m, 3);
	/* weights large enough that the products' roundings show */
	for (size_t i = 0; i < m->n_floats; i++)
		m->params[i] *= 1.5f;
	CHECK(tfm_model_set_precision(m, prec) == 0, "%s: packed", what);
	for (int i = 0; i < TEXTS; i++)
	{
		pick[i] = i;
		CHECK(pass(m, &pick[i], 1, alone_l + (size_t) i * C, alone_p + (size_t) i * d) == 0,
			  "%s: text %d alone", what, i);
	}
	/* fp32: again on the matrices' panels packed once (tfm_model_pack_rows) */
	for (int panels = 0; panels <= (prec == TFM_PREC_FP32); panels++)
	{
	if (panels)
	{
		CHECK(tfm_model_pack_rows(m, 1) == TFM_ELIMIT && tfm_model_rows_bytes(m) == 0,
			  "%s: panels over the bound not packed", what);
		CHECK(tfm_model_pack_rows(m, 0) == 0 && tfm_model_rows_bytes(m) > 0, "%s: panels packed", what);
		for (int i = 0; i < TEXTS; i++)
		{
			pick[0] = i;
			CHECK(pass(m, pick, 1, lo, po) == 0, "%s: text %d alone on panels", what, i);
			if (memcmp(lo, alone_l + (size_t) i * C, sizeof(float) * C) ||
				memcmp(po, alone_p + (size_t) i * d, sizeof(float) * d))
				bad++;
		}
	}
	tfm_rng_seed(&rng, 99);
	for (int trial = 0; trial < 8; trial++)
	{
		int			n = trial == 0 ? TEXTS : 1 + (int) (tfm_rng_next(&rng) % TEXTS);

		/* a random selection in a random order (trial 0: all, in order) */
		for (int i = 0; i < TEXTS; i++)
			pick[i] = i;
		if (trial > 0)
			for (int i = TEXTS - 1; i > 0; i--)
			{
				int			j = (int) (tfm_rng_next(&rng) % (i + 1)),
							t = pick[i];

				pick[i] = pick[j];
				pick[j] = t;
			}
		CHECK(pass(m, pick, n, lo, po) == 0, "%s: batch %d", what, trial);
		for (int i = 0; i < n; i++)
			if (memcmp(lo + (size_t) i * C, alone_l + (size_t) pick[i] * C, sizeof(float) * C) ||
				memcmp(po + (size_t) i * d, alone_p + (size_t) pick[i] * d, sizeof(float) * d))
				bad++;
	}
	CHECK(bad == 0, "%s%s: %d texts in batches differ from their passes alone", what,
		  panels ? " (panels)" : "", bad);
	bad = lanes_differ(m, what, alone_l, alone_p);
	CHECK(bad == 0, "%s%s: %d texts in passes side by side differ from their passes alone",
		  what, panels ? " (panels)" : "", bad);
	}
	if (prec == TFM_PREC_FP32)
	{
		CHECK(tfm_model_set_precision(m, TFM_PREC_BF16) == 0 && tfm_model_rows_bytes(m) == 0,
			  "%s: a packed precision drops the panels", what);
		CHECK(tfm_model_set_precision(m, TFM_PREC_FP32) == 0, "%s: back to fp32", what);
	}

	/* the padded pass of the same texts (fp32): the same function, within rounding */
	if (prec == TFM_PREC_FP32)
	{
		int32_t    *in = malloc(sizeof(int32_t) * 8 * MAXLEN);
		tfm_batch	b;
		double		worst = 0.0;

		for (int i = 0; i < 8; i++)
			for (int t = 0; t < MAXLEN; t++)
				in[i * MAXLEN + t] = t < lens[i] ? ids[i][t] : c->pad_id;
		memset(&b, 0, sizeof(b));
		b.B = 8;
		b.T = MAXLEN;
		b.input = in;
		CHECK(tfm_model_forward(m, &b, false, 0) == 0, "%s: padded pass", what);
		for (int i = 0; i < 8 * C; i++)
			worst = fmax(worst, fabs(m->logits[i] - alone_l[i]));
		if (c->pooling == TFM_POOL_MEAN)	/* a CLS model's padded keys are not masked the same */
			CHECK(worst < 1e-4, "%s: padded pass agrees (%.2g)", what, worst);
		free(in);
	}
	/* refused: a length of 0 or past T, a training pass */
	{
		tfm_batch	b;
		int			l2[2] = {3, 0};

		memset(&b, 0, sizeof(b));
		b.B = 2;
		b.T = 3;
		b.input = ids[0];
		b.lens = l2;
		CHECK(tfm_model_forward(m, &b, false, 0) == -1, "%s: empty text refused", what);
		l2[1] = 4;
		CHECK(tfm_model_forward(m, &b, false, 0) == -1, "%s: text past T refused", what);
		l2[1] = 2;
		CHECK(tfm_model_forward(m, &b, true, 0) == -1, "%s: training refused", what);
		CHECK(tfm_model_forward(m, &b, false, 0) == 0, "%s: then accepted", what);
	}
	tfm_model_free(m);
	tfm_lowp_force_fallback(false);
	free(alone_l);
	free(alone_p);
	free(lo);
	free(po);
}

/*
 * tfm_gemm_rows itself: rows [i0, i0 + m) of a product alone give the bits
 * they give in the whole (every m from 1, a few offsets), with beta 0 and
 * 1, at shapes with edge panels (and, at 136 and 200 columns, B packed in
 * groups of 8 and of 7 panels, the last group cut and its last panel
 * partial: K 2100 leaves room for 7 in the buffer); the plain-C kernel
 * the same bits as the AVX2 one; and every element within 1e-5 of a
 * double sum (relative to Σ|terms|).
 */
static void
test_gemm_rows(void)
{
	const int	shapes[][3] = {{150, 136, 408}, {40, 37, 640}, {9, 16, 5}, {130, 3, 136},
	{20, 200, 2100}};
	tfm_rng		rng;

	tfm_rng_seed(&rng, 5);
	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++)
	{
		int			M = shapes[s][0],
					N = shapes[s][1],
					K = shapes[s][2],
					bad = 0,
					far = 0;
		float	   *A = malloc(sizeof(float) * M * K),
				   *B = malloc(sizeof(float) * K * N),
				   *bias = malloc(sizeof(float) * N),
				   *full = malloc(sizeof(float) * M * N),
				   *part = malloc(sizeof(float) * M * N),
				   *port = malloc(sizeof(float) * M * N);

		for (int i = 0; i < M * K; i++)
			A[i] = tfm_rng_normal(&rng);
		for (int i = 0; i < K * N; i++)
			B[i] = tfm_rng_normal(&rng);
		for (int j = 0; j < N; j++)
			bias[j] = tfm_rng_normal(&rng);
		for (int beta = 0; beta <= 1; beta++)
		{
			for (int i = 0; i < M; i++)
				memcpy(full + (size_t) i * N, bias, sizeof(float) * N);
			tfm_gemm_rows(M, N, K, A, K, B, N, (float) beta, full, N);
			for (int m = 1; m <= M; m += (m < 14 ? 1 : 17))
				for (int i0 = 0; i0 + m <= M; i0 += (M - m) / 3 + 1)
				{
					for (int i = 0; i < m; i++)
						memcpy(part + (size_t) i * N, bias, sizeof(float) * N);
					tfm_gemm_rows(m, N, K, A + (size_t) i0 * K, K, B, N, (float) beta, part, N);
					if (memcmp(part, full + (size_t) i0 * N, sizeof(float) * m * N) != 0)
						bad++;
				}
			/* B packed once: every row block the same bits again */
			{
				float	   *Bp = aligned_alloc(64, tfm_gemm_rows_pack_bytes(K, N) + 64);

				tfm_gemm_rows_pack(Bp, B, N, 1, K, N);
				for (int m = 1; m <= M; m += (m < 14 ? 1 : 17))
					for (int i0 = 0; i0 + m <= M; i0 += (M - m) / 3 + 1)
					{
						for (int i = 0; i < m; i++)
							memcpy(part + (size_t) i * N, bias, sizeof(float) * N);
						tfm_gemm_rows_packed(m, N, K, A + (size_t) i0 * K, K, Bp, NULL, (float) beta,
											 part, N);
						if (memcmp(part, full + (size_t) i0 * N, sizeof(float) * m * N) != 0)
							bad++;
						/* beta 1 over the bias = the bias given, C not read */
						if (beta)
						{
							for (int i = 0; i < m * N; i++)
								part[i] = NAN;
							tfm_gemm_rows_packed(m, N, K, A + (size_t) i0 * K, K, Bp, bias, 0.0f,
												 part, N);
							if (memcmp(part, full + (size_t) i0 * N, sizeof(float) * m * N) != 0)
								bad++;
						}
					}
				/* and packed from Bᵀ (N × K): the same panels */
				{
					float	   *Bt = malloc(sizeof(float) * K * N),
							   *Bq = aligned_alloc(64, tfm_gemm_rows_pack_bytes(K, N) + 64);

					for (int k = 0; k < K; k++)
						for (int j = 0; j < N; j++)
							Bt[(size_t) j * K + k] = B[(size_t) k * N + j];
					tfm_gemm_rows_pack(Bq, Bt, 1, K, K, N);
					CHECK(memcmp(Bp, Bq, tfm_gemm_rows_pack_bytes(K, N)) == 0,
						  "gemm_rows %dx%dx%d: panels of Bᵀ", M, N, K);
					free(Bt);
					free(Bq);
				}
				free(Bp);
			}
			tfm_gemm_rows_force_portable(true);
			for (int i = 0; i < M; i++)
				memcpy(port + (size_t) i * N, bias, sizeof(float) * N);
			tfm_gemm_rows(M, N, K, A, K, B, N, (float) beta, port, N);
			CHECK(memcmp(port, full, sizeof(float) * M * N) == 0,
				  "gemm_rows %dx%dx%d beta %d: the plain-C kernel's bits", M, N, K, beta);
			{
				float	   *Bp = aligned_alloc(64, tfm_gemm_rows_pack_bytes(K, N) + 64);

				tfm_gemm_rows_pack(Bp, B, N, 1, K, N);
				for (int i = 0; i < M; i++)
					memcpy(port + (size_t) i * N, bias, sizeof(float) * N);
				tfm_gemm_rows_packed(M, N, K, A, K, Bp, NULL, (float) beta, port, N);
				CHECK(memcmp(port, full, sizeof(float) * M * N) == 0,
					  "gemm_rows %dx%dx%d beta %d: the plain-C kernel's bits on panels", M, N, K,
					  beta);
				if (beta)
					tfm_gemm_rows_packed(M, N, K, A, K, Bp, bias, 0.0f, port, N);
				CHECK(memcmp(port, full, sizeof(float) * M * N) == 0,
					  "gemm_rows %dx%dx%d beta %d: the plain-C kernel's bits on panels", M, N, K,
					  beta);
				free(Bp);
			}
			tfm_gemm_rows_force_portable(false);
			for (int i = 0; i < M; i++)
				for (int j = 0; j < N; j++)
				{
					double		want = beta ? bias[j] : 0.0,
								mag = fabs(want);

					for (int k = 0; k < K; k++)
					{
						want += (double) A[(size_t) i * K + k] * B[(size_t) k * N + j];
						mag += fabs((double) A[(size_t) i * K + k] * B[(size_t) k * N + j]);
					}
					if (fabs(full[(size_t) i * N + j] - want) > 1e-5 * mag + 1e-6)
						far++;
				}
		}
		CHECK(bad == 0, "gemm_rows %dx%dx%d: %d row blocks differ from the whole", M, N, K, bad);
		CHECK(far == 0, "gemm_rows %dx%dx%d: %d elements off the double sum", M, N, K, far);
		free(A);
		free(B);
		free(bias);
		free(full);
		free(part);
		free(port);
	}
}

/* a classifier of the test's texts: vocabulary 200, 4 heads, pad id 0 */
static void
classifier_config(tfm_config *c, int d, int layers, int d_ff, int classes)
{
	tfm_config_defaults(c, TFM_TASK_CLASSIFY);
	c->vocab = 200;
	c->d_model = d;
	c->heads = 4;
	c->enc_layers = layers;
	c->d_ff = d_ff;
	c->max_len = MAXLEN + 2;
	c->n_classes = classes;
	c->pad_id = 0;
}

int
main(void)
{
	char		err[256];
	tfm_rng		rng;
	tfm_config	c;

	if (tfm_blas_init(getenv("TFM_BLIS_ARCH"), err, sizeof(err)) != 0)
	{
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	for (int threads = 1; threads <= 2; threads++)
	{
		tfm_set_threads(threads);
		test_gemm_rows();
	}
	/* lengths 1 to 150: a few tokens (the matrix-vector paths), and long ones */
	tfm_rng_seed(&rng, 7);
	for (int i = 0; i < TEXTS; i++)
	{
		lens[i] = i < 6 ? i + 1 : 1 + (int) (tfm_rng_next(&rng) % MAXLEN);
		for (int t = 0; t < lens[i]; t++)
			ids[i][t] = 2 + (int) (tfm_rng_next(&rng) % 198);
	}
	for (int v = 0; v < 2; v++)
	{
		/* K past BLIS's KC (d_ff 640), N not a multiple of the panels (d 136, 5 classes) */
		classifier_config(&c, 136, 2, 640, 5);
		if (v == 1)
		{
			c.norm = TFM_NORM_PRE;
			c.pooling = TFM_POOL_CLS;
			c.activation = TFM_ACT_GELU;
			c.cls_pre = TFM_CLS_PRE_TANH;
		}
		for (int threads = 1; threads <= 2; threads++)
		{
			tfm_set_threads(threads);
			for (int p = TFM_PREC_FP32; p <= TFM_PREC_INT4; p++)
				for (int fb = 0; fb <= 1; fb++)
				{
					char		what[96];

					if (p == TFM_PREC_FP32 && fb)
						continue;
					snprintf(what, sizeof(what), "%s %s%s, %d thread%s", v ? "pre-LN cls" : "post-LN mean",
							 tfm_precision_name((tfm_precision) p), fb ? " (fallback)" : "",
							 threads, threads > 1 ? "s" : "");
					test_model(what, &c, (tfm_precision) p, fb);
				}
		}
	}
	{
		tfm_model  *m;

		/* a fresh process's pool: its first team started by tfm_set_threads(4) */
		classifier_config(&c, 64, 1, 128, 3);
		m = tfm_model_create(&c);
		tfm_model_init(m, 5);
		test_signal_masks(m);
		tfm_model_free(m);
	}
	printf("row-exact products: %s kernel\n", tfm_gemm_rows_kernel());
	return check_summary("test_varlen");
}
