/*
 * chat_eval.h — what chat_eval.c defines: a chat template's expressions
 * evaluated.  Called by chat_render.c's statements; uses chat_builtins.h
 * and chat_value.h below it.
 */
#ifndef TFM_CHAT_EVAL_H
#define TFM_CHAT_EVAL_H

#include "chat_value.h"

/* e evaluated one level deeper */
int			render_eval(render *r, const chat_expr *e, value *out);

#endif							/* TFM_CHAT_EVAL_H */
