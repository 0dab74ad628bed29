/*
 * translator.c — an encoder-decoder's inference: the model from the cache,
 * a source's ids, beam search over n sources (halved until it fits
 * tfm.work_mem, stopped cleanly by a cancel) and a hypothesis as text
 * (tfm_translate, tfm_attention, tfm_evaluate).
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/builtins.h"

#include "tfm/blas.h"
#include "tfm/precision.h"
#include "runtime/infer/infer.h"
#include "runtime/runtime.h"
#include "runtime/rows.h"
#include "runtime/cache/tokenizer_cache.h"
#include "runtime/cache/model_cache.h"
#include "storage/models/models.h"

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

/*
 * Beam search holds malloc'd state: it must not be left by longjmp.  So the
 * callback only says that an interrupt is pending; the search frees its
 * buffers and returns TFM_ECANCELED, and the interrupt is taken afterwards.
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

void
tfm_tr_defaults(TrOpts *o, const TfmModelRow *row)
{
	if (o->beam == 0)
		o->beam = row->gen_beams > 0 ? row->gen_beams : 4;
	if (o->length_penalty < 0)
		o->length_penalty = row->gen_length_penalty >= 0 ? row->gen_length_penalty : 0.6f;
	/* max_tokens 0 stays: tfm_translate_sources takes the model's limit,
	 * else its default per source, within learned positions' reach */
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
	bo.max_tokens = o->max_tokens > 0 ? o->max_tokens :
		row->gen_max_tokens > 0 ? row->gen_max_tokens : maxlen;
	bo.bos = sp.bos;
	bo.eos = sp.eos;
	bo.pad = sp.pad;
	bo.hf_rules = row->hf_beam;
	bo.forced_eos = row->hf_forced_eos;
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
