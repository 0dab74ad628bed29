/*
 * task_rows.h — the training rows of a classifier beyond (input, label)
 * (task_rows.c): a one-logit model's scores, pairs of texts with their
 * token types, a token classifier's (text, spans) and a question-answering
 * model's (question, context, answer) made examples, and the grading of a
 * validation batch of each kind.
 */
#ifndef TFM_TASK_ROWS_H
#define TFM_TASK_ROWS_H

#include "postgres.h"

#include "access/tupdesc.h"
#include "utils/jsonb.h"

#include "runtime/train/train_rows.h"

/* the query's columns (td) checked for a classifier's rows: r->kind, r->pair, r->types */
void		tfm_task_columns(TfmReader *r, TupleDesc td);
/* a one-logit model's target: a number or boolean in [0, 1] */
float		tfm_task_score(TfmReader *r, Datum d, Oid type);
/* a pair (a, b) as the model reads it, cut by longest_first: its ids (*n) and types */
int32	   *tfm_task_pair(TfmReader *r, text *a, text *b, int32 **types, int *n);
/*
 * a token classifier's (text, spans) row: the text's windows of max_len
 * tokens, each token's label (*nex examples)
 */
TfmExample *tfm_task_tags(TfmReader *r, text *t, Jsonb *spans, int *nex);
/*
 * a question-answering row: the context's windows beside the question,
 * each with the answer's start and end token ([CLS] where the window does
 * not hold the answer, or there is none) (*nex examples)
 */
TfmExample *tfm_task_answer(TfmReader *r, text *q, text *c, Datum start, Oid start_type,
							Datum answer, Oid answer_type, int *nex);
/* a validation batch of rows of kind, after its forward pass: the right answers and the graded */
void		tfm_task_grade(const tfm_model *m, const TfmBatchBuf *bb, int kind, int64 *correct,
						   int64 *graded);

#endif							/* TFM_TASK_ROWS_H */
