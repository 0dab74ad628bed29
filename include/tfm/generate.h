/*
 * generate.h — a language model's decode loop: B prompts decoded together
 * (left-padded) with the key/value-cached decoder, one token per step per
 * prompt, chosen by tfm_sample (greedy, temperature, top-k, nucleus).
 *
 * Positions: learned and rotary positions end at max_len, so when the cache
 * is full the window slides (the cache is rebuilt from the last
 * 3/4 · max_len tokens); sinusoidal positions continue past max_len up to a
 * window of min(P + max_tokens, 8 · max_len), which then slides keeping all
 * but max_len / 4 of it.  Prompts are given as they are fed: the caller
 * trims them to max_len and puts <bos> in an empty one.
 *
 * A row stops at <eos> (not kept), when the stop hook says so (the token is
 * kept), when the mask hook says so (nothing kept), or after max_tokens
 * tokens.  Padding (if it is a token of the
 * model) and <bos> (unless it is also <eos>) are never produced.  Row b
 * samples with its own generator seeded with seed + b, so a row's tokens do
 * not depend on the rows decoded beside it.
 */
#ifndef TFM_GENERATE_H
#define TFM_GENERATE_H

#include <stdbool.h>
#include <stdint.h>

#include "tfm/model.h"

typedef struct tfm_gen_opts
{
	int			max_tokens;		/* at least 1 */
	float		temperature;	/* 0 = greedy */
	int			top_k;			/* 0 = all */
	float		top_p;			/* 1 = all */
	uint64_t	seed;
	int32_t		bos,
				eos,
				pad;			/* fed at left-padding positions (masked) */
	bool		pad_is_token;	/* pad is one of the model's tokens: never produced */

	/*
	 * Hooks, each may be NULL.  poll is called before every step (every
	 * token); nonzero stops tfm_generate_run with TFM_ECANCELED.  stop is
	 * called after row b produced its n-th token (ids[0..n)): true ends the
	 * row.  A hook may also leave by longjmp when its owner frees the
	 * generator afterwards: the loop holds nothing outside the generator.
	 */
	int			(*poll) (void *arg);
	bool		(*stop) (void *arg, int b, const int32_t *ids, int n);
	/*
	 * mask is called before row b chooses its next token, with its logits
	 * (V) to change (-INFINITY: never chosen); true ends the row there, as
	 * <eos> would (a constrained value that nothing may follow).
	 */
	bool		(*mask) (void *arg, int b, float *logits, int V);
	void	   *hook_arg;
} tfm_gen_opts;

/* one prompt's result */
typedef struct tfm_gen_row
{
	int32_t    *ids;			/* the tokens produced (max_tokens room) */
	float	   *logprob;		/* each one's log-probability under the model */
	int			n;
	bool		done;			/* ended by <eos> or the stop hook */
} tfm_gen_row;

typedef struct tfm_generator tfm_generator;

/*
 * Bytes decoding B prompts of plens[b] tokens for up to max_tokens tokens
 * allocates (an upper bound, with the decoder and its model workspace);
 * lowp: the model runs at bf16/int8.
 */
size_t		tfm_generate_bytes(const tfm_config *c, const int *plens, int B, int max_tokens,
							   bool lowp, int threads);

/*
 * A generator for B prompts (plens[b] >= 1 tokens each, at most max_len),
 * copied; NULL if memory is short.  o (with its hooks) is copied too.
 */
tfm_generator *tfm_generator_create(tfm_model *m, int32_t *const *prompts, const int *plens,
									int B, const tfm_gen_opts *o);

/*
 * Decode until every row is done or has max_tokens tokens.  Returns 0,
 * TFM_ENOMEM / TFM_EBADID from a pass (tfm_decoder_feed), or TFM_ECANCELED.
 */
int			tfm_generate_run(tfm_generator *g);

/* the B rows of results (valid until tfm_generator_free) */
const tfm_gen_row *tfm_generator_rows(const tfm_generator *g);

void		tfm_generator_free(tfm_generator *g);

#endif							/* TFM_GENERATE_H */
