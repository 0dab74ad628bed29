/*
 * pair_input.c — two texts read together by an imported BERT-family
 * encoder (a cross-encoder's query and passage, an NLI model's premise and
 * hypothesis), as Hugging Face's tokenizers build them: BERT's
 * "[CLS] a [SEP] b [SEP]" with token types 0 up to the first [SEP] and 1
 * after it; RoBERTa's "<s> a </s></s> b </s>" (one token type, 0);
 * DistilBERT's like BERT's without token types.  A pair longer than the
 * model's positions is cut as the tokenizers' truncation strategies do:
 * 'longest_first' (a token at a time from the longer text, from b on a
 * tie) or 'only_first' (a only).
 */
#include "postgres.h"

#include "runtime/infer/infer.h"
#include "runtime/runtime.h"

/* the specials between and around the texts */
static void
pair_layout(const TfmModelRow *row, bool *roberta, int *extra)
{
	if (!row->cfg.emb_norm || !row->tokenizer)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("model \"%s\" does not read pairs of texts", row->name),
				 errdetail("Pairs are read by BERT-family encoders imported from Hugging Face with their tokenizer.")));
	*roberta = row->cfg.pos_offset > 0;
	*extra = *roberta ? 4 : 3;
	if (row->cfg.max_len <= *extra)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("model \"%s\" has %d positions, too few for a pair", row->name,
						row->cfg.max_len)));
}

void
tfm_pair_check(const TfmModelRow *row)
{
	bool		roberta;
	int			extra;
	TfmSpecials sp;

	pair_layout(row, &roberta, &extra);
	tfm_model_cls_sep(row, &sp);
}

int32 *
tfm_pair_tokens(const TfmModelRow *row, text *t, int *n)
{
	bool		roberta;
	int			extra;

	pair_layout(row, &roberta, &extra);
	if (VARSIZE_ANY_EXHDR(t) == 0)
	{
		*n = 0;
		return palloc(sizeof(int32));
	}
	return tfm_tokenizer_encode(row->tokenizer, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t), n);
}

void
tfm_model_cls_sep(const TfmModelRow *row, TfmSpecials *sp)
{
	tfm_tokenizer_specials(row->tokenizer, sp);
	if (sp->cls < 0 || sp->cls >= row->cfg.vocab || sp->sep < 0 || sp->sep >= row->cfg.vocab)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("tokenizer \"%s\" has no [CLS] and [SEP] in the vocabulary of model \"%s\"",
						row->tokenizer, row->name)));
}

int32 *
tfm_pair_join(const TfmModelRow *row, const int32 *a, int na, const int32 *b, int nb,
			  bool only_first, int32 **types, int *n)
{
	TfmSpecials sp;
	bool		roberta;
	int			extra,
				budget,
				k = 0;
	int32	   *ids,
			   *ty;
	bool		typed;

	pair_layout(row, &roberta, &extra);
	tfm_model_cls_sep(row, &sp);
	budget = row->cfg.max_len - extra;
	if (only_first)
	{
		if (nb > budget)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("the second text of a pair has %d tokens; model \"%s\" reads at most %d with the first",
							nb, row->name, budget)));
		na = Min(na, budget - nb);
	}
	else
		while (na + nb > budget)
		{
			/* the tokenizers' longest_first: one token from the longer, b on a tie */
			int			cut = Min(na + nb - budget, abs(na - nb));

			if (cut == 0)
				cut = 1;
			if (na > nb)
				na -= cut;
			else
				nb -= cut;
		}
	*n = na + nb + extra;
	ids = palloc(sizeof(int32) * *n);
	ty = palloc0(sizeof(int32) * *n);
	typed = !roberta && row->cfg.type_vocab >= 2;
	ids[k++] = sp.cls;
	memcpy(ids + k, a, sizeof(int32) * na);
	k += na;
	ids[k++] = sp.sep;
	if (roberta)
		ids[k++] = sp.sep;
	memcpy(ids + k, b, sizeof(int32) * nb);
	if (typed)
		for (int i = k; i < *n; i++)
			ty[i] = 1;
	k += nb;
	ids[k++] = sp.sep;
	Assert(k == *n);
	*types = ty;
	return ids;
}
