/*
 * attention.c — tfm_attention(model, source [, target]): the attention maps
 * of any model as rows (layer, head, query position, key position, their
 * pieces, weight): self-attention over the text for classifiers and
 * language models, the decoder's cross-attention for seq2seq (over the
 * given target, or the translation beam search finds).
 */
#include "postgres.h"

#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

#include "runtime/rows.h"
#include "sql/args.h"
#include "runtime/infer.h"

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

PG_FUNCTION_INFO_V1(tfm_attention);
Datum
tfm_attention(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *name = tfm_text_arg(fcinfo, 0, "model");
	const TfmModelRow *row;
	tfm_model  *m;
	const tfm_config *c;
	TfmSpecials sp;
	text	   *src;
	int32	   *ids;
	int			n;
	tfm_batch	b;

	TFM_ARG_NOT_NULL(1, "source");
	SetSingleFuncCall(fcinfo, 0);
	tfm_backend_ready();
	m = tfm_cache_get(name, &row);
	c = &row->cfg;
	if (row->tokenizer == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("model \"%s\" has no tokenizer, so it cannot read text", name)));
	tfm_model_specials(row, &sp);
	src = PG_GETARG_TEXT_PP(1);
	ids = tfm_tokenizer_encode(row->tokenizer, VARDATA_ANY(src), VARSIZE_ANY_EXHDR(src), &n);
	if (n == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot show attention over an empty text")));
	n = Min(n, c->max_len);
	memset(&b, 0, sizeof(b));
	b.B = 1;
	b.keep_attention = true;

	if (c->task != TFM_TASK_SEQ2SEQ)
	{
		/* self-attention of every layer over the text */
		text	  **p;
		int			L = c->task == TFM_TASK_LM ? c->dec_layers : c->enc_layers;

		if (PG_NARGS() > 2 && !PG_ARGISNULL(2))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("only a seq2seq model takes a target")));
		if (c->task == TFM_TASK_CLASSIFY)
			ids = tfm_classifier_input(row, &sp, ids, n, &n, true, NULL);
		b.T = n;
		b.input = ids;
		b.target = ids;			/* unused by the forward pass */
		tfm_batch_check(m, &b, false, "running", name, "the length of the text");
		tfm_check_pass(tfm_model_forward(m, &b, false, 0), name);
		p = pieces(row->tokenizer, ids, n);
		for (int l = 0; l < L; l++)
			emit_map(rsinfo, tfm_model_attention(m, l, c->task == TFM_TASK_LM, false), l,
					 c->heads, n, n, p, p);
		return (Datum) 0;
	}

	/* seq2seq: the cross-attention between the source and a target */
	{
		int32	   *tgt;
		int			nt;
		int32	   *din,
				   *dtg;
		text	  **qp,
				  **kp;

		if (PG_NARGS() > 2 && !PG_ARGISNULL(2))
		{
			text	   *t = PG_GETARG_TEXT_PP(2);

			tgt = tfm_tokenizer_encode(tfm_target_tokenizer(row), VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t), &nt);
		}
		else
		{
			TrOpts		o = {4, 0.6f, 0};
			tfm_hyp		h;

			tfm_translate_sources(m, row, &ids, &n, 1, &o, 1, &h);
			nt = Max(h.n, 0);
			tgt = palloc(sizeof(int32) * Max(nt, 1));
			if (nt > 0)
				memcpy(tgt, h.ids, sizeof(int32) * nt);
			tfm_hyps_free(&h, 1);
		}
		nt = Min(nt, c->max_len - 1);
		din = palloc(sizeof(int32) * (nt + 1));
		dtg = palloc(sizeof(int32) * (nt + 1));
		din[0] = sp.bos;
		memcpy(din + 1, tgt, sizeof(int32) * nt);
		memcpy(dtg, tgt, sizeof(int32) * nt);
		dtg[nt] = sp.eos;
		b.T = n;
		b.input = ids;
		b.Tt = nt + 1;
		b.dec_input = din;
		b.target = dtg;
		tfm_batch_check(m, &b, false, "running", name, "the length of the texts");
		tfm_check_pass(tfm_model_forward(m, &b, false, 0), name);
		qp = pieces(tfm_target_tokenizer(row), din, nt + 1);
		kp = pieces(row->tokenizer, ids, n);
		for (int l = 0; l < c->dec_layers; l++)
			emit_map(rsinfo, tfm_model_attention(m, l, true, true), l, c->heads, nt + 1, n, qp, kp);
	}
	return (Datum) 0;
}
