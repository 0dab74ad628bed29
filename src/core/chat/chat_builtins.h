/*
 * chat_builtins.h — what chat_builtins.c defines: what a chat template can
 * ask of values already evaluated (mapping keys, loop attributes, string
 * methods, filters, tests, raise_exception()).  Called by chat_eval.c;
 * uses only chat_value.h below it.
 */
#ifndef TFM_CHAT_BUILTINS_H
#define TFM_CHAT_BUILTINS_H

#include "chat_value.h"

/* v.k: a mapping's key, the loop's and a namespace's attributes; undefined for anything else */
int			render_attribute(render *r, const value *v, const char *k, size_t n, value *out,
							 int line);
/* self.name(args) on a string */
int			render_method(render *r, const char *name, size_t len, const value *self,
						  const value *args, int nargs, int line, value *out);
/* is there a function name()?  TFM_OK, or the failure (asked before its arguments are evaluated) */
int			render_function_exists(render *r, const char *name, size_t len, int line);
/* name(args): raise_exception(message), the one function, always returns its failure */
int			render_function(render *r, const char *name, size_t len, const value *args, int nargs,
							int line);
/* v | name */
int			render_filter(render *r, const char *name, size_t len, const value *v, int line,
						  value *out);
/* v is [not] name (negate: "is not") */
int			render_test(render *r, const char *name, size_t len, int negate, const value *v,
						int line, value *out);

#endif							/* TFM_CHAT_BUILTINS_H */
