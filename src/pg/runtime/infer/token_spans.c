/*
 * token_spans.c — a text's tokens with their places in it, as the span
 * tasks read them (tfm_entities, tfm_answer): each token's characters as
 * Hugging Face's fast tokenizers give them (trim_offsets: the spaces a
 * byte-level token carries left out, a character split between tokens
 * covered by each; a WordPiece piece its own characters), whether
 * it continues the word before it (TokenClassificationPipeline's
 * is_subword: a tokenizer with a continuing-subword prefix, WordPiece, when
 * the piece is longer than its characters; any other when the character
 * before it is not a space; [UNK] never), and the model's windows of them.
 */
#include "postgres.h"

#include "mb/pg_wchar.h"
#include "miscadmin.h"

#include "runtime/infer/infer.h"
#include "runtime/runtime.h"
#include "runtime/cache/tokenizer_cache.h"

TfmTokSpan *
tfm_token_spans(const TfmModelRow *row, text *t, int *n)
{
	const char *s = VARDATA_ANY(t);
	size_t		len = VARSIZE_ANY_EXHDR(t),
			   *starts,
			   *ends;
	int32	   *ids;
	int		   *chars;
	TfmTokSpan *out;
	TfmSpecials sp;
	TfmCachedTokenizer *tok;
	bool		wordpiece,
				utf8 = GetDatabaseEncoding() == PG_UTF8;
	int			k = 0;

	/* the byte -> character table and the tokens' records, before any work */
	tfm_work_mem_require((len + 1) * sizeof(int) + len * (sizeof(TfmTokSpan) + 2 * sizeof(size_t) + 4),
						 "finding the tokens of this text", "pass a shorter text");
	tok = tfm_tokenizer_cached(row->tokenizer);
	wordpiece = tok->info.kind == TFM_TOK_WORDPIECE;
	tfm_tokenizer_specials(row->tokenizer, &sp);
	if (len == 0)
	{
		*n = 0;
		return palloc(sizeof(TfmTokSpan));
	}
	ids = tfm_tokenizer_encode_spans(row->tokenizer, s, len, n, &starts, &ends);
	chars = palloc_extended(sizeof(int) * (len + 1), MCXT_ALLOC_HUGE);
	for (size_t b = 0, c = 0; b <= len; c++)
	{
		int			l = b < len ? pg_mblen(s + b) : 1;

		for (int j = 0; j < l && b + j <= len; j++)
			chars[b + j] = (int) c;
		b += l;
		if ((c & 0xffff) == 0)
			CHECK_FOR_INTERRUPTS();
	}
	out = palloc_extended(sizeof(TfmTokSpan) * Max(*n, 1), MCXT_ALLOC_HUGE);
	for (int i = 0; i < *n; i++)
	{
		size_t		b0 = starts[i],
					b1 = Max(ends[i], starts[i]);
		TfmTokSpan *o;

		if ((i & 0xfff) == 0)
			CHECK_FOR_INTERRUPTS();
		/* the model's own specials found in the text are not tokens of it (special_tokens_mask) */
		if (ids[i] == sp.cls || ids[i] == sp.sep || ids[i] == sp.pad || ids[i] == sp.bos ||
			ids[i] == sp.eos)
			continue;
		/* trim_offsets: the spaces a byte-level token carries (Ġ) */
		while (b0 < b1 && s[b0] == ' ')
			b0++;
		while (b1 > b0 && s[b1 - 1] == ' ')
			b1--;
		o = &out[k++];
		o->id = ids[i];
		/* a token that starts or ends inside a character (byte-level BPE) covers it */
		o->start = chars[b0];
		o->end = b1 > b0 ? chars[b1 - 1] + 1 : chars[b0];
		if (utf8)
		{
			while (b0 > 0 && (s[b0] & 0xC0) == 0x80)
				b0--;
			while (b1 < len && b1 > b0 && (s[b1] & 0xC0) == 0x80)
				b1++;
		}
		o->bstart = b0;
		o->bend = b1;
		if (ids[i] == sp.unk)
			o->subword = false;
		else if (wordpiece)
		{
			const uint8_t *pb;
			size_t		pl;
			tfm_status	err;

			tfm_raise(tfm_tok_piece(&pb, &pl, tok->tok, ids[i], &err), &err, "cannot read a piece");
			o->subword = pg_mbstrlen_with_len((const char *) pb, (int) pl) != o->end - o->start;
		}
		else
			o->subword = b0 > 0 && s[b0 - 1] != ' ';
	}
	*n = k;
	pfree(ids);
	pfree(starts);
	pfree(ends);
	pfree(chars);
	return out;
}

/* the model's ids of tokens[0 .. n) between its first and last special ([CLS] .. [SEP], <s> .. </s>) */
int32 *
tfm_token_window(const TfmModelRow *row, const TfmTokSpan *tokens, int n, int *len)
{
	TfmSpecials sp;
	int32	   *ids = palloc(sizeof(int32) * (n + 2));

	tfm_model_cls_sep(row, &sp);
	ids[0] = sp.cls;
	for (int i = 0; i < n; i++)
		ids[i + 1] = tokens[i].id;
	ids[n + 1] = sp.sep;
	*len = n + 2;
	return ids;
}
