/*
 * translate.c — encoder-decoder inference in SQL: tfm_translate (one source
 * or an array decoded together) and tfm_translate_nbest.
 *
 * Decoding is beam search over the key/value-cached decoder (beam 1 is
 * greedy), with the encoder's output and every layer's cross-attention keys
 * and values computed once per source.  Sources longer than max_len keep
 * their first max_len tokens.  max_tokens defaults to 2 · source tokens +
 * 10, at most max_len − 1 with learned positions.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

#include "tfm/beam.h"
#include "tfm/blas.h"
#include "sql/args.h"
#include "runtime/rows.h"
#include "sql/translate.h"

#define TFM_MAX_BEAM 64

tfm_model *
tfm_get_s2s(const char *name, const TfmModelRow **rowp)
{
	return tfm_model_for(name, TFM_TASK_SEQ2SEQ, true, rowp);
}

const char *
tfm_target_tokenizer(const TfmModelRow *row)
{
	return row->target_tokenizer ? row->target_tokenizer : row->tokenizer;
}

int32 *
tfm_source_ids(const TfmModelRow *row, text *t, int *n)
{
	int32	   *ids = tfm_tokenizer_encode(row->tokenizer, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t), n);

	if (*n == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot translate an empty source")));
	if (*n > row->cfg.max_len)
		*n = row->cfg.max_len;
	return ids;
}


static void
parse_tr_opts(FunctionCallInfo fcinfo, int beam_arg, int lp_arg, int max_arg, TrOpts *o)
{
	o->beam = PG_ARGISNULL(beam_arg) ? 4 : PG_GETARG_INT32(beam_arg);
	if (o->beam < 1 || o->beam > TFM_MAX_BEAM)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("beam must be between 1 and %d, not %d", TFM_MAX_BEAM, o->beam)));
	o->length_penalty = lp_arg < 0 || PG_ARGISNULL(lp_arg) ? 0.6f : PG_GETARG_FLOAT4(lp_arg);
	if (!(o->length_penalty >= 0.0f) || isinf(o->length_penalty))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("length_penalty must not be negative")));
	o->max_tokens = max_arg < 0 || PG_ARGISNULL(max_arg) ? 0 : PG_GETARG_INT32(max_arg);
	if (max_arg >= 0 && !PG_ARGISNULL(max_arg) && (o->max_tokens < 1 || o->max_tokens > 100000))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_tokens must be between 1 and 100000, not %d", o->max_tokens)));
}

/*
 * Beam search holds malloc'd state: it must not be left by longjmp.  So the
 * callback only says that an interrupt is pending; the search frees its
 * buffers and returns -2, and the interrupt is taken afterwards.
 */
static int
cancel_check(void *arg)
{
	(void) arg;
	/*
	 * Only what ends the statement stops the search: other interrupts (a
	 * procsignal barrier, say) stay pending for the next CHECK_FOR_INTERRUPTS
	 * and must not turn into an error here.
	 */
	return INTERRUPTS_PENDING_CONDITION() && (QueryCancelPending || ProcDiePending) ? 1 : 0;
}

/* translate n sources with nbest hypotheses each; out has n · nbest entries */
void
tfm_translate_sources(tfm_model *m, const TfmModelRow *row, int32 **src, const int *lens, int n,
		  const TrOpts *o, int nbest, tfm_hyp *out)
{
	const tfm_config *c = &m->cfg;
	TfmSpecials sp;
	int			Ts = 1,
				maxlen = 1;
	int32	   *buf;
	tfm_beam_opts bo;
	int			rc;

	tfm_model_specials(row, &sp);
	for (int i = 0; i < n; i++)
		Ts = Max(Ts, lens[i]);
	buf = palloc(sizeof(int32) * n * Ts);
	for (int i = 0; i < n; i++)
	{
		memcpy(buf + (size_t) i * Ts, src[i], sizeof(int32) * lens[i]);
		for (int t = lens[i]; t < Ts; t++)
			buf[(size_t) i * Ts + t] = sp.pad;
		maxlen = Max(maxlen, 2 * lens[i] + 10);
	}
	memset(&bo, 0, sizeof(bo));
	bo.beam = o->beam;
	bo.nbest = nbest;
	bo.length_penalty = o->length_penalty;
	bo.max_tokens = o->max_tokens > 0 ? o->max_tokens : maxlen;
	bo.bos = sp.bos;
	bo.eos = sp.eos;
	bo.pad = sp.pad;
	if (c->positions == TFM_POS_LEARNED && bo.max_tokens > c->max_len - 1)
	{
		if (o->max_tokens > 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("max_tokens must be at most %d for model \"%s\" (max_len − 1, learned positions)",
							c->max_len - 1, row->name)));
		bo.max_tokens = c->max_len - 1;
	}
	{
		size_t		need = tfm_beam_bytes(c, n, Ts, &bo, tfm_model_precision(m) != TFM_PREC_FP32,
										  tfm_get_threads()) + sizeof(int32) * n * Ts;

		if (n > 1 && !tfm_work_mem_fits(m, need))
		{
			/* sources decoded together: in two halves */
			int			h = n / 2;

			pfree(buf);
			tfm_translate_sources(m, row, src, lens, h, o, nbest, out);
			tfm_translate_sources(m, row, src + h, lens + h, n - h, o, nbest, out + (size_t) h * nbest);
			return;
		}
		tfm_work_mem_check(m, need, "translating with", row->name,
						   "beam, max_tokens or the length of the source");
	}
	{
		/* no longjmp out of the search: its own check stops it cleanly */
		void		(*poll) (void *) = m->poll;

		m->poll = NULL;
		rc = tfm_beam_search(m, buf, n, Ts, &bo, out, cancel_check, NULL);
		m->poll = poll;
	}
	if (rc == TFM_ECANCELED)
	{
		CHECK_FOR_INTERRUPTS();
		tfm_raise_code(rc, "canceling the translation");
	}
	if (rc != 0)
		tfm_raise_code(TFM_ENOMEM, "out of memory translating with model \"%s\"", row->name);
}

