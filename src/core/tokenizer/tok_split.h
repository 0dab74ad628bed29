/*
 * tok_split.h — the regular-expression pre-tokenizer (tok_split_pcre.c)
 * and Unicode NFC (tok_nfc.c), internal to src/core/tokenizer: what the
 * encoder (tok_encode.c) and the unit tests call.
 */
#ifndef TFM_TOK_SPLIT_H
#define TFM_TOK_SPLIT_H

#include "tok_internal.h"

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

/*
 * NFC of s[0..n) into out (cleared first), with align[k] the offset in s of
 * the character output byte k comes from (a composed character: its
 * first).  *same is set, and out left empty, when s is already NFC by the
 * quick test (no character at or above U+0300); offsets never decrease.  Invalid UTF-8 units are
 * copied as they are and compose with nothing.  TFM_OK or TFM_ENOMEM.
 */
int tfm_tok_nfc(tfm_tok_bytes *out, size_t **align, size_t *align_cap, int *same,
				const uint8_t *s, size_t n);

#endif /* TFM_TOK_SPLIT_H */
