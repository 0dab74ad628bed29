/*
 * tokenizer_chat.h — a stored tokenizer's chat settings (tokenizer_chat.c):
 * its template and special tokens, kept in options->'chat'.
 */
#ifndef TFM_PG_STORAGE_TOKENIZER_CHAT_H
#define TFM_PG_STORAGE_TOKENIZER_CHAT_H

#include "postgres.h"

#include "utils/jsonb.h"

/* a tokenizer's chat settings, options->'chat' (tokenizer_chat.c): stored as
 * the given JSON text; read back (NULL when it has none) */
void		tfm_tokenizer_chat_store(const char *tokenizer, const char *chat_json);
Jsonb	   *tfm_tokenizer_chat_read(const char *tokenizer);

#endif							/* TFM_PG_STORAGE_TOKENIZER_CHAT_H */
