/*
 * infer.h — inference over cached models, below the SQL functions:
 * classifiers (classifier.c) and the pairs they read (pair_input.c), encoder-decoders (translator.c), attention
 * maps (attention_maps.c) and language models (generator.c).
 */
#ifndef TFM_PG_INFER_H
#define TFM_PG_INFER_H

#include "postgres.h"

#include "tfm/beam.h"
#include "runtime/rows.h"
#include "runtime/cache/tokenizer_cache.h"
#include "storage/models/models.h"

/* rows per batched pass or decode (the text[] forms' rules: sql/args.h) */
#define TFM_INFER_BATCH 64

/* ---- classifiers (classifier.c) ---- */
/* the model, checked to be a classifier */
tfm_model  *tfm_get_classifier(const char *name, const TfmModelRow **rowp);
/* the model, checked to have a head on every token of this tfm_token_head and a tokenizer */
tfm_model  *tfm_get_token_model(const char *name, int head, const TfmModelRow **rowp);
/* a value's ids as the classifier reads them (<cls>, truncation) */
int32	   *tfm_classifier_ids(const TfmModelRow *row, Datum d, Oid type, int *n);
/*
 * n inputs through varlen forward passes (many texts' tokens in one pass,
 * nothing padded); probs (n × labels) and pooled (n × d_model) may be NULL.
 * Each result is bit for bit the one its input has alone, whatever the
 * inputs around it (tfm_classify and tfm_embed, one text or a text[];
 * tfm_embed_chunks, jobs).
 */
void		tfm_classifier_run(tfm_model *m, const TfmModelRow *row, int32 **ids,
							   const int *lens, int n, float *probs, float *pooled);

/* ---- pairs of texts (pair_input.c) ---- */
/* the tokenizer's [CLS] and [SEP] (RoBERTa's <s>, </s>), checked to be ids of the model */
void		tfm_model_cls_sep(const TfmModelRow *row, TfmSpecials *sp);
/* errors unless the model reads pairs of texts (a BERT-family encoder with its tokenizer) */
void		tfm_pair_check(const TfmModelRow *row);
/* a text's ids as one side of a pair (no specials; *n may be 0) */
int32	   *tfm_pair_tokens(const TfmModelRow *row, text *t, int *n);
/*
 * The pair (a, b) as the model reads it, cut to its positions
 * ('only_first' or 'longest_first'): its ids (*n) and token types (*types).
 */
int32	   *tfm_pair_join(const TfmModelRow *row, const int32 *a, int na, const int32 *b,
						  int nb, bool only_first, int32 **types, int *n);
/*
 * n pairs (ids and token types of lens[i] each, as tfm_pair_input builds
 * them) through batched passes: logits (n × labels), no softmax.
 */
void		tfm_classifier_run_pairs(tfm_model *m, const TfmModelRow *row, int32 **ids,
									 int32 **types, const int *lens, int n, float *logits);

/*
 * n inputs (types may be NULL) through a token head's varlen passes:
 * tokens[k] (lens[k] × labels, caller's) gets input k's logits, a row per token.
 */
void		tfm_classifier_run_tokens(tfm_model *m, const TfmModelRow *row, int32 **ids,
									  int32 **types, const int *lens, int n, float **tokens);

/* ---- a text's tokens and their places, for the span tasks (token_spans.c) ---- */
typedef struct TfmTokSpan
{
	int32		id;
	int			start,
				end;			/* characters [start, end) of the text (0-based) */
	size_t		bstart,
				bend;			/* the same in bytes */
	bool		subword;		/* continues the word before it */
} TfmTokSpan;
/* a text's tokens (no specials; *n may be 0), checked against tfm.work_mem */
TfmTokSpan *tfm_token_spans(const TfmModelRow *row, text *t, int *n);
/* [CLS] tokens [SEP] (RoBERTa's <s> .. </s>) as the model reads them, *len ids */
int32	   *tfm_token_window(const TfmModelRow *row, const TfmTokSpan *tokens, int n, int *len);

