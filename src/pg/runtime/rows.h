/*
 * tfm_rows.h — column values to token ids (rows.c) and the tokenizer
 * services the rest of the PostgreSQL layer uses (tokenizer_sql.c).
 */
#ifndef TFM_ROWS_H
#define TFM_ROWS_H

#include "postgres.h"

#include "tfm_pg.h"

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
 * max_len (head and tail, or head); counts a cut in *truncated if not NULL.
 */
int32	   *tfm_classifier_input(const TfmModelRow *row, const TfmSpecials *sp, int32 *ids,
								 int n, int *out_n, bool head_tail, int64 *truncated);

/* tokenizer_sql.c */
int32		tfm_tokenizer_import_gpt2(const char *name, const char *enc, size_t enc_len,
									  const char *bpe, size_t bpe_len);
int32		tfm_tokenizer_import_spiece(const char *name, const uint8_t *const *pieces,
										const size_t *lens, int32 n, const int32_t *merge_lr,
										int32 n_merges, int32 unk, int32 bos, int32 eos,
										bool text_bos);
/* a tokenizer.json's byte-level BPE (tfm_tok_import_hf_bpe); the ids of
 * the stored tokenizer's specials into special_ids */
int32		tfm_tokenizer_import_hf_bpe(const char *name, const uint8_t *const *pieces,
										const size_t *lens, const uint8_t *literal, int32 n,
										const int32_t *merge_lr, int32 n_merges,
										const int32_t *specials, uint32 flags,
										int32_t *special_ids);
void		tfm_tokenizer_specials(const char *name, TfmSpecials *sp);
struct tfm_tok_info;
void		tfm_tokenizer_store_pieces(const char *name, const struct tfm_tok_info *info,
									   const uint8 *const *pieces, const size_t *lens);
int32	   *tfm_tokenizer_encode(const char *name, const char *text, size_t len, int *n);
struct tfm_tokenizer;
/* the core tokenizer (owned by the cache; valid for the current call) */
struct tfm_tokenizer *tfm_tokenizer_get(const char *name);
/* an id's piece as text (non-UTF-8 bytes as \xNN) */
text	   *tfm_tokenizer_piece_text(const char *name, int32 id);
/* ids to text: specials dropped, invalid UTF-8 replaced by U+FFFD */
text	   *tfm_tokenizer_decode(const char *name, const int32 *ids, int n);
text	   *tfm_tokenizer_decode_flags(const char *name, const int32 *ids, int n, bool continuation);

#endif							/* TFM_ROWS_H */
