/*
 * translate.h — encoder-decoder inference shared by translate.c and
 * evaluate.c.
 */
#ifndef TFM_TRANSLATE_H
#define TFM_TRANSLATE_H

#include "tfm/beam.h"
#include "sql/args.h"

typedef struct TrOpts
{
	int			beam;
	float		length_penalty;
	int			max_tokens;		/* 0 = default per source */
} TrOpts;

/* the model, checked to be seq2seq with a tokenizer */
/* the tokenizer of a seq2seq model's targets */
const char *tfm_target_tokenizer(const TfmModelRow *row);
tfm_model  *tfm_get_s2s(const char *name, const TfmModelRow **rowp);
/* a source's ids (first max_len); errors on an empty source */
int32	   *tfm_source_ids(const TfmModelRow *row, text *t, int *n);
/* n sources, nbest hypotheses each (out: n · nbest, free with tfm_hyps_free) */
void		tfm_translate_sources(tfm_model *m, const TfmModelRow *row, int32 **src,
								  const int *lens, int n, const TrOpts *o, int nbest,
								  tfm_hyp *out);
/* a hypothesis as text in the target vocabulary */
text	   *tfm_hyp_text(const TfmModelRow *row, const tfm_hyp *h);

#endif							/* TFM_TRANSLATE_H */
