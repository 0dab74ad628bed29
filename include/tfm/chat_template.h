/*
 * tfm/chat_template.h — a model's chat template (the Jinja text of a
 * tokenizer_config.json's "chat_template") rendered for a conversation, as
 * transformers' apply_chat_template renders it (Jinja with trim_blocks and
 * lstrip_blocks, raise_exception, the special tokens bos_token and
 * eos_token), by a small interpreter of the subset of Jinja the published
 * templates use (src/core/chat/chat_parse.c lists it).  A template
 * using anything else fails by name: when parsed (an unknown statement),
 * or when rendering reaches it (an unknown filter, test, method or
 * function).
 *
 * Templates are hostile input (any role can render one, and a template
 * imported for a model runs in every later tfm_chat), so parsing and
 * rendering are bounded: nesting (TFM_CHAT_MAX_NESTING, every recursive
 * rule counted together), memory (the options' budget, every byte of the
 * template, its values and the output counted, through the host's
 * allocator) and time (the options' cancel poll, asked every
 * TFM_CHAT_POLL_UNITS units of work: a step of the interpreter is 64, a
 * byte copied, compared or scanned one; about 0.1 ms apart, at most ~10 ms
 * in test_chat_fuzz, where one step copies megabytes).
 */
#ifndef TFM_CHAT_TEMPLATE_H
#define TFM_CHAT_TEMPLATE_H

#include <stddef.h>

#include "tfm/status_codes.h"

#define TFM_CHAT_MAX_TEMPLATE_BYTES  (1 << 20)   /* a template's text */
/*
 * Blocks, brackets, operators, filters, attributes, calls and lists inside
 * each other, all counted together: a {% for %} inside an {% if %} holding
 * {{ -(a.b | trim) }} is 2 + 4 levels deep.  Lists built while rendering
 * ({% set l = [l] %}) nest no deeper either.
 */
#define TFM_CHAT_MAX_NESTING         64
#define TFM_CHAT_MAX_OUTPUT_BYTES    (64 << 20)  /* a rendered prompt, and any string */
#define TFM_CHAT_POLL_UNITS          (1 << 18)   /* units of work between two cancel polls */

typedef struct tfm_chat_template tfm_chat_template;

/* one turn of a conversation: role and content (UTF-8, NUL-terminated) */
typedef struct tfm_chat_message
{
	const char *role;
	const char *content;
} tfm_chat_message;

/*
 * How a parse or a render runs; all zero (or NULL for the whole struct)
 * is malloc, no budget and no cancel.
 */
typedef struct tfm_chat_opts
{
	size_t		budget;			/* bytes held at once at most; 0: no budget */
	/* polled as the work goes: non-zero stops it with TFM_ECANCELED */
	int			(*cancel) (void *arg);
	void	   *cancel_arg;
	/* the host's allocator (NULL: malloc and free); NULL from alloc is TFM_ENOMEM */
	void	   *(*alloc) (void *arg, size_t n);
	void		(*dealloc) (void *arg, void *p);
	void	   *alloc_arg;
	/* out: filled by each call */
	size_t		peak;			/* the most bytes held at once (a render: with the template's) */
	int			over_budget;	/* 1: the call failed with TFM_ELIMIT for the budget */
} tfm_chat_opts;

/*
 * Parses a template (TFM_EINVAL with the line and what is wrong; TFM_ELIMIT
 * past the limits above or the budget; TFM_ECANCELED).  The template keeps
 * o's allocator for its memory, which tfm_chat_template_free returns.
 */
int			tfm_chat_template_parse(tfm_chat_template **out, const char *text, size_t len,
									tfm_chat_opts *o, tfm_status *err);
void		tfm_chat_template_free(tfm_chat_template *t);
/* the bytes a parsed template holds (counted again by every render of it) */
size_t		tfm_chat_template_bytes(const tfm_chat_template *t);

/*
 * Renders the template for n messages into *out (NUL-terminated, *out_len
 * bytes, from o's alloc: the caller frees it with o's dealloc, or free()
 * without one).  bos and eos may be NULL (then the names are undefined, as
 * transformers leaves a missing token).  A raise_exception of the template
 * fails with TFM_EINVAL and its message; the limits, the budget (which the
 * template's own bytes count against) and a cancel as the parse does.
 */
int			tfm_chat_template_render(char **out, size_t *out_len, const tfm_chat_template *t,
									 const tfm_chat_message *msgs, int n,
									 int add_generation_prompt, const char *bos,
									 const char *eos, tfm_chat_opts *o, tfm_status *err);

/*
 * The same for a context given as JSON text: an object whose members are
 * the template's names, as transformers passes apply_chat_template's
 * arguments: "messages" (objects with any keys: role, content,
 * reasoning_content, tool_calls [{"function": {"name", "arguments"}}] ...),
 * "tools", "add_generation_prompt", "bos_token", "eos_token",
 * "enable_thinking" and any other.  Read as Python's json.loads reads it
 * (src/core/chat/chat_json.c: key order kept, numbers that are not 64-bit
 * integers kept as their text); a context that is not a JSON object, or
 * nests deeper than TFM_CHAT_MAX_NESTING, fails with TFM_EINVAL or
 * TFM_ELIMIT.  defaults (dlen bytes; NULL: none) is another such object
 * whose members are the names the context does not give (a host's
 * add_generation_prompt, bos_token, eos_token).
 */
int			tfm_chat_template_render_json(char **out, size_t *out_len,
										  const tfm_chat_template *t, const char *context,
										  size_t len, const char *defaults, size_t dlen,
										  tfm_chat_opts *o, tfm_status *err);

#endif /* TFM_CHAT_TEMPLATE_H */
