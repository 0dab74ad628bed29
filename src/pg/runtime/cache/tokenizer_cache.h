/*
 * tokenizer_cache.h — tokenizers loaded once per backend
 * (tokenizer_cache.c), their specials, and text made from their pieces.
 */
#ifndef TFM_PG_TOKENIZER_CACHE_H
#define TFM_PG_TOKENIZER_CACHE_H

#include "postgres.h"

#include "tfm/tokenizer.h"
#include "storage/storage.h"

/* a tokenizer's special ids (-1: none) */
typedef struct TfmSpecials
{
	int32		pad,
				unk,
				bos,
				eos,
				cls,
				sep;
} TfmSpecials;


typedef struct TfmCachedTokenizer
{
	int32		id;				/* its row in tfm.tokenizers */
	tfm_tokenizer *tok;
	tfm_tok_info info;
	Oid			checked_user;	/* the role the last use check was for */
} TfmCachedTokenizer;

/* the tokenizer called name, use checked (the cache owns it: valid for the current call) */
TfmCachedTokenizer *tfm_tokenizer_cached(const char *name);
/* a text's ids with flags (TFM_TOK_ADD_*); max_length > 0 cuts them there */
int32	   *tfm_tokenizer_encode_with(TfmCachedTokenizer *e, const char *text, size_t len,
									  uint32 flags, size_t max_length, int *n);
/* a text's ids without specials, each token's bytes text[starts[i] .. ends[i]) (tfm_tok_spans) */
int32	   *tfm_tokenizer_encode_spans(const char *name, const char *text, size_t len, int *n,
									   size_t **starts, size_t **ends);
void		tfm_tokenizer_specials(const char *name, TfmSpecials *sp);
int32	   *tfm_tokenizer_encode(const char *name, const char *text, size_t len, int *n);
/* an id's piece as text (non-UTF-8 bytes as \xNN) */
text	   *tfm_tokenizer_piece_text(const char *name, int32 id);
/* ids to text: specials dropped, invalid UTF-8 replaced by U+FFFD */
text	   *tfm_tokenizer_decode(const char *name, const int32 *ids, int n);
text	   *tfm_tokenizer_decode_flags(const char *name, const int32 *ids, int n, bool continuation);
/* ids to text for tfm_detokenize: sized for these ids, stopped by a cancel */
text	   *tfm_tokenizer_detokenize(TfmCachedTokenizer *e, const int32 *ids, int n);
/* bytes as text: valid UTF-8 as is, other bytes as \xNN */
text	   *tfm_piece_text(const uint8_t *b, size_t len);
/* PostgreSQL text cannot hold NUL: a decoded U+0000 becomes U+FFFD (t may be freed) */
text	   *tfm_text_without_nul(text *t);

#endif							/* TFM_PG_TOKENIZER_CACHE_H */
