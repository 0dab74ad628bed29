/*
 * tfm/chat_template.h — a model's chat template (the Jinja text of a
 * tokenizer_config.json's "chat_template") rendered for a conversation, as
 * transformers' apply_chat_template renders it (Jinja with trim_blocks and
 * lstrip_blocks, raise_exception, the special tokens bos_token and
 * eos_token), by a small interpreter of the subset of Jinja the published
 * templates use (src/core/chat/chat_template.c lists it).  A template
 * using anything else fails by name: when parsed (an unknown statement),
 * or when rendering reaches it (an unknown filter, test, method or
 * function).
 */
#ifndef TFM_CHAT_TEMPLATE_H
#define TFM_CHAT_TEMPLATE_H

#include <stddef.h>

#include "tfm/status.h"

#define TFM_CHAT_MAX_TEMPLATE_BYTES  (1 << 20)   /* a template's text */
#define TFM_CHAT_MAX_NESTING         64          /* blocks and parentheses inside each other */
#define TFM_CHAT_MAX_OUTPUT_BYTES    (64 << 20)  /* a rendered prompt */

typedef struct tfm_chat_template tfm_chat_template;

/* one turn of a conversation: role and content (UTF-8, NUL-terminated) */
typedef struct tfm_chat_message
{
	const char *role;
	const char *content;
} tfm_chat_message;

/* Parses a template (TFM_EINVAL with the line and what is wrong; TFM_ELIMIT
 * past the limits above). */
int  tfm_chat_template_parse(tfm_chat_template **out, const char *text, size_t len,
							 tfm_status *err);
void tfm_chat_template_free(tfm_chat_template *t);

/* Renders the template for n messages into *out (malloc'd, NUL-terminated,
 * *out_len bytes; the caller frees it).  bos and eos may be NULL (then the
 * names are undefined, as transformers leaves a missing token).  A
 * raise_exception of the template fails with TFM_EINVAL and its message. */
int  tfm_chat_template_render(char **out, size_t *out_len, const tfm_chat_template *t,
							  const tfm_chat_message *msgs, int n, int add_generation_prompt,
							  const char *bos, const char *eos, tfm_status *err);

#endif /* TFM_CHAT_TEMPLATE_H */
