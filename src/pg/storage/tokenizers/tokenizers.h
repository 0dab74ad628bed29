/*
 * tokenizers.h — tokenizers in schema tfm (storage/tokenizers/): their rows
 * in tfm.tokenizers, tfm.vocab and tfm.merges (tokenizers.c).  Their Split
 * rules and added tokens (tokenizer_splits.h) and chat settings
 * (tokenizer_chat.h) live in tfm.tokenizers.options.
 */
#ifndef TFM_PG_STORAGE_TOKENIZERS_H
#define TFM_PG_STORAGE_TOKENIZERS_H

#include "postgres.h"

#include "storage/storage.h"

/* ---- tokenizers' rows (tokenizers.c) ---- */
/*
 * read_only: from the aggregate's transition function, which may run in a
 * parallel worker.  Otherwise the check takes a new snapshot and command id,
 * so it also sees what this statement stored a moment ago.
 */
bool		tfm_tokenizer_exists(const char *name, bool read_only);
/* a name for a new tokenizer: valid and not taken */
void		tfm_tokenizer_check_new(const char *name, bool read_only);
void		tfm_tokenizer_store(const char *name, const tfm_tokenizer *t, int32 min_count, Oid owner);
char	   *tfm_tokenizer_summary(const char *name, const tfm_tokenizer *t);
/* read a tokenizer's rows and rebuild it; its row id in *idp */
tfm_tokenizer *tfm_tokenizer_read(const char *name, int32 *idp);
/* its row id (-1: none) and whether the current user may use it */
int32		tfm_tokenizer_lookup(const char *name, bool *may_use);
/* drop a tokenizer no model uses (the caller checked it owns it) */
void		tfm_tokenizer_delete(const char *name);
/* the added tokens of a tokenizer.json: ids[k] with TFM_TOK_ADDED_* flags */
typedef struct TfmAddedTokens
{
	int32_t    *ids;
	uint8_t    *flags;
	int			n;
} TfmAddedTokens;
/* tokenizers built from imported parts and stored under name (tfm_import) */
int32		tfm_tokenizer_import_gpt2(const char *name, const char *enc, size_t enc_len,
									  const char *bpe, size_t bpe_len);
int32		tfm_tokenizer_import_spiece(const char *name, const uint8_t *const *pieces,
										const size_t *lens, int32 n, const int32_t *merge_lr,
										int32 n_merges, int32 unk, int32 bos, int32 eos,
										uint32 flags, const TfmAddedTokens *added);
void		tfm_tokenizer_set_imported_added(tfm_tokenizer *t, const TfmAddedTokens *added);
/* one Split rule of a tokenizer.json's pre-tokenizer (TFM_TOK_INFO_SPLIT) */
typedef struct TfmSplitRule
{
	const char *pattern;		/* a PCRE2 regular expression */
	int			behavior;		/* tfm_tok_split_behavior */
	bool		invert;
} TfmSplitRule;

/* a tokenizer.json's byte-level BPE (tfm_tok_import_hf_bpe) with its Split
 * rules (n_rules of them, with the SPLIT flag); the ids of the stored
 * tokenizer's specials into special_ids */
int32		tfm_tokenizer_import_hf_bpe(const char *name, const uint8_t *const *pieces,
										const size_t *lens, const uint8_t *literal, int32 n,
										const int32_t *merge_lr, int32 n_merges,
										const int32_t *specials, uint32 flags,
										const TfmSplitRule *rules, int n_rules,
										const TfmAddedTokens *added, int32_t *special_ids);
/* a tokenizer.json's SentencePiece Unigram (tfm_tok_import_unigram); the
 * ids of the stored tokenizer's specials into special_ids */
void		tfm_tokenizer_import_unigram(const char *name, const uint8_t *const *pieces,
										 const size_t *lens, int32 n,
										 const tfm_tok_unigram_spec *spec, int32_t *special_ids);
void		tfm_tokenizer_store_pieces(const char *name, const tfm_tok_info *info,
									   const uint8 *const *pieces, const size_t *lens);

#endif							/* TFM_PG_STORAGE_TOKENIZERS_H */
