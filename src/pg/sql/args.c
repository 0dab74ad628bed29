/*
 * args.c — the argument checks the SQL functions share: a text argument
 * that must not be NULL, the NULL rule's early answers, a text[] argument
 * (and its texts' ids), and text[] results.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "sql/args.h"

/* whether argument a or b (-1: none) is NULL */
bool
tfm_args_null(FunctionCallInfo fcinfo, int a, int b)
{
	return (a >= 0 && PG_ARGISNULL(a)) || (b >= 0 && PG_ARGISNULL(b));
}

/* a set-returning function's answer to a NULL input: no rows */
Datum
tfm_srf_none(FunctionCallInfo fcinfo)
{
	InitMaterializedSRF(fcinfo, 0);
	return (Datum) 0;
}

char *
tfm_text_arg(FunctionCallInfo fcinfo, int n, const char *what)
{
	char	   *s;

	if (PG_ARGISNULL(n))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be NULL", what)));
	s = text_to_cstring(PG_GETARG_TEXT_PP(n));
	return s;
}

int
tfm_text_array_arg(FunctionCallInfo fcinfo, int n, const char *what, bool allow_nulls,
				   Datum **elems, bool **nulls)
{
	ArrayType  *a;
	int			count;

	if (PG_ARGISNULL(n))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be NULL", what)));
	a = PG_GETARG_ARRAYTYPE_P(n);
	if (ARR_NDIM(a) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("%s must be a one-dimensional array", what)));
	deconstruct_array(a, TEXTOID, -1, false, TYPALIGN_INT, elems, nulls, &count);
	if (!allow_nulls)
		for (int i = 0; i < count; i++)
			if ((*nulls)[i])
				ereport(ERROR,
						(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
						 errmsg("%s must not contain NULL", what)));
	return count;
}

void
tfm_texts_arg(FunctionCallInfo fcinfo, int n, const char *what, TfmTexts *t)
{
	Datum	   *elems;

	t->total = tfm_text_array_arg(fcinfo, n, what, true, &elems, &t->nulls);
	t->elems = palloc(sizeof(Datum) * Max(t->total, 1));
	t->n = 0;
	for (int i = 0; i < t->total; i++)
		if (!t->nulls[i])
			t->elems[t->n++] = elems[i];
	t->ids = NULL;
	t->lens = NULL;
}

ArrayType *
tfm_texts_result(const TfmTexts *t, const Datum *res)
{
	Datum	   *all = palloc(sizeof(Datum) * Max(t->total, 1));

	for (int i = 0, k = 0; i < t->total; i++)
		all[i] = t->nulls[i] ? (Datum) 0 : res[k++];
	return tfm_text_array(all, t->nulls, t->total);
}

void
tfm_texts_encode(TfmTexts *t, int32 *(*encode) (void *arg, text *s, int *len), void *arg)
{
	t->ids = palloc(sizeof(int32 *) * Max(t->n, 1));
	t->lens = palloc(sizeof(int) * Max(t->n, 1));
	for (int i = 0; i < t->n; i++)
	{
		CHECK_FOR_INTERRUPTS();
		t->ids[i] = encode(arg, DatumGetTextPP(t->elems[i]), &t->lens[i]);
	}
}

ArrayType *
tfm_text_array(Datum *values, bool *nulls, int n)
{
	int			dims[1] = {n},
				lbs[1] = {1};

	if (n == 0)
		return construct_empty_array(TEXTOID);
	return construct_md_array(values, nulls, 1, dims, lbs, TEXTOID, -1, false, TYPALIGN_INT);
}
