/*
 * bench_core.c — speed of tfm's numeric core on the reference encoder
 * classifier (TRAINING-NOTES: vocab 8000, d 128, 8 heads, 4 layers, d_ff 512,
 * length 256, batch 32, post-LN, learned positions, ReLU, mean pooling,
 * 2 classes, dropout 0.1), through the public API only.
 *
 *   bench_core [--threads N] [--seconds S] [--min-iters K] [--warmup W]
 *              [--model classify|lm|seq2seq] [--batch B] [--what LIST]
 *              [--precision fp32|bf16|int8|int4] [--train-precision fp32|bf16]
 *              [--infer-tokens N] [--layers L] [--checkpoint-activations]
 *
 * --batch and --layers (after --model) change the batch of sequences and
 * the layers of each stack; --checkpoint-activations trains with activation
 * checkpointing (m->checkpoint_activations) and the INFO line
 * workspace_bytes says what the training workspace takes either way.  Inference runs
 * the batch as tfm_classify runs a table (src/pg/classify.c): in groups of
 * as many sequences as fit in --infer-tokens tokens (default 512, its
 * TFM_INFER_TOKENS), each group one forward pass, so that a layer's
 * activations stay in the core's caches; --infer-tokens 0 passes the whole
 * batch at once.
 *
 * --model lm is bench/lm's small char model (vocab 89, d 128, 4 heads,
 * 4 pre-LN layers, batch 64 × 128); seq2seq is bench/seq2seq's eng_fra
 * model (3+3 post-LN layers, d 256, 8 heads, d_ff 1024, vocab 8000) on
 * 512 pairs of 16 + 16 tokens.  Random ids; ops needs the classifier.
 *
 * Each measurement runs W untimed iterations (default 2), then times
 * iterations until S seconds (default 8) have passed and at least K
 * (default 5) were timed; it reports the median (and mean, best).
 *
 * LIST is a comma-separated subset of
 *   peak   a large sgemm through tfm_gemm (the measured peak of this machine)
 *   train  tfm_trainer_step: forward + loss + backward + clipping + AdamW
 *   infer  tfm_model_forward(training = false), in groups (--infer-tokens)
 *   ops    every layer operation of one training step, timed on its own at
 *          the model's shapes (a profile built from the public layer API)
 * (default: peak,train,infer).
 *
 * Besides readable text it prints machine-readable lines:
 *   RESULT impl=tfm kind=<train|infer|peak> threads=N tok_s=... gflops=...
 *   INFO key=value ...
 *   OP phase=<fwd|bwd|step> cat=<category> name=... ms=... gflops=...
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <omp.h>

#include "tfm/blas.h"
#include "tfm/layers.h"
#include "tfm/model.h"
#include "tfm/precision.h"
#include "tfm/optim.h"
#include "tfm/rng.h"
#include "tfm/train.h"

#include "bench_core.h"

/* ---- the reference model ------------------------------------------------- */

/* the classifier by default; --model lm / seq2seq pick the other shapes */
static bool
pick_model(const char *name)
{
	if (strcmp(name, "classify") == 0)
		return true;
	if (strcmp(name, "lm") == 0)
	{
		TASK = TFM_TASK_LM;
		VOCAB = 89, D_MODEL = 128, HEADS = 4, LAYERS = 4, D_FF = 512, LEN = 128, BATCH = 64;
		return true;
	}
	if (strcmp(name, "seq2seq") == 0)
	{
		/* 8,192 tokens a batch as 512 pairs of 16 + 16 tokens */
		TASK = TFM_TASK_SEQ2SEQ;
		VOCAB = 8000, D_MODEL = 256, HEADS = 8, LAYERS = 3, D_FF = 1024, LEN = 16, BATCH = 512;
		return true;
	}
	return false;
}

/*
 * FLOPs per token as TRAINING-NOTES counts them: forward = 2 × non-embedding
 * weights (every matrix but tok_emb / pos_emb, the classifier head included)
 * + 4·n·d per attention layer; training = 3 × forward.
 */
static double
forward_flops_per_token(const tfm_model *m, size_t *weights)
{
	size_t		w = 0;

	for (int i = 0; i < m->n_tensors; i++)
	{
		const tfm_param_info *p = &m->info[i];

		if (p->ndim == 2 && strcmp(p->name, "tok_emb") != 0 &&
			strcmp(p->name, "pos_emb") != 0)
			w += p->size;
	}
	if (weights)
		*weights = w;
	return 2.0 * (double) w + 4.0 * LEN * D_MODEL * LAYERS;
}

