/*
 * tok_split.h — the regular-expression pre-tokenizer (tok_split_pcre.c),
 * internal to src/core/tokenizer: what the encoder (tok_encode.c) and the
 * unit tests call.
 */
#ifndef TFM_TOK_SPLIT_H
#define TFM_TOK_SPLIT_H

#include "../tok_internal.h"

/* a tokenizer's Split rules, compiled (NULL until tfm_tok_add_split) */
typedef struct tfm_tok_splits tfm_tok_splits;

void tfm_tok_splits_free(tfm_tok_splits *s);

/*
 * The pre-tokens of s[0..n): the rules applied in turn, each to every piece
 * the previous one left (its pattern sees only that piece).  *pieces points
 * to *n_pieces pairs (start, end) of byte offsets into s, in order, none
 * empty; the bytes a Removed behaviour drops lie in no piece.  The array
 * belongs to the tokenizer (valid until the next call).  Polls the
 * tokenizer's cancel check every few thousand matches.  TFM_ELIMIT when a
 * pattern exceeds its match limit, TFM_ENOMEM, TFM_ECANCELED.
 */
int tfm_tok_split_run(const size_t **pieces, size_t *n_pieces, tfm_tokenizer *t,
					  const uint8_t *s, size_t n, tfm_status *err);

/* whether rule i runs compiled to machine code (PCRE2's JIT) */
int tfm_tok_split_jit(const tfm_tokenizer *t, int i);

#endif /* TFM_TOK_SPLIT_H */
