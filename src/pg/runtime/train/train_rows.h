/*
 * train_rows.h — what a training query's rows become, the types the data
 * pipeline (train_data.c) and the rows of the task heads (task_rows.c)
 * share: an example, a batch in the core's layout, the kinds of a
 * classifier's rows and the reader that makes them.
 */
#ifndef TFM_TRAIN_ROWS_H
#define TFM_TRAIN_ROWS_H

#include "postgres.h"

#include "executor/spi.h"

#include "tfm/model.h"
#include "runtime/rows.h"
#include "storage/models/models.h"

/* one training example (ids are palloc'd in the chunk's context) */
typedef struct TfmExample
{
	int32	   *src;
	int			nsrc;
	int32	   *tgt;			/* seq2seq target */
	int			ntgt;
	int			label;			/* classify; a question-answering window's start token */
	int			span_end;		/* a question-answering window's end token */
	float		score;			/* a one-logit classifier's target in [0, 1] */
	int32	   *types;			/* a pair's token types (nsrc), or NULL */
	int32	   *tags;			/* a token classifier's label per token (nsrc,
								 * TFM_LABEL_IGNORE where none), or NULL */
	int64		nchars,
				nbytes;			/* of a text input (0 for ids) */
	bool		cont;			/* lm: a piece of a row that goes on (no <eos> after it) */
} TfmExample;

/* a batch in the core's layout, palloc'd */
typedef struct TfmBatchBuf
{
	tfm_batch	b;
	int32	   *input,
			   *dec_input,
			   *target,
			   *labels,
			   *types,
			   *token_labels,
			   *spans;
	float	   *scores;
	int64		tokens;			/* real (non-pad) input tokens */
} TfmBatchBuf;

/*
 * What a classifier's rows hold (task_rows.c): (input, label); (input,
 * score) for a model of one logit; a pair (a, b, label or score); a token
 * classifier's (text, spans jsonb); a question-answering model's (question,
 * context, answer_start, answer text or answer_end).
 */
typedef enum TfmRowKind
{
	TFM_ROWS_LABEL = 0,
	TFM_ROWS_SCORE = 1,
	TFM_ROWS_TAGS = 2,
	TFM_ROWS_SPANS = 3
} TfmRowKind;

typedef struct TfmReader
{
	const TfmModelRow *row;
	TfmSpecials sp;
	SPIPlanPtr	plan;
	Portal		portal;
	Oid			types[4];
	int			ncols;
	TfmRowKind	kind;			/* a classifier's rows */
	bool		pair;			/* (a, b, label or score) */
	int			chunk_rows;
	int64		row_number;		/* rows read so far in this pass */
	int64		skipped_null;	/* rows skipped for a NULL value */
	int64		truncated;		/* sequences cut to max_len */
	float		val_fraction;
	int64		val_rows,		/* held out so far in this pass */
				val_tokens;
	int64		val_candidates;	/* rows (lm: sequences) hashed in this pass */
	int64		val_max_rows,	/* caps on held-out rows (0: none) */
				val_max_tokens;
} TfmReader;

#endif							/* TFM_TRAIN_ROWS_H */