/* random token ids, no pads (ids 6 .. VOCAB-1 skip tfm's special tokens) */
static double
measured_ghz(int threads)
{
	double		sum = 0.0;

#pragma omp parallel num_threads(threads) reduction(+:sum)
	{
		const unsigned long iters = 40000000UL;
		double		best = 0.0;

		for (int rep = 0; rep < 3; rep++)
		{
			double		t0 = now(),
						ghz;

			/*
			 * register-register adds: Intel's Golden Cove (Sapphire Rapids)
			 * folds chains of add-immediate in its renamer, which would
			 * read as three times the clock
			 */
			__asm__ volatile("mov %0, %%rcx\n\t"
							 "xor %%eax, %%eax\n\t"
							 "mov $1, %%edx\n\t"
							 "1:\n\t"
							 "add %%rdx, %%rax\n\tadd %%rax, %%rdx\n\t"
							 "add %%rdx, %%rax\n\tadd %%rax, %%rdx\n\t"
							 "add %%rdx, %%rax\n\tadd %%rax, %%rdx\n\t"
							 "add %%rdx, %%rax\n\tadd %%rax, %%rdx\n\t"
							 "dec %%rcx\n\t"
							 "jnz 1b\n\t"
							 :: "r"(iters) : "rax", "rcx", "rdx", "cc");
			ghz = 8.0 * iters / (now() - t0) / 1e9;
			if (ghz > best)
				best = ghz;
		}
		sum += best;
	}
	return sum / threads;
}

/*
 * Flops per cycle and core of the vector units, per microarchitecture: two
 * FMA pipes × lanes × 2 flops, except where the pipes are narrower than the
 * instructions.  AMD Zen 4 (family 25 with AVX-512) executes a 512-bit
 * operation as two 256-bit halves: 32 fp32 flops per cycle, as AVX2; Zen 5
 * (family 26) and Intel's AVX-512 server cores have full 512-bit pipes: 64.
 * bf16 dot products (vdpbf16ps) do two products per fp32 lane, but how
 * many issue per cycle differs: AMD runs them on both FMA pipes (twice the
 * fp32 figure: Zen 4 64, Zen 5 128), Intel's Sapphire Rapids one every two
 * cycles (16 lanes × 2 products × 2 / 2 = 32: half its fp32 rate, measured:
 * 120 against 240 GFLOP/s on one core).  Intel's AMX tiles: one
 * TDPBF16PS (16 × 16 × 32 products) per 16 cycles, 1,024 flops per cycle;
 * tfm runs its large bf16 products there where the CPU has them.
 */
static int
bf16_flops_per_cycle(bool amd, int fp32, int bf16, int amx, const char **why)
{
	if (amx)
	{
		*why = "AMX-BF16 tiles: 16x16x32 products per 16 cycles";
		return 1024;
	}
	if (!bf16)
	{
		*why = "no bf16 instructions";
		return 0;
	}
	*why = amd ? "vdpbf16ps on both FMA pipes: twice fp32" : "vdpbf16ps every other cycle: 16 lanes x 2 products x 2 / 2";
	return amd ? 2 * fp32 : 32;
}

static int
fp32_flops_per_cycle(bool amd, int family, int avx2, int fma, int avx512, const char **why)
{
	if (avx512 && amd && family == 25)
	{
		*why = "AMD Zen 4: AVX-512 on 256-bit pipes, 2 FMA x 8 floats x 2";
		return 32;
	}
	if (avx512)
	{
		*why = amd ? "AMD Zen 5: 2 FMA x 16 floats x 2" : "AVX-512: 2 FMA x 16 floats x 2";
		return 64;
	}
	if (avx2 && fma)
	{
		*why = "AVX2+FMA: 2 FMA x 8 floats x 2";
		return 32;
	}
	*why = "SSE: 2 x 4 floats x 2";
	return 16;
}

