/*
 * decode.h — incremental decoding with a key/value cache, and the choice
 * of the next token (greedy, temperature, top-k, nucleus).
 *
 * A tfm_decoder runs a model's decoder stack one step at a time for B
 * sequences: each layer keeps the keys and values of every position so far,
 * so a new token costs O(t) attention instead of recomputing the prefix.
 * For seq2seq models tfm_decoder_encode runs the encoder once and computes
 * every layer's cross-attention keys and values of its output.
 *
 * Prompts of different lengths are left-padded: tfm_decoder_feed takes a
 * pad mask, pad keys are hidden, and each sequence's positions count from
 * its first real token.
 */
#ifndef TFM_DECODE_H
#define TFM_DECODE_H

#include <stdbool.h>
#include <stdint.h>

#include "tfm/model.h"
#include "tfm/rng.h"

typedef struct tfm_decoder tfm_decoder;

/* B sequences of up to cap positions, fed at most nmax tokens at a time */
tfm_decoder *tfm_decoder_create(tfm_model *m, int B, int cap, int nmax);

/*
 * Bytes a decoder of (B, cap, nmax) allocates over its life (an upper
 * bound), with the model workspace its feeds reserve; Ts: the source length
 * of a seq2seq decoder's encode; lowp: the model runs at bf16/int8.
 */
size_t		tfm_decoder_bytes(const tfm_config *c, int B, int cap, int nmax, int Ts,
							  bool lowp, int threads);
void		tfm_decoder_free(tfm_decoder *d);
/* forget every position (keeps the encoder's output) */
void		tfm_decoder_reset(tfm_decoder *d);
/* positions filled so far */
int			tfm_decoder_len(const tfm_decoder *d);

/*
 * seq2seq: encode src (B / repeat, Ts), padded with pad_id, once; source s
 * then serves the `repeat` consecutive rows s·repeat .. s·repeat + repeat - 1
 * (1 for one row per source, the beam width for beam search).  Returns 0,
 * -1 (memory, or repeat not dividing B), or TFM_EBADID (-2) if a source id is
 * outside the vocabulary.
 */
int			tfm_decoder_encode(tfm_decoder *d, const int32_t *src, int Ts, int repeat);

/*
 * Append n tokens (B, n) to every sequence; is_pad (B, n) marks left padding
 * (NULL: none).  logits receives (B, V) for the last position fed.  Returns
 * 0, -1 if the cache is full or memory is short, or TFM_EBADID (-2) if a
 * token is outside the (target) vocabulary (nothing fed).
 */
int			tfm_decoder_feed(tfm_decoder *d, const int32_t *tokens, const uint8_t *is_pad,
							 int n, float *logits);

/*
 * Beam search: keep nB <= B rows, row i becoming a copy of row from[i]
 * (its cache, padding and encoder memory); the rest are dropped and later
 * feeds run on nB rows.  Only rows that change are copied, and a row's
 * encoder memory only if it came from another source.  Returns 0, or -1
 * (memory, or a bad from[]).
 */
int			tfm_decoder_select(tfm_decoder *d, const int *from, int nB);
/* tfm_decoder_select keeping every row: row b becomes a copy of row from[b] */
int			tfm_decoder_reorder(tfm_decoder *d, const int *from);

typedef struct tfm_sampler
{
	float		temperature;	/* 0 = greedy */
	int			top_k;			/* 0 = all */
	float		top_p;			/* 1 = all */
	tfm_rng		rng;
} tfm_sampler;

/*
 * Choose a token from logits (V) — scratch needs 2·V floats + V ints.
 * Returns the id and stores its log-probability under the model (before
 * temperature and truncation) in *logprob.
 */
int			tfm_sample(tfm_sampler *s, const float *logits, int V, float *scratch,
					   int *iscratch, float *logprob);

/* log-softmax of one row into out (V) */
void		tfm_log_softmax(float *out, const float *logits, int V);

#endif							/* TFM_DECODE_H */