/* ---- encoder-decoders (translator.c) ---- */
typedef struct TrOpts
{
	int			beam;			/* 0: the model's default */
	float		length_penalty; /* < 0: the model's default */
	int			max_tokens;		/* 0 = default per source */
} TrOpts;

/* the beam and length penalty a call left unset (TR_OPTS_UNSET): the
 * model's imported generation settings, else tfm's beam 4 and length
 * penalty 0.6 (an unset max_tokens is resolved per source by
 * tfm_translate_sources: the model's limit, else 2 · source + 10) */
#define TR_OPTS_UNSET {0, -1.0f, 0}
void		tfm_tr_defaults(TrOpts *o, const TfmModelRow *row);

/* the model, checked to be seq2seq with a tokenizer */
tfm_model  *tfm_get_s2s(const char *name, const TfmModelRow **rowp);
/* the tokenizer of a seq2seq model's targets */
const char *tfm_target_tokenizer(const TfmModelRow *row);
/* a source's ids (first max_len); errors on an empty source */
int32	   *tfm_source_ids(const TfmModelRow *row, text *t, int *n);
/* n sources, nbest hypotheses each (out: n · nbest, free with tfm_hyps_free) */
void		tfm_translate_sources(tfm_model *m, const TfmModelRow *row, int32 **src,
								  const int *lens, int n, const TrOpts *o, int nbest,
								  tfm_hyp *out);
/* a hypothesis as text in the target vocabulary */
text	   *tfm_hyp_text(const TfmModelRow *row, const tfm_hyp *h);

/* ---- attention maps (attention_maps.c) ---- */
/*
 * A forward pass over a text's n ids (a classifier's cut to its input:
 * the ids it read, *n of them) that keeps each layer's attention weights.
 */
int32	   *tfm_attention_self_pass(tfm_model *m, const TfmModelRow *row, const TfmSpecials *sp,
									int32 *ids, int *n);
/*
 * A seq2seq pass over a source and a target's nt ids (tgt NULL: the
 * translation beam search finds), keeping the cross-attention: the
 * decoder's input (<bos> and the target cut to max_len - 1), *nq ids.
 */
int32	   *tfm_attention_cross_pass(tfm_model *m, const TfmModelRow *row, const TfmSpecials *sp,
									 int32 *ids, int n, const int32 *tgt, int nt, int *nq);

/* ---- language models (generator.c) ---- */
typedef struct GenOpts
{
	int			max_tokens;
	float		temperature;
	int			top_k;
	float		top_p;
	uint64		seed;
	char	   *stop;
	const int32 *stop_ids;		/* ids that end generation (not kept), or NULL */
	int			n_stop_ids;
	const struct tfm_jschema *json;	/* the JSON schema the text must follow, or NULL */
} GenOpts;

typedef struct GenRow
{
	int32	   *ids;			/* generated tokens */
	float	   *logprob;
	int			n;
	int			stop_at;		/* bytes of text to keep when stopped by the stop text, or -1 */
} GenRow;

/* a prompt's ids: the last max_len tokens, or <bos> for an empty prompt (ids has room for one) */
void		tfm_trim_prompt(const TfmModelRow *row, const TfmSpecials *sp, int32 *ids, int *n);
/*
 * Decode B prompts together (left-padded) for up to max_tokens tokens: the
 * core's loop (tfm_generate_run), within tfm.work_mem (in halves, each
 * seeded as before, when they do not fit).
 */
void		tfm_generate_prompts(tfm_model *m, const TfmModelRow *row, int32 **prompts,
								 const int *plens, int B, const GenOpts *o, GenRow *out);
/* a generated row as text, cut before the stop text */
text	   *tfm_generated_text(const TfmModelRow *row, const GenRow *g);
/*
 * the next token's probabilities after n ids (*probs, V of them) and the
 * first k ids by falling probability, equal ones by id (the rest of the
 * array unspecified)
 */
int		   *tfm_next_token_probs(tfm_model *m, const char *name, const int32 *ids, int n, int k,
								 float **probs);

#endif							/* TFM_PG_INFER_H */
