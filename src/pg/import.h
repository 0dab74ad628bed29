/*
 * import.h — shared declarations of tfm_import's files: the parsing of a
 * Hugging Face config.json (import_config.c) and tokenizer.json
 * (import_tokenizer.c) for the SQL entry points in import.c.
 */
#ifndef TFM_IMPORT_H
#define TFM_IMPORT_H

#include "postgres.h"
#include "utils/jsonb.h"

#include "tfm/hf_import.h"

/* what tfm keeps of a config.json besides the tfm_config */
typedef struct TfmHfConfig
{
	tfm_hf_params p;
	int			bos_id;			/* -1 if the config names none */
	int			eos_id;
	const char *model_type;
	int			n_labels;		/* BERT family: id2label in id order */
	char	  **labels;
} TfmHfConfig;

/* config.json, strictly: unknown model types and options refused by name */
void		tfm_hf_parse_config(Jsonb *config, TfmHfConfig *out);

/*
 * tokenizer.json: byte-level BPE, SentencePiece-style BPE or BERT
 * WordPiece; checked against the model's vocabulary size and stored as tfm
 * tokenizer name.  special_ids (TFM_TOK_N_SPECIALS of them, indexed by
 * tfm_tok_special) receives the stored tokenizer's special ids (INT_MAX
 * where not known), so that an encoder can check that its [CLS] and [SEP]
 * are ids of the checkpoint.
 */
void		tfm_hf_import_tokenizer(const char *name, Jsonb *tokenizer, int model_vocab,
									int32 *special_ids);
/* tokenizer.json of SentencePiece-style BPE with byte fallback (import_spiece.c) */
void		tfm_hf_import_spiece(const char *name, Jsonb *tokenizer, int model_vocab);

/* small jsonb helpers (import_config.c) */
JsonbValue *tfm_jget(JsonbContainer *c, const char *key, JsonbValue *buf);
const char *tfm_jtype(const JsonbValue *v);

#endif							/* TFM_IMPORT_H */
