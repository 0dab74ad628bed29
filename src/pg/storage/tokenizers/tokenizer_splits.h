/*
 * tokenizer_splits.h — the parts of a stored tokenizer kept as JSON in its
 * options (tokenizer_splits.c): its Split rules and its added tokens found
 * in text, written when it is stored and set again when it is read.
 */
#ifndef TFM_PG_STORAGE_TOKENIZER_SPLITS_H
#define TFM_PG_STORAGE_TOKENIZER_SPLITS_H

#include "postgres.h"

#include "lib/stringinfo.h"
#include "utils/jsonb.h"

#include "tfm/tokenizer.h"

/* a tokenizer's Split rules: as options' "splits" JSON (appended to buf),
 * and added back to a loaded tokenizer from that JSON */
void		tfm_tokenizer_splits_json(StringInfo buf, const tfm_tokenizer *t);
void		tfm_tokenizer_add_splits(tfm_tokenizer *t, const char *name, Jsonb *splits);
/* a tokenizer's added tokens found in text: as options' "added" JSON
 * (appended to buf), and set again on a loaded tokenizer (NULL: none) */
void		tfm_tokenizer_added_json(StringInfo buf, const tfm_tokenizer *t);
void		tfm_tokenizer_set_added_json(tfm_tokenizer *t, const char *name, Jsonb *added);

#endif							/* TFM_PG_STORAGE_TOKENIZER_SPLITS_H */
