/*
 * chat_prompt.h — a conversation made a language model's prompt (chat_prompt.c): the
 * messages checked, the model's chat template rendered, the prompt's ids
 * with its special tokens as their ids, and the ids generation stops at.
 */
#ifndef TFM_PG_CHAT_H
#define TFM_PG_CHAT_H

#include "postgres.h"

#include "utils/jsonb.h"

#include "tfm/chat_template.h"
#include "runtime/rows.h"
#include "storage/models/models.h"

#define TFM_CHAT_MAX_MESSAGES 10000

/* a model's chat settings (its tokenizer's options->'chat') */
typedef struct TfmChat
{
	char	   *template_text;
	char	   *bos,			/* NULL: undefined in the template */
			   *eos;
	int			n_specials;		/* texts a prompt is cut at, and their ids */
	char	  **special_text;
	int32	   *special_id;
	int			n_stop;			/* ids generation stops at */
	int32	   *stop_ids;
} TfmChat;

/* the chat settings of an LM with a tokenizer (an error when it has none) */
void		tfm_chat_settings(const TfmModelRow *row, TfmChat *c);
/* messages: a non-empty JSON array of {"role": system|user|assistant, "content": text} */
tfm_chat_message *tfm_chat_messages(Jsonb *messages, int *n);
/*
 * A template parsed as tfm_chat would (an error if it cannot run: a
 * statement tfm lacks, nesting past the limit, more than tfm.work_mem).
 */
void		tfm_chat_check_template(const char *template_text);
/* true when tfm can run the template; else false and *why the parser's message (memory still raises) */
bool		tfm_chat_template_parses(const char *template_text, char **why);
/*
 * The template rendered for the messages (palloc'd): within tfm.work_mem
 * (54000 naming it), ended by a cancel or statement_timeout.
 */
char	   *tfm_chat_render(const char *template_text, const tfm_chat_message *msgs, int n,
							bool add_generation_prompt, const char *bos, const char *eos,
							size_t *len);
/*
 * The template rendered for a context (JSON text of an object: messages
 * with any keys, tools, enable_thinking ..., as apply_chat_template's
 * arguments), add_generation_prompt true and bos_token / eos_token these
 * (NULL: none) unless the context names them; as tfm_chat_render otherwise.
 */
char	   *tfm_chat_render_context(const char *template_text, const char *context,
									const char *bos, const char *eos, size_t *len);
/* a rendered prompt's ids: the specials as their ids, the text between through the tokenizer */
int32	   *tfm_chat_prompt_ids(const TfmModelRow *row, const TfmChat *c, const char *prompt,
								size_t len, int *n);

#endif							/* TFM_PG_CHAT_H */
