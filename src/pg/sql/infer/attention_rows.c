/*
 * attention_rows.c — tfm_attention(model, source [, target]): the attention maps
 * of any model as rows (layer, head, query position, key position, their
 * pieces, weight): self-attention over the text for classifiers and
 * language models, the decoder's cross-attention for seq2seq (over the
 * given target, or the translation beam search finds).  The passes are
 * runtime/infer/attention_maps.c's.
 */
#include "postgres.h"

#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

#include "runtime/rows.h"
#include "sql/args.h"
#include "runtime/infer/infer.h"
#include "runtime/runtime.h"
#include "runtime/cache/tokenizer_cache.h"
#include "runtime/cache/model_cache.h"
#include "storage/models/models.h"

static void
emit_map(ReturnSetInfo *rsinfo, const float *P, int layer, int heads, int Tq, int Tk,
		 text **qpieces, text **kpieces)
{
	for (int h = 0; h < heads; h++)
		for (int q = 0; q < Tq; q++)
			for (int k = 0; k < Tk; k++)
			{
				Datum		v[7];
				bool		nulls[7] = {false, false, false, false, false, false, false};

				v[0] = Int32GetDatum(layer + 1);
				v[1] = Int32GetDatum(h + 1);
				v[2] = Int32GetDatum(q + 1);
				v[3] = Int32GetDatum(k + 1);
				v[4] = PointerGetDatum(qpieces[q]);
				v[5] = PointerGetDatum(kpieces[k]);
				v[6] = Float8GetDatum((double) P[((size_t) h * Tq + q) * Tk + k]);
				tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, nulls);
			}
}

static text **
pieces(const char *tokenizer, const int32 *ids, int n)
{
	text	  **p = palloc(sizeof(text *) * Max(n, 1));

	for (int i = 0; i < n; i++)
		p[i] = tfm_tokenizer_piece_text(tokenizer, ids[i]);
	return p;
}

/* a text's ids through a tokenizer */
static int32 *
text_ids(const char *tokenizer, text *t, int *n)
{
	return tfm_tokenizer_encode(tokenizer, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t), n);
}

PG_FUNCTION_INFO_V1(tfm_attention);
Datum
tfm_attention(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *name;
	bool		has_target = PG_NARGS() > 2 && !PG_ARGISNULL(2);
	const TfmModelRow *row;
	tfm_model  *m;
	const tfm_config *c;
	TfmSpecials sp;
	int32	   *ids,
			   *tgt = NULL,
			   *din;
	int			n,
				nt = 0,
				nq;
	text	  **qp,
			  **kp;

	if (tfm_args_null(fcinfo, 0, 1))
		return tfm_srf_none(fcinfo);	/* the NULL rule (args.h) */
	name = tfm_text_arg(fcinfo, 0, "model");
	InitMaterializedSRF(fcinfo, 0);
	tfm_backend_ready();
	m = tfm_cache_get(name, &row);
	c = &row->cfg;
	if (row->tokenizer == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("model \"%s\" has no tokenizer, so it cannot read text", name)));
	tfm_model_specials(row, &sp);
	ids = text_ids(row->tokenizer, PG_GETARG_TEXT_PP(1), &n);
	if (n == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot show attention over an empty text")));
	n = Min(n, c->max_len);

	if (c->task != TFM_TASK_SEQ2SEQ)
	{
		/* self-attention of every layer over the text */
		int			L = c->task == TFM_TASK_LM ? c->dec_layers : c->enc_layers;

		if (has_target)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("only a seq2seq model takes a target")));
		ids = tfm_attention_self_pass(m, row, &sp, ids, &n);
		kp = pieces(row->tokenizer, ids, n);
		for (int l = 0; l < L; l++)
			emit_map(rsinfo, tfm_model_attention(m, l, c->task == TFM_TASK_LM, false), l,
					 c->heads, n, n, kp, kp);
		return (Datum) 0;
	}

	/* seq2seq: the cross-attention between the source and a target */
	if (has_target)
		tgt = text_ids(tfm_target_tokenizer(row), PG_GETARG_TEXT_PP(2), &nt);
	din = tfm_attention_cross_pass(m, row, &sp, ids, n, tgt, nt, &nq);
	qp = pieces(tfm_target_tokenizer(row), din, nq);
	kp = pieces(row->tokenizer, ids, n);
	for (int l = 0; l < c->dec_layers; l++)
		emit_map(rsinfo, tfm_model_attention(m, l, true, true), l, c->heads, nq, n, qp, kp);
	return (Datum) 0;
}
