/*
 * rows.h — column values to token ids (rows.c) and the tokenizers loaded
 * for the rest of the layer (tokenizer_cache.c).
 */
#ifndef TFM_ROWS_H
#define TFM_ROWS_H

#include "postgres.h"

#include "tfm/tokenizer.h"
#include "runtime/runtime.h"

typedef struct TfmSpecials
{
	int32		pad,
				unk,
				bos,
				eos,
				cls,
				sep;
} TfmSpecials;

/* a model's specials, checked with tfm_check_specials */
void		tfm_model_specials(const TfmModelRow *row, TfmSpecials *sp);
/* ERROR (invalid_parameter_value) naming the id and the vocabulary size if a
 * special the model's task uses is not a row of its vocabulary */
void		tfm_check_specials(const char *model, const tfm_config *c, const TfmSpecials *sp);
bool		tfm_column_is_ids(Oid type);
bool		tfm_column_is_text(Oid type);
/* ids of one value (palloc'd, *len of them) */
int32	   *tfm_datum_ids(Datum d, Oid type, const TfmModelRow *row, bool target, int *len);

/*
 * A classifier's input: <cls> first when it pools on it, then cut to
 * max_len by the model's truncation (tfm/truncate.h; the <cls> is always
 * kept); counts a cut in *truncated if not NULL.
 */
int32	   *tfm_classifier_input(const TfmModelRow *row, const TfmSpecials *sp, int32 *ids,
								 int n, int *out_n, int64 *truncated);

/* ---- tokenizers loaded once per backend (tokenizer_cache.c) ---- */
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

#endif							/* TFM_ROWS_H */
