/*
 * translate.c — encoder-decoder inference in SQL: tfm_translate (one source
 * or an array decoded together) and tfm_translate_nbest.
 *
 * Decoding is beam search over the key/value-cached decoder (beam 1 is
 * greedy), with the encoder's output and every layer's cross-attention keys
 * and values computed once per source.  Sources longer than max_len keep
 * their first max_len tokens.  max_tokens defaults to 2 · source tokens +
 * 10, at most max_len − 1 with learned positions.  The search itself is
 * driven by runtime/infer/translator.c.  Options left NULL take an imported
 * model's generation settings (import/generation_config.c), else beam 4
 * and length penalty 0.6.  A NULL model or source answers NULL (no rows),
 * a NULL source of an array NULL (args.h).
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

#include "sql/args.h"
#include "runtime/infer/infer.h"
#include "storage/models/models.h"

#define TFM_MAX_BEAM 64

/* the options of a call (unset: TR_OPTS_UNSET's markers, the model's
 * defaults filled in by tfm_tr_defaults once its row is read) */
static void
parse_tr_opts(FunctionCallInfo fcinfo, int beam_arg, int lp_arg, int max_arg, TrOpts *o)
{
	TrOpts		unset = TR_OPTS_UNSET;

	*o = unset;
	if (!PG_ARGISNULL(beam_arg))
	{
		o->beam = PG_GETARG_INT32(beam_arg);
		if (o->beam < 1 || o->beam > TFM_MAX_BEAM)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("beam must be between 1 and %d, not %d", TFM_MAX_BEAM, o->beam)));
	}
	if (lp_arg >= 0 && !PG_ARGISNULL(lp_arg))
	{
		o->length_penalty = PG_GETARG_FLOAT4(lp_arg);
		if (!(o->length_penalty >= 0.0f) || isinf(o->length_penalty))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("length_penalty must not be negative")));
	}
	if (max_arg >= 0 && !PG_ARGISNULL(max_arg))
	{
		o->max_tokens = PG_GETARG_INT32(max_arg);
		if (o->max_tokens < 1 || o->max_tokens > 100000)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("max_tokens must be between 1 and 100000, not %d", o->max_tokens)));
	}
}

/* the source text of argument 1 translated by model name: *nbest hypotheses
 * (0: as many as the beam, which the model's defaults may set) */
static tfm_hyp *
translate_one(FunctionCallInfo fcinfo, const char *name, TrOpts *o, int *nbest,
			  const TfmModelRow **rowp)
{
	tfm_model  *m = tfm_get_s2s(name, rowp);
	int32	   *ids;
	int			n;
	tfm_hyp    *h;

	tfm_tr_defaults(o, *rowp);
	if (*nbest == 0)
		*nbest = o->beam;
	if (*nbest < 1 || *nbest > o->beam)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("n must be between 1 and beam (%d), not %d", o->beam, *nbest)));
	h = palloc(sizeof(tfm_hyp) * *nbest);
	ids = tfm_source_ids(*rowp, PG_GETARG_TEXT_PP(1), &n);
	tfm_translate_sources(m, *rowp, &ids, &n, 1, o, *nbest, h);
	return h;
}

PG_FUNCTION_INFO_V1(tfm_translate);
Datum
tfm_translate(PG_FUNCTION_ARGS)
{
	char	   *name;
	const TfmModelRow *row;
	TrOpts		o;
	tfm_hyp    *h;
	text	   *res;
	int			one = 1;

	if (tfm_args_null(fcinfo, 0, 1))
		PG_RETURN_NULL();
	name = tfm_text_arg(fcinfo, 0, "model");
	parse_tr_opts(fcinfo, 2, 3, 4, &o);
	h = translate_one(fcinfo, name, &o, &one, &row);
	res = tfm_hyp_text(row, h);
	tfm_hyps_free(h, 1);
	PG_RETURN_TEXT_P(res);
}

/* a source of tfm_translate(model, text[]): its ids */
static int32 *
source_text_ids(void *arg, text *t, int *len)
{
	return tfm_source_ids(arg, t, len);
}

PG_FUNCTION_INFO_V1(tfm_translate_batch);
Datum
tfm_translate_batch(PG_FUNCTION_ARGS)
{
	char	   *name;
	TfmTexts	src;
	TrOpts		o;
	const TfmModelRow *row;
	tfm_model  *m;
	tfm_hyp    *h;
	Datum	   *res;

	if (tfm_args_null(fcinfo, 0, 1))
		PG_RETURN_NULL();
	name = tfm_text_arg(fcinfo, 0, "model");
	tfm_texts_arg(fcinfo, 1, "sources", &src);
	parse_tr_opts(fcinfo, 2, 3, 4, &o);
	m = tfm_get_s2s(name, &row);
	tfm_tr_defaults(&o, row);
	if (src.n == 0)
		PG_RETURN_ARRAYTYPE_P(tfm_texts_result(&src, NULL));
	tfm_texts_encode(&src, source_text_ids, unconstify(TfmModelRow *, row));
	h = palloc(sizeof(tfm_hyp) * src.n);
	res = palloc(sizeof(Datum) * src.n);
	/* decode in groups, so memory stays bounded */
	for (int start = 0; start < src.n; start += TFM_INFER_BATCH)
	{
		int			cnt = Min(TFM_INFER_BATCH, src.n - start);

		tfm_translate_sources(m, row, src.ids + start, src.lens + start, cnt, &o, 1, h + start);
		for (int i = start; i < start + cnt; i++)
			res[i] = PointerGetDatum(tfm_hyp_text(row, &h[i]));
		tfm_hyps_free(h + start, cnt);
	}
	PG_RETURN_ARRAYTYPE_P(tfm_texts_result(&src, res));
}

PG_FUNCTION_INFO_V1(tfm_translate_nbest);
Datum
tfm_translate_nbest(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *name;
	const TfmModelRow *row;
	TrOpts		o;
	int			nbest;
	tfm_hyp    *h;

	if (tfm_args_null(fcinfo, 0, 1))
		return tfm_srf_none(fcinfo);
	name = tfm_text_arg(fcinfo, 0, "model");
	/* length_penalty and max_tokens came with 0.4 (0.3's SQL passes 4 arguments) */
	parse_tr_opts(fcinfo, 2, PG_NARGS() > 4 ? 4 : -1, PG_NARGS() > 5 ? 5 : -1, &o);
	nbest = PG_ARGISNULL(3) ? 0 : PG_GETARG_INT32(3);
	if (!PG_ARGISNULL(3) && nbest < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("n must be between 1 and beam, not %d", nbest)));
	InitMaterializedSRF(fcinfo, 0);
	h = translate_one(fcinfo, name, &o, &nbest, &row);
	for (int i = 0; i < nbest; i++)
	{
		Datum		v[3];
		bool		nulls[3] = {false, false, false};

		if (h[i].n < 0)
			continue;
		v[0] = Int32GetDatum(i + 1);
		v[1] = PointerGetDatum(tfm_hyp_text(row, &h[i]));
		v[2] = Float8GetDatum((double) h[i].score);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, nulls);
	}
	tfm_hyps_free(h, nbest);
	return (Datum) 0;
}
