/*
 * beam.h — beam search over an encoder-decoder (or greedy search, beam 1)
 * with the key/value-cached decoder, for many sources at once.
 *
 * Scores are sums of log-probabilities; a finished hypothesis (one that
 * produced <eos>) is ranked by score / lp(length), with the GNMT length
 * penalty lp(n) = ((5 + n) / 6)^alpha (alpha 0 = raw score).  A source is
 * done when it has `beam` finished hypotheses and no live one can beat the
 * best finished, or when max_tokens are produced (live hypotheses then
 * count as finished).  hf_rules: Hugging Face's lengths and stopping rule
 * instead (tfm_beam_opts).
 */
#ifndef TFM_BEAM_H
#define TFM_BEAM_H

#include <stdint.h>

#include "tfm/model.h"

typedef struct tfm_hyp
{
	int32_t    *ids;			/* without <bos> and <eos> (malloc'd) */
	int			n;
	float		score;			/* length-normalised */
	float		logprob;		/* sum of log-probabilities */
} tfm_hyp;

typedef struct tfm_beam_opts
{
	int			beam;
	float		length_penalty;
	int			max_tokens;
	int			nbest;			/* hypotheses kept per source (≤ beam) */
	int32_t		bos,
				eos,
				pad;			/* never produced (nor <bos>) */
	/*
	 * Hugging Face's rules (generate's BeamSearchScorer, early_stopping
	 * False), for imported models (Marian, T5): a hypothesis of n tokens
	 * scores logprob / (n + 1)^alpha when it ended in <eos> and
	 * logprob / n^alpha when max_tokens cut it; a source is done when it
	 * has `beam` finished and the best extension's score / (t + 1)^alpha at
	 * step t (from 0) does not beat the worst of them.
	 */
	int			hf_rules;
	/*
	 * the last step (max_tokens) can only be <eos>, with probability 1 (its
	 * hypothesis keeps its score: generate's forced_eos_token_id)
	 */
	int			forced_eos;
} tfm_beam_opts;

/*
 * Decode B sources (B, Ts) padded with the model's pad id.  out receives
 * B · nbest hypotheses, best first per source (fewer are marked n = -1).
 * Returns 0, or TFM_ENOMEM if memory is short.  cancel, if not NULL, is
 * called after every step; a non-zero return stops with TFM_ECANCELED.
 */
int			tfm_beam_search(tfm_model *m, const int32_t *src, int B, int Ts,
							const tfm_beam_opts *o, tfm_hyp *out,
							int (*cancel) (void *), void *cancel_arg);
void		tfm_hyps_free(tfm_hyp *h, int n);

/* bytes tfm_beam_search allocates for B sources of Ts tokens (an upper bound) */
size_t		tfm_beam_bytes(const tfm_config *c, int B, int Ts, const tfm_beam_opts *o,
						   bool lowp, int threads);

#endif							/* TFM_BEAM_H */
