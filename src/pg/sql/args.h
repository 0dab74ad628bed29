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

/*
 * The NULL rule (doc/reference.md, NULLs): a function of a text or int[]
 * input answers NULL for a NULL input.  STRICT functions get it from
 * PostgreSQL; a function whose optional arguments take NULL for "the
 * default" stays non-strict and asks tfm_args_null() about its model and
 * input arguments first: a scalar one then returns NULL, a set-returning
 * one no rows (tfm_srf_none()).
 */
bool		tfm_args_null(FunctionCallInfo fcinfo, int a, int b);
Datum		tfm_srf_none(FunctionCallInfo fcinfo);

char	   *tfm_text_arg(FunctionCallInfo fcinfo, int n, const char *what);
/* a text[] argument: not NULL, one-dimensional, NULL elements refused unless allowed */
int			tfm_text_array_arg(FunctionCallInfo fcinfo, int n, const char *what,
							   bool allow_nulls, Datum **elems, bool **nulls);
/*
 * A text[] argument's non-NULL texts (in order) and, once encoded, each
 * one's ids; tfm_texts_result puts their answers back in place, NULL for
 * the NULL elements.
 */
typedef struct TfmTexts
{
	int			n;				/* non-NULL texts */
	int			total;			/* elements, NULLs included */
	Datum	   *elems;			/* the n texts */
	bool	   *nulls;			/* per element (total) */
	int32	  **ids;
	int		   *lens;
} TfmTexts;
void		tfm_texts_arg(FunctionCallInfo fcinfo, int n, const char *what, TfmTexts *t);
/* the answers of the n texts (res[0..n)) as a text[] of total elements */
ArrayType  *tfm_texts_result(const TfmTexts *t, const Datum *res);
/* each text through encode (arg: its context), into t->ids and t->lens */
void		tfm_texts_encode(TfmTexts *t, int32 *(*encode) (void *arg, text *s, int *len),
							 void *arg);
/* a one-dimensional text[] of n values (nulls may be NULL) */
ArrayType  *tfm_text_array(Datum *values, bool *nulls, int n);

/*
 * The text[] forms and their rules, as they stand (each is tested); a NULL
 * element answers NULL (nothing runs for it) in every one:
 *   tfm_classify, tfm_embed: any count, passes of TFM_INFER_BATCH rows at
 *     most;
 *   tfm_translate: any count, decoded TFM_INFER_BATCH sources at a time;
 *   tfm_generate: at most 1024 non-NULL prompts, one batch.
 * tfm.work_mem splits any pass that does not fit.  TFM_INFER_BATCH:
 * runtime/infer/infer.h.
 */

#endif							/* TFM_PG_ARGS_H */