static void
theoretical_peak(int threads, bool measure_clock)
{
	FILE	   *f = fopen("/proc/cpuinfo", "r");
	char		line[8192],
				model[256] = "unknown";
	double		mhz = 0.0;
	int			avx2 = 0,
				fma = 0,
				avx512 = 0,
				bf16 = 0,
				amx = 0,
				family = 0;
	bool		amd = false;

	if (f)
	{
		while (fgets(line, sizeof(line), f))
		{
			if (strncmp(line, "model name", 10) == 0 && model[0] == 'u')
			{
				char	   *p = strchr(line, ':');

				if (p)
				{
					snprintf(model, sizeof(model), "%s", p + 2);
					model[strcspn(model, "\n")] = '\0';
				}
			}
			else if (strncmp(line, "vendor_id", 9) == 0)
				amd = strstr(line, "AuthenticAMD") != NULL;
			else if (strncmp(line, "cpu family", 10) == 0 && family == 0)
			{
				char	   *p = strchr(line, ':');

				if (p)
					family = atoi(p + 1);
			}
			else if (strncmp(line, "cpu MHz", 7) == 0 && mhz == 0.0)
			{
				char	   *p = strchr(line, ':');

				if (p)
					mhz = atof(p + 1);
			}
			else if (strncmp(line, "flags", 5) == 0 && !avx2)
			{
				avx2 = strstr(line, " avx2") != NULL;
				fma = strstr(line, " fma") != NULL;
				avx512 = strstr(line, " avx512f") != NULL;
				bf16 = strstr(line, " avx512_bf16") != NULL;
				amx = strstr(line, " amx_bf16") != NULL;
			}
		}
		fclose(f);
	}
	{
		const char *why,
				   *bf16_why;
		int			per_cycle = fp32_flops_per_cycle(amd, family, avx2, fma, avx512, &why);
		int			bf16_cycle = bf16_flops_per_cycle(amd, per_cycle, bf16, amx, &bf16_why);
		double		ghz = mhz / 1000.0;
		double		core = per_cycle * ghz;
		double		mghz = measure_clock ? measured_ghz(threads) : 0.0;

		for (char *p = model; *p; p++)
			if (*p == ' ')
				*p = '_';
		printf("INFO cpu_model=%s cpu_mhz=%.0f family=%d amd=%d avx2=%d fma=%d avx512f=%d avx512_bf16=%d amx_bf16=%d flops_per_cycle_core=%d bf16_flops_per_cycle_core=%d\n",
			   model, mhz, family, amd, avx2, fma, avx512, bf16, amx, per_cycle, bf16_cycle);
		if (measure_clock)
			printf("RESULT impl=tfm kind=theory threads=%d gflops=%.1f per_core=%.1f cpuinfo_ghz=%.3f measured_ghz=%.3f gflops_measured_clock=%.1f bf16_gflops_measured_clock=%.1f why=\"%s\"\n",
				   threads, core * threads, core, ghz, mghz, per_cycle * mghz * threads,
				   bf16_cycle * mghz * threads, why);
		printf("theoretical fp32 peak: %d flops/cycle/core (%s) x %.3f GHz (cpuinfo) = %.1f GFLOP/s per core, %.1f for %d thread(s)\n",
			   per_cycle, why, ghz, core, core * threads, threads);
		if (bf16_cycle)
			printf("theoretical bf16 peak (%s): %d flops/cycle/core = %.1f GFLOP/s for %d thread(s)\n",
				   bf16_why, bf16_cycle, bf16_cycle * ghz * threads, threads);
		if (measure_clock)
			printf("clock measured under load (dependent adds, %d thread(s)): %.3f GHz -> theoretical %.1f GFLOP/s per core, %.1f for %d thread(s)\n",
				   threads, mghz, per_cycle * mghz, per_cycle * mghz * threads, threads);
	}
}

/* ---- measured peak: a large square sgemm through tfm_gemm ---------------- */

static void
bench_peak(int threads, double seconds)
{
	const int	n = 2048;
	const double flops = 2.0 * n * n * (double) n;
	float	   *A = aligned_alloc(64, sizeof(float) * n * n),
			   *B = aligned_alloc(64, sizeof(float) * n * n),
			   *C = aligned_alloc(64, sizeof(float) * n * n);
	double		t[256];
	int			it = 0;
	double		start;
	timing		r;
	tfm_rng		rng;

	tfm_rng_seed(&rng, 7);
	for (size_t i = 0; i < (size_t) n * n; i++)
	{
		A[i] = tfm_rng_uniform(&rng) - 0.5f;
		B[i] = tfm_rng_uniform(&rng) - 0.5f;
		C[i] = 0.0f;
	}
	tfm_gemm(false, false, n, n, n, 1.0f, A, n, B, n, 0.0f, C, n);	/* warm-up */
	start = now();
	while (it < 256 && (it < 5 || now() - start < seconds))
	{
		double		t0 = now();

		tfm_gemm(false, false, n, n, n, 1.0f, A, n, B, n, 0.0f, C, n);
		t[it++] = now() - t0;
	}
	r = summarise(t, it);
	printf("measured peak: sgemm %dx%dx%d via tfm_gemm, %d threads: best %.1f GFLOP/s, median %.1f (%d runs)\n",
		   n, n, n, threads, flops / r.min / 1e9, flops / r.median / 1e9, it);
	printf("RESULT impl=tfm kind=peak threads=%d gflops=%.2f median_gflops=%.2f iters=%d\n",
		   threads, flops / r.min / 1e9, flops / r.median / 1e9, it);
	free(A);
	free(B);
	free(C);
}

