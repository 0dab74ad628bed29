/*
 * attention_maps.c — the passes whose attention tfm_attention shows: one
 * forward pass that keeps every layer's attention weights, over a text
 * (self-attention) or over a source and a target (a seq2seq decoder's
 * cross-attention; the target is the translation beam search finds when
 * none is given).
 */
#include "postgres.h"

#include "runtime/infer/infer.h"
#include "runtime/runtime.h"
#include "runtime/rows.h"
#include "runtime/cache/tokenizer_cache.h"
#include "storage/models/models.h"

int32 *
tfm_attention_self_pass(tfm_model *m, const TfmModelRow *row, const TfmSpecials *sp,
						int32 *ids, int *n)
{
	tfm_batch	b;

	if (row->cfg.task == TFM_TASK_CLASSIFY)
		ids = tfm_classifier_input(row, sp, ids, *n, n, NULL);
	memset(&b, 0, sizeof(b));
	b.B = 1;
	b.keep_attention = true;
	b.T = *n;
	b.input = ids;
	b.target = ids;				/* unused by the forward pass */
	tfm_batch_check(m, &b, false, "running", row->name, "the length of the text");
	tfm_check_pass(tfm_model_forward(m, &b, false, 0), row->name);
	return ids;
}

int32 *
tfm_attention_cross_pass(tfm_model *m, const TfmModelRow *row, const TfmSpecials *sp,
						 int32 *ids, int n, const int32 *tgt, int nt, int *nq)
{
	int32	   *din,
			   *dtg;
	tfm_batch	b;

	if (tgt == NULL)
	{
		TrOpts		o = TR_OPTS_UNSET;
		tfm_hyp		h;
		int32	   *found;

		tfm_tr_defaults(&o, row);
		tfm_translate_sources(m, row, &ids, &n, 1, &o, 1, &h);
		nt = Max(h.n, 0);
		found = palloc(sizeof(int32) * Max(nt, 1));
		if (nt > 0)
			memcpy(found, h.ids, sizeof(int32) * nt);
		tfm_hyps_free(&h, 1);
		tgt = found;
	}
	nt = Min(nt, row->cfg.max_len - 1);
	din = palloc(sizeof(int32) * (nt + 1));
	dtg = palloc(sizeof(int32) * (nt + 1));
	din[0] = sp->bos;
	memcpy(din + 1, tgt, sizeof(int32) * nt);
	memcpy(dtg, tgt, sizeof(int32) * nt);
	dtg[nt] = sp->eos;
	memset(&b, 0, sizeof(b));
	b.B = 1;
	b.keep_attention = true;
	b.T = n;
	b.input = ids;
	b.Tt = nt + 1;
	b.dec_input = din;
	b.target = dtg;
	tfm_batch_check(m, &b, false, "running", row->name, "the length of the texts");
	tfm_check_pass(tfm_model_forward(m, &b, false, 0), row->name);
	*nq = nt + 1;
	return din;
}
