/*
 * vector.c — tfm_cosine(real[], real[]) and the <=> operator (cosine
 * distance) for searching stored embeddings:
 *
 *   SELECT id FROM docs ORDER BY embedding <=> tfm_embed('minilm', $1) LIMIT 10;
 *
 * Sums in double precision.  Arrays must be one-dimensional, of the same
 * length, without NULLs, of finite values; a zero vector has no direction,
 * so its cosine is NULL.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/array.h"

static const float4 *
vector_arg(ArrayType *a, const char *what, int *n)
{
	if (ARR_NDIM(a) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("%s must be a one-dimensional array", what)));
	if (ARR_HASNULL(a))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not contain NULL", what)));
	*n = ARR_NDIM(a) == 0 ? 0 : ARR_DIMS(a)[0];
	return (const float4 *) ARR_DATA_PTR(a);
}

/* cosine of two arrays; false if either has no direction */
static bool
cosine(FunctionCallInfo fcinfo, double *out)
{
	int			na,
				nb;
	const float4 *a = vector_arg(PG_GETARG_ARRAYTYPE_P(0), "the first vector", &na);
	const float4 *b = vector_arg(PG_GETARG_ARRAYTYPE_P(1), "the second vector", &nb);
	double		dot = 0,
				aa = 0,
				bb = 0;

	if (na != nb)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("vectors of different lengths: %d and %d", na, nb)));
	for (int i = 0; i < na; i++)
	{
		dot += (double) a[i] * b[i];
		aa += (double) a[i] * a[i];
		bb += (double) b[i] * b[i];
	}
	if (!isfinite(dot) || !isfinite(aa) || !isfinite(bb))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("vectors must hold finite values")));
	if (aa == 0 || bb == 0)
		return false;
	*out = dot / (sqrt(aa) * sqrt(bb));
	/* rounding may step just outside [-1, 1] */
	*out = *out > 1 ? 1 : (*out < -1 ? -1 : *out);
	return true;
}

PG_FUNCTION_INFO_V1(tfm_cosine);
Datum
tfm_cosine(PG_FUNCTION_ARGS)
{
	double		c;

	if (!cosine(fcinfo, &c))
		PG_RETURN_NULL();
	PG_RETURN_FLOAT8(c);
}

PG_FUNCTION_INFO_V1(tfm_cosine_distance);
Datum
tfm_cosine_distance(PG_FUNCTION_ARGS)
{
	double		c;

	if (!cosine(fcinfo, &c))
		PG_RETURN_NULL();
	PG_RETURN_FLOAT8(1.0 - c);
}