/* ---- training and inference ---------------------------------------------- */

/* the precision of the inference passes (--precision) */
static tfm_precision infer_precision = TFM_PREC_FP32;
/* the precision of training (--train-precision fp32 | bf16: mixed precision) */
static tfm_precision train_precision = TFM_PREC_FP32;
/* --checkpoint-activations: recompute each block in the backward pass */
static bool checkpoint_activations = false;

static int	warmup_iters = 2;
/* inference groups: sequences of at most this many tokens per forward pass (0: all) */
static int	infer_tokens = 512;

/* one inference pass over batch b, in groups of sequences as tfm_classify runs them */
static int
infer_pass(tfm_model *m, const tfm_batch *b)
{
	int			g = infer_tokens > 0 ? infer_tokens / b->T : b->B;

	g = g < 1 ? 1 : g;
	for (int s = 0; s < b->B; s += g)
	{
		tfm_batch	sub = *b;

		sub.B = b->B - s < g ? b->B - s : g;
		sub.input = b->input + (size_t) s * b->T;
		if (b->labels)
			sub.labels = b->labels + s;
		if (b->target && TASK != TFM_TASK_SEQ2SEQ)
			sub.target = b->target + (size_t) s * b->T;
		if (TASK == TFM_TASK_SEQ2SEQ)
		{
			sub.dec_input = b->dec_input + (size_t) s * b->Tt;
			sub.target = b->target + (size_t) s * b->Tt;
		}
		if (tfm_model_forward(m, &sub, false, 0) != 0)
			return -1;
	}
	return 0;
}

