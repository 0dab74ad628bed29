/*
 * evaluate.h — measuring models: tfm_evaluate's measures (evaluate.c)
 * (corpus BLEU's statistics in a backend are bleu_stats.h's).
 */
#ifndef TFM_PG_EVALUATE_H
#define TFM_PG_EVALUATE_H

#include "postgres.h"

#include "runtime/runtime.h"
#include "storage/models/models.h"

/* tfm_evaluate's result columns */
enum
{
	O_ACCURACY, O_LOSS, O_MACRO_F1, O_PER_CLASS, O_CONFUSION, O_ROWS, O_SKIPPED,
	O_PERPLEXITY, O_NATS_PER_CHAR, O_BITS_PER_BYTE, O_TOKENS, O_BLEU, O_EXACT, N_OUT
};

/*
 * The measures of model m (row; name as called) on the rows of query, into
 * v and nulls (N_OUT each, all NULL on entry): the model's task decides
 * which.  The query runs with the caller's rights.
 */
void		tfm_evaluate_model(tfm_model *m, const TfmModelRow *row, const char *name,
							   const char *query, Datum *v, bool *nulls);


/* minus the log-probability (nats) of ids[1..n-1]; the tokens predicted in *tokens */
double		tfm_lm_score(tfm_model *m, const int32 *ids, int n, const char *name, int64 *tokens);

#endif							/* TFM_PG_EVALUATE_H */
