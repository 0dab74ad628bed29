/*
 * args.h — the argument checks the SQL functions share (args.c).
 */
#ifndef TFM_PG_ARGS_H
#define TFM_PG_ARGS_H

#include "postgres.h"
#include "fmgr.h"
#include "utils/array.h"

#include "runtime/runtime.h"

#define TFM_ARG_NOT_NULL(n, what) \
	do { if (PG_ARGISNULL(n)) ereport(ERROR, \
		(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), \
		 errmsg("%s must not be NULL", what))); } while (0)

char	   *tfm_text_arg(FunctionCallInfo fcinfo, int n, const char *what);
/* a text[] argument: not NULL, one-dimensional, NULL elements refused unless allowed */
int			tfm_text_array_arg(FunctionCallInfo fcinfo, int n, const char *what,
							   bool allow_nulls, Datum **elems, bool **nulls);
/* a text[] argument without NULLs and, once encoded, each text's ids */
typedef struct TfmTexts
{
	int			n;
	Datum	   *elems;
	bool	   *nulls;
	int32	  **ids;
	int		   *lens;
} TfmTexts;
void		tfm_texts_arg(FunctionCallInfo fcinfo, int n, const char *what, TfmTexts *t);
/* each text through encode (arg: its context), into t->ids and t->lens */
void		tfm_texts_encode(TfmTexts *t, int32 *(*encode) (void *arg, text *s, int *len),
							 void *arg);
/* a one-dimensional text[] of n values (nulls may be NULL) */
ArrayType  *tfm_text_array(Datum *values, bool *nulls, int n);

/*
 * The text[] forms and their rules, as they stand (each is tested):
 *   tfm_classify, tfm_predict_proba, tfm_embed: NULL elements allowed (a
 *     NULL result), any count, passes of TFM_INFER_BATCH rows at most;
 *   tfm_translate: NULLs refused, any count, decoded TFM_INFER_BATCH
 *     sources at a time;
 *   tfm_generate: NULLs refused, at most 1024 prompts, one batch.
 * tfm.work_mem splits any pass that does not fit.  TFM_INFER_BATCH:
 * runtime/infer/infer.h.
 */

#endif							/* TFM_PG_ARGS_H */
