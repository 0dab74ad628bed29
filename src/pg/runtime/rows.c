/*
 * rows.c — turning a query's column values into token ids for a model:
 * int[] columns are ids already (checked against the vocabulary); text
 * columns go through the model's tokenizer.  Also the special ids a model
 * uses (its tokenizer's, or tfm's fixed 0..5 when it has none).
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "tfm/truncate.h"
#include "runtime/runtime.h"
#include "runtime/rows.h"
#include "runtime/cache/tokenizer_cache.h"
#include "storage/models/models.h"

void
tfm_model_specials(const TfmModelRow *row, TfmSpecials *sp)
{
	if (row->tokenizer)
		tfm_tokenizer_specials(row->tokenizer, sp);
	else
	{
		/* a model without a tokenizer: tfm's own special ids */
		static const TfmSpecials own = {.pad = 0, .unk = 1, .bos = 2, .eos = 3, .cls = 4, .sep = 5};

		*sp = own;
	}
	/* an imported checkpoint names its own bos and eos (GPT-2: <|endoftext|>) */
	if (row->bos_id >= 0)
		sp->bos = row->bos_id;
	if (row->eos_id >= 0)
		sp->eos = row->eos_id;
	/* an imported BERT-family encoder pads with its pad_token_id, an
	 * encoder-decoder with its own (a tfm one's is its tokenizer's) */
	if ((row->cfg.emb_norm || row->cfg.task == TFM_TASK_SEQ2SEQ) && row->cfg.pad_id >= 0)
		sp->pad = row->cfg.pad_id;
	tfm_check_specials(row->name, &row->cfg, sp);
}

static void
special_fits(const char *model, const char *what, int32 id, int vocab)
{
	if (id < 0 || id >= vocab)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the %s id %d of model \"%s\" is not in its vocabulary of %d tokens (ids 0 to %d)",
						what, id, model, vocab, vocab - 1),
				 errhint("Give the model a larger vocab_size, a tokenizer whose special tokens are "
						 "ids of the model, or (for an import) config.json bos_token_id and eos_token_id.")));
}

/*
 * The specials a model of this task feeds to its embedding or takes as a
 * loss target must be rows of its vocabulary: a language model's <bos> and
 * <eos> (and its padding, if it pads), a classifier's padding, <unk> and
 * <cls> (when it pools on a <cls> it adds), a seq2seq model's padding and
 * <eos> in both vocabularies and its target <bos>.
 */
void
tfm_check_specials(const char *model, const tfm_config *c, const TfmSpecials *sp)
{
	int			tv = c->task == TFM_TASK_SEQ2SEQ && c->tgt_vocab > 0 ? c->tgt_vocab : c->vocab;

	switch (c->task)
	{
		case TFM_TASK_LM:
			special_fits(model, "<bos>", sp->bos, c->vocab);
			special_fits(model, "<eos>", sp->eos, c->vocab);
			if (c->pad_id >= 0)
				special_fits(model, "<pad>", sp->pad, c->vocab);
			break;
		case TFM_TASK_CLASSIFY:
			special_fits(model, "<pad>", sp->pad, c->vocab);
			special_fits(model, "<unk>", sp->unk, c->vocab);
			if (c->pooling == TFM_POOL_CLS && !c->emb_norm)
				special_fits(model, "<cls>", sp->cls, c->vocab);
			break;
		case TFM_TASK_SEQ2SEQ:
			/* <eos> also stands for an empty source */
			special_fits(model, "<pad>", sp->pad, Min(c->vocab, tv));
			special_fits(model, "<bos>", sp->bos, tv);
			special_fits(model, "<eos>", sp->eos, Min(c->vocab, tv));
			break;
	}
}

bool
tfm_column_is_ids(Oid type)
{
	return type == INT4ARRAYOID;
}

bool
tfm_column_is_text(Oid type)
{
	return type == TEXTOID || type == VARCHAROID || type == BPCHAROID;
}

