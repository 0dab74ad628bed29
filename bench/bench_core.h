/*
 * bench_core.h — what bench_core.c and bench_ops.c share: the benchmark
 * model's shape (set by --model, --batch and --layers), the timing
 * summary, the model's config, random batches (bench_common.c), and the
 * ops profile (bench_ops.c).
 */
#ifndef TFM_BENCH_CORE_H
#define TFM_BENCH_CORE_H

#include <stdint.h>

#include "tfm/model.h"
#include "tfm/train.h"

/* the classifier by default; --model lm / seq2seq pick the other shapes (bench_core.c sets them) */
extern int	VOCAB,
			D_MODEL,
			HEADS,
			LAYERS,
			D_FF,
			LEN,
			BATCH;
extern tfm_task TASK;

#define CLASSES  2
#define DROPOUT  0.1f
#define N_BATCHES 4				/* distinct random batches, used in turn */

typedef struct timing
{
	int			n;
	double		median,
				mean,
				min;
} timing;

/* seconds on the monotonic clock */
double		now(void);
/* the process's CPU seconds; a qsort comparison of doubles */
double		cpu_now(void);
int			cmp_double(const void *a, const void *b);
/* sorts t; its median, mean and minimum */
timing		summarise(double *t, int n);
/* a comma-separated list of integers into out (at most max): their count */
int			parse_list(const char *s, int *out, int max);
/* the config of the model picked by --model */
void		reference_config(tfm_config *c);
/* N_BATCHES random batches of ids (one spare) and labels */
void		random_batches(int32_t *ids, int32_t *labels, uint64_t seed);
/* batch i (mod N_BATCHES) of them */
tfm_batch	batch_at(const int32_t *ids, const int32_t *labels, int i);

/* the ops profile (bench_ops.c) against the measured step times */
void		bench_ops(int threads, double step_ms_train, double step_ms_infer);

#endif							/* TFM_BENCH_CORE_H */
