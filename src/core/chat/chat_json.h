/*
 * chat_json.h — what chat_json.c defines: JSON text read into a chat
 * template's values (the context of tfm_chat_template_render_json:
 * messages with their tool calls, tools, enable_thinking) and values
 * written as JSON by the tojson filter.  Uses chat_value.h below it.
 */
#ifndef TFM_CHAT_JSON_H
#define TFM_CHAT_JSON_H

#include "chat_value.h"

/* text (len bytes) parsed into *out, in the arena; TFM_EINVAL with the offset of what is wrong */
int			render_json_parse(render *r, const char *text, size_t len, value *out);
/* v | tojson, as transformers' (Python's json.dumps with ensure_ascii=False): a string */
int			render_tojson(render *r, const value *v, int line, value *out);

#endif							/* TFM_CHAT_JSON_H */