int32 *
tfm_datum_ids(Datum d, Oid type, const TfmModelRow *row, bool target, int *len)
{
	int			vocab = target && row->cfg.tgt_vocab > 0 ? row->cfg.tgt_vocab : row->cfg.vocab;

	if (tfm_column_is_ids(type))
	{
		ArrayType  *a = DatumGetArrayTypeP(d);
		int			n = ArrayGetNItems(ARR_NDIM(a), ARR_DIMS(a));
		int32	   *src = (int32 *) ARR_DATA_PTR(a);
		int32	   *ids;

		if (ARR_HASNULL(a))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("token id arrays must not contain NULL")));
		ids = palloc(sizeof(int32) * (n + 1));
		for (int i = 0; i < n; i++)
		{
			if (src[i] < 0 || src[i] >= vocab)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("token id %d is out of range for model \"%s\"", src[i], row->name),
						 errdetail("Its vocabulary has ids 0 to %d.", vocab - 1)));
			ids[i] = src[i];
		}
		*len = n;
		return ids;
	}
	if (tfm_column_is_text(type))
	{
		const char *tok = target && row->target_tokenizer ? row->target_tokenizer : row->tokenizer;
		text	   *t = DatumGetTextPP(d);

		if (!tok)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("model \"%s\" has no tokenizer, so it reads token ids (int[]), not text",
							row->name)));
		if (row->cfg.emb_norm && VARSIZE_ANY_EXHDR(t) > 0)
		{
			/* a BERT-family encoder: the post-processor's [CLS] text [SEP] */
			TfmSpecials sp;
			int			n;
			int32	   *ids = tfm_tokenizer_encode(tok, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t), &n);
			int32	   *out = palloc(sizeof(int32) * (n + 2));

			tfm_tokenizer_specials(tok, &sp);
			if (sp.cls < 0 || sp.cls >= vocab || sp.sep < 0 || sp.sep >= vocab)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("tokenizer \"%s\" has no [CLS] and [SEP] in the vocabulary of model \"%s\"",
								tok, row->name)));
			out[0] = sp.cls;
			memcpy(out + 1, ids, sizeof(int32) * n);
			out[n + 1] = sp.sep;
			*len = n + 2;
			return out;
		}
		if (target)
		{
			/*
			 * a target's <eos> comes from the batch (tfm_batch_seq2seq), not
			 * also from the post-processor (T5's "$A </s>")
			 */
			return tfm_tokenizer_encode_with(tfm_tokenizer_cached(tok), VARDATA_ANY(t),
											 VARSIZE_ANY_EXHDR(t), 0, 0, len);
		}
		return tfm_tokenizer_encode(tok, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t), len);
	}
	ereport(ERROR,
			(errcode(ERRCODE_DATATYPE_MISMATCH),
			 errmsg("a model's input column must be text or int[], not %s", format_type_be(type))));
	return NULL;
}

void
tfm_check_labels_trainable(const TfmModelRow *row)
{
	if (row->cfg.task == TFM_TASK_CLASSIFY && row->cfg.token_head != TFM_TOKEN_HEAD_NONE)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("model \"%s\" has a head on every token; tfm_train_agg trains classifiers of texts",
						row->name),
				 errhint("tfm_train trains it on (text, spans) or (question, context, answer_start, answer) rows.")));
	if (row->cfg.task == TFM_TASK_CLASSIFY && row->n_labels < TFM_CLASSES_MIN)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("model \"%s\" has one logit (a score, as a cross-encoder's), not labels to learn",
						row->name),
				 errhint("tfm_train trains its score on (query, passage, score) rows; tfm_rerank reads it.")));
}

int32 *
tfm_classifier_input(const TfmModelRow *row, const TfmSpecials *sp, int32 *ids, int n,
					 int *out_n, int64 *truncated)
{
	const tfm_config *c = &row->cfg;
	int			max = c->max_len;

	/* an imported BERT-family encoder's ids carry their own [CLS] (or <s>) */
	bool		cls = c->pooling == TFM_POOL_CLS && !c->emb_norm;

	if (cls)
	{
		/* the classifier reads the <cls> position */
		int32	   *with_cls = palloc(sizeof(int32) * (n + 1));

		with_cls[0] = sp->cls;
		memcpy(with_cls + 1, ids, sizeof(int32) * n);
		ids = with_cls;
		n++;
	}
	if (n > max && truncated)
		(*truncated)++;
	/* the <cls> is the head's first token; tail keeps it and the last max - 1 */
	if (cls && row->truncation == TFM_TRUNC_TAIL)
		n = 1 + tfm_truncate_ids(ids + 1, n - 1, max - 1, TFM_TRUNC_TAIL);
	else
		n = tfm_truncate_ids(ids, n, max, row->truncation);
	if (n == 0)
	{
		ids = palloc(sizeof(int32));
		ids[0] = sp->unk;
		n = 1;
	}
	*out_n = n;
	return ids;
}