static void
bench_model(int threads, double seconds, int min_iters, bool train, bool infer)
{
	tfm_config	cfg;
	tfm_model  *m;
	tfm_trainer tr;
	tfm_train_opts o;
	int32_t    *ids = malloc(sizeof(int32_t) * (N_BATCHES * BATCH * LEN + 1));
	int32_t    *labels = malloc(sizeof(int32_t) * N_BATCHES * BATCH);
	size_t		weights;
	double		fwd_tok,
				tokens = (double) BATCH * LEN;
	double	   *t = malloc(sizeof(double) * 100000);

	reference_config(&cfg);
	if (tfm_config_check(&cfg))
	{
		fprintf(stderr, "bad config: %s\n", tfm_config_check(&cfg));
		exit(1);
	}
	m = tfm_model_create(&cfg);
	if (!m)
	{
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	tfm_model_init(m, 42);
	random_batches(ids, labels, 1234);
	fwd_tok = forward_flops_per_token(m, &weights);
	printf("INFO params=%zu nonembedding_weights=%zu fwd_flops_per_token=%.0f train_flops_per_token=%.0f tokens_per_batch=%.0f\n",
		   m->n_floats, weights, fwd_tok, 3 * fwd_tok, tokens);

	if (train)
	{
		int			it = 0;
		double		start,
					loss = 0.0;
		timing		r;

		memset(&o, 0, sizeof(o));
		o.lr = 5e-4f;
		o.schedule = TFM_SCHED_CONSTANT;
		o.warmup = 0;
		o.total_steps = 1000000;
		o.clip = 1.0f;
		o.label_smoothing = 0.0f;
		o.beta1 = 0.9f;
		o.beta2 = 0.999f;
		o.eps = 1e-8f;
		o.weight_decay = 0.01f;
		o.decoupled = true;
		o.seed = 42;
		o.precision = train_precision;
		o.checkpoint_activations = checkpoint_activations;
		printf("INFO workspace_bytes=%zu workspace_bytes_plain=%zu workspace_bytes_checkpointed=%zu\n",
			   tfm_model_workspace_bytes(&cfg, BATCH, LEN, TASK == TFM_TASK_SEQ2SEQ ? LEN : 0,
										 TFM_WS_TRAINING | (checkpoint_activations ? TFM_WS_CHECKPOINT : 0),
										 threads),
			   tfm_model_workspace_bytes(&cfg, BATCH, LEN, TASK == TFM_TASK_SEQ2SEQ ? LEN : 0,
										 TFM_WS_TRAINING, threads),
			   tfm_model_workspace_bytes(&cfg, BATCH, LEN, TASK == TFM_TASK_SEQ2SEQ ? LEN : 0,
										 TFM_WS_TRAINING | TFM_WS_CHECKPOINT, threads));
		if (tfm_trainer_init(&tr, m, &o) != 0)
		{
			fprintf(stderr, "out of memory\n");
			exit(1);
		}
		for (int w = 0; w < warmup_iters; w++)
		{
			tfm_batch	b = batch_at(ids, labels, w);
			double		s;
			int			c;

			if (tfm_trainer_step(&tr, &b, 1, &s, &c) != TFM_STEP_OK)
			{
				fprintf(stderr, "training step failed\n");
				exit(1);
			}
		}
		start = now();
		while (it < 100000 && (it < min_iters || now() - start < seconds))
		{
			tfm_batch	b = batch_at(ids, labels, it);
			double		t0 = now(),
						s;
			int			c;

			if (tfm_trainer_step(&tr, &b, 1, &s, &c) != TFM_STEP_OK)
			{
				fprintf(stderr, "training step failed\n");
				exit(1);
			}
			t[it++] = now() - t0;
			loss = s / c;
		}
		r = summarise(t, it);
		printf("tfm train %s, %d threads: %d steps, median %.1f ms/step (mean %.1f, min %.1f): %.0f tok/s, %.1f GFLOP/s (last loss %.4f)\n",
			   tfm_precision_name(train_precision), threads, it, r.median * 1e3, r.mean * 1e3,
			   r.min * 1e3, tokens / r.median, 3 * fwd_tok * tokens / r.median / 1e9, loss);
		printf("RESULT impl=tfm kind=%s threads=%d tok_s=%.1f tok_s_mean=%.1f tok_s_best=%.1f gflops=%.2f step_ms=%.2f iters=%d precision=%s%s\n",
			   train_precision == TFM_PREC_BF16 ? "train_bf16" : "train",
			   threads, tokens / r.median, tokens / r.mean, tokens / r.min,
			   3 * fwd_tok * tokens / r.median / 1e9, r.median * 1e3, it,
			   tfm_precision_name(train_precision),
			   checkpoint_activations ? " checkpoint_activations=1" : "");
		tfm_trainer_free(&tr);
	}

	if (infer)
	{
		int			it = 0;
		double		start;
		timing		r;

		if (tfm_model_set_precision(m, infer_precision) != 0)
		{
			fprintf(stderr, "out of memory packing the model for %s\n", tfm_precision_name(infer_precision));
			exit(1);
		}

		for (int w = 0; w < warmup_iters; w++)
		{
			tfm_batch	b = batch_at(ids, labels, w);

			if (infer_pass(m, &b) != 0)
			{
				fprintf(stderr, "forward failed\n");
				exit(1);
			}
		}
		start = now();
		while (it < 100000 && (it < min_iters || now() - start < seconds))
		{
			tfm_batch	b = batch_at(ids, labels, it);
			double		t0 = now();

			if (infer_pass(m, &b) != 0)
			{
				fprintf(stderr, "forward failed\n");
				exit(1);
			}
			t[it++] = now() - t0;
		}
		r = summarise(t, it);
		printf("tfm infer (%s, groups of %d tokens), %d threads: %d passes, median %.1f ms/batch (mean %.1f, min %.1f): %.0f tok/s, %.1f GFLOP/s\n",
			   tfm_precision_name(infer_precision), infer_tokens, threads, it, r.median * 1e3, r.mean * 1e3, r.min * 1e3,
			   tokens / r.median, fwd_tok * tokens / r.median / 1e9);
		printf("RESULT impl=tfm kind=%s threads=%d tok_s=%.1f tok_s_mean=%.1f tok_s_best=%.1f gflops=%.2f step_ms=%.2f iters=%d precision=%s\n",
			   infer_precision == TFM_PREC_FP32 ? "infer" : infer_precision == TFM_PREC_BF16 ? "infer_bf16" :
			   infer_precision == TFM_PREC_INT4 ? "infer_int4" : "infer_int8",
			   threads, tokens / r.median, tokens / r.mean, tokens / r.min,
			   fwd_tok * tokens / r.median / 1e9, r.median * 1e3, it, tfm_precision_name(infer_precision));
	}
	tfm_model_free(m);
	free(ids);
	free(labels);
	free(t);
}

/* ---- main ---------------------------------------------------------------- */

int
main(int argc, char **argv)
{
	int			threads = 1,
				min_iters = 5;
	double		seconds = 8.0;
	const char *what = "peak,train,infer";
	char		err[256];

	for (int i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
			threads = atoi(argv[++i]);
		else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
			seconds = atof(argv[++i]);
		else if (strcmp(argv[i], "--min-iters") == 0 && i + 1 < argc)
			min_iters = atoi(argv[++i]);
		else if (strcmp(argv[i], "--what") == 0 && i + 1 < argc)
			what = argv[++i];
		else if (strcmp(argv[i], "--warmup") == 0 && i + 1 < argc)
			warmup_iters = atoi(argv[++i]);
		else if (strcmp(argv[i], "--model") == 0 && i + 1 < argc && pick_model(argv[i + 1]))
			i++;
		else if (strcmp(argv[i], "--batch") == 0 && i + 1 < argc && atoi(argv[i + 1]) > 0)
			BATCH = atoi(argv[++i]);
		else if (strcmp(argv[i], "--layers") == 0 && i + 1 < argc && atoi(argv[i + 1]) > 0)
			LAYERS = atoi(argv[++i]);
		else if (strcmp(argv[i], "--checkpoint-activations") == 0)
			checkpoint_activations = true;
		else if (strcmp(argv[i], "--infer-tokens") == 0 && i + 1 < argc && atoi(argv[i + 1]) >= 0)
			infer_tokens = atoi(argv[++i]);
		else if (strcmp(argv[i], "--train-precision") == 0 && i + 1 < argc &&
				 (strcmp(argv[i + 1], "fp32") == 0 || strcmp(argv[i + 1], "bf16") == 0))
			train_precision = strcmp(argv[++i], "bf16") == 0 ? TFM_PREC_BF16 : TFM_PREC_FP32;
		else if (strcmp(argv[i], "--precision") == 0 && i + 1 < argc)
		{
			const char *p = argv[++i];

			infer_precision = strcmp(p, "bf16") == 0 ? TFM_PREC_BF16 :
				strcmp(p, "int8") == 0 ? TFM_PREC_INT8 :
				strcmp(p, "int4") == 0 ? TFM_PREC_INT4 : TFM_PREC_FP32;
		}
		else
		{
			fprintf(stderr, "usage: %s [--threads N] [--seconds S] [--min-iters K] [--warmup W] [--model classify|lm|seq2seq] [--batch B] [--what peak,train,infer,ops] [--precision fp32|bf16|int8] [--train-precision fp32|bf16] [--infer-tokens N] [--layers L] [--checkpoint-activations]\n",
					argv[0]);
			return 2;
		}
	}
	if (threads < 1)
		threads = 1;
	if (tfm_blas_init(getenv("TFM_BLIS_ARCH"), err, sizeof(err)) != 0)
	{
		fprintf(stderr, "tfm_blas_init: %s\n", err);
		return 1;
	}
	tfm_set_threads(threads);
	printf("INFO impl=tfm threads=%d blis_arch=%s blis_reason=\"%s\"\n",
		   threads, tfm_blas_arch(), tfm_blas_arch_reason());
	printf("tfm core: BLIS kernels %s (%s), %d thread(s)\n",
		   tfm_blas_arch(), tfm_blas_arch_reason(), threads);
	theoretical_peak(threads, strstr(what, "peak") != NULL);

	if (strstr(what, "peak"))
		bench_peak(threads, seconds < 3 ? seconds : 3);
	if (strstr(what, "train") || strstr(what, "infer"))
		bench_model(threads, seconds, min_iters, strstr(what, "train") != NULL,
					strstr(what, "infer") != NULL);
	if (strstr(what, "ops") && TASK == TFM_TASK_CLASSIFY)
	{
		double		st = 0,
					si = 0;
		const char *e1 = getenv("BENCH_STEP_MS"),
				   *e2 = getenv("BENCH_INFER_MS");

		if (e1)
			st = atof(e1);
		if (e2)
			si = atof(e2);
		bench_ops(threads, st, si);
	}
	return 0;
}