text *
tfm_hyp_text(const TfmModelRow *row, const tfm_hyp *h)
{
	if (h->n <= 0)
		return cstring_to_text("");
	return tfm_tokenizer_decode(tfm_target_tokenizer(row), h->ids, h->n);
}

/* the source text of argument 1 translated by model name: nbest hypotheses */
static tfm_hyp *
translate_one(FunctionCallInfo fcinfo, const char *name, const TrOpts *o, int nbest,
			  const TfmModelRow **rowp)
{
	tfm_model  *m = tfm_get_s2s(name, rowp);
	int32	   *ids;
	int			n;
	tfm_hyp    *h = palloc(sizeof(tfm_hyp) * nbest);

	ids = tfm_source_ids(*rowp, PG_GETARG_TEXT_PP(1), &n);
	tfm_translate_sources(m, *rowp, &ids, &n, 1, o, nbest, h);
	return h;
}

PG_FUNCTION_INFO_V1(tfm_translate);
Datum
tfm_translate(PG_FUNCTION_ARGS)
{
	char	   *name = tfm_text_arg(fcinfo, 0, "model");
	const TfmModelRow *row;
	TrOpts		o;
	tfm_hyp    *h;
	text	   *res;

	TFM_ARG_NOT_NULL(1, "source");
	parse_tr_opts(fcinfo, 2, 3, 4, &o);
	h = translate_one(fcinfo, name, &o, 1, &row);
	res = tfm_hyp_text(row, h);
	tfm_hyps_free(h, 1);
	PG_RETURN_TEXT_P(res);
}

PG_FUNCTION_INFO_V1(tfm_translate_batch);
Datum
tfm_translate_batch(PG_FUNCTION_ARGS)
{
	char	   *name = tfm_text_arg(fcinfo, 0, "model");
	const TfmModelRow *row;
	tfm_model  *m;
	TrOpts		o;
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	int32	  **ids;
	int		   *lens;
	tfm_hyp    *h;
	Datum	   *res;

	n = tfm_text_array_arg(fcinfo, 1, "sources", false, &elems, &nulls);
	parse_tr_opts(fcinfo, 2, 3, 4, &o);
	m = tfm_get_s2s(name, &row);
	if (n == 0)
		PG_RETURN_ARRAYTYPE_P(tfm_text_array(NULL, NULL, 0));
	ids = palloc(sizeof(int32 *) * n);
	lens = palloc(sizeof(int) * n);
	for (int i = 0; i < n; i++)
		ids[i] = tfm_source_ids(row, DatumGetTextPP(elems[i]), &lens[i]);
	h = palloc(sizeof(tfm_hyp) * n);
	res = palloc(sizeof(Datum) * n);
	/* decode in groups, so memory stays bounded */
	for (int start = 0; start < n; start += TFM_INFER_BATCH)
	{
		int			cnt = Min(TFM_INFER_BATCH, n - start);

		tfm_translate_sources(m, row, ids + start, lens + start, cnt, &o, 1, h + start);
		for (int i = start; i < start + cnt; i++)
			res[i] = PointerGetDatum(tfm_hyp_text(row, &h[i]));
		tfm_hyps_free(h + start, cnt);
	}
	PG_RETURN_ARRAYTYPE_P(tfm_text_array(res, NULL, n));
}

PG_FUNCTION_INFO_V1(tfm_translate_nbest);
Datum
tfm_translate_nbest(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *name = tfm_text_arg(fcinfo, 0, "model");
	const TfmModelRow *row;
	TrOpts		o;
	int			nbest;
	tfm_hyp    *h;

	TFM_ARG_NOT_NULL(1, "source");
	parse_tr_opts(fcinfo, 2, -1, -1, &o);
	nbest = PG_ARGISNULL(3) ? o.beam : PG_GETARG_INT32(3);
	if (nbest < 1 || nbest > o.beam)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("n must be between 1 and beam (%d), not %d", o.beam, nbest)));
	SetSingleFuncCall(fcinfo, 0);
	h = translate_one(fcinfo, name, &o, nbest, &row);
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
