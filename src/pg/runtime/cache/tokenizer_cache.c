/*
 * tokenizer_cache.c — tokenizers loaded once per backend (at most
 * TFM_TOK_CACHE_MAX, the least recently used going first) and what the
 * rest of the layer does with them: encode a text, the special ids, an
 * id's piece as text, decode ids.
 *
 * Tokenizers never change once stored (drop and train again to replace
 * one), so an entry is kept while its row id stays the same, checked once
 * per statement by name, with the caller's use right.
 */
#include "postgres.h"

#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "tfm/tokenizer.h"
#include "runtime/cache/lru.h"
#include "runtime/cache/tokenizer_cache.h"
#include "runtime/runtime.h"
#include "storage/tokenizers/tokenizers.h"

#define TFM_TOK_CACHE_MAX 8

static TfmLru *tok_cache = NULL;

static void
free_entry(void *payload)
{
	TfmCachedTokenizer *e = payload;

	if (e->tok)
		tfm_tok_free(e->tok);
}

/*
 * The tokenizer called name, from the cache (valid for the current call):
 * checked once per statement, and again when another role asks.
 */
TfmCachedTokenizer *
tfm_tokenizer_cached(const char *name)
{
	TfmCachedTokenizer *e;
	int32		id;
	bool		may_use;

	tfm_check_name("tokenizer", name);
	if (tok_cache == NULL)
		tok_cache = tfm_lru_create("tfm tokenizer cache", TFM_TOK_CACHE_MAX,
								   sizeof(TfmCachedTokenizer), free_entry);
	e = tfm_lru_find(tok_cache, name);
	if (e && tfm_lru_checked_now(tok_cache, e) && e->checked_user == GetUserId())
	{
		tfm_lru_use(tok_cache, e);
		return e;
	}
	id = tfm_tokenizer_lookup(name, &may_use);
	if (id < 0)
	{
		if (e)
			tfm_lru_evict(tok_cache, e);
		tfm_tokenizer_missing(name);
	}
	if (!may_use)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for tokenizer \"%s\": use privilege required", name),
				 errhint("The owner of the tokenizer, or of a model that uses it, can grant use.")));
	if (!e || e->id != id)
	{
		TfmTokOwner *own = tfm_tok_owner(CurrentMemoryContext);

		if (e)
			tfm_lru_evict(tok_cache, e);
		own->tok = tfm_tokenizer_read(name, &id);
		e = tfm_lru_insert(tok_cache, name);
		e->id = id;
		e->tok = own->tok;
		own->tok = NULL;
		tfm_tok_get_info(&e->info, e->tok);
	}
	e->checked_user = GetUserId();
	tfm_lru_stamp(tok_cache, e);
	return e;
}

void
tfm_tokenizer_specials(const char *name, TfmSpecials *sp)
{
	TfmCachedTokenizer *e = tfm_tokenizer_cached(name);

	sp->pad = e->info.special_ids[TFM_TOK_PAD];
	sp->unk = e->info.special_ids[TFM_TOK_UNK];
	sp->bos = e->info.special_ids[TFM_TOK_BOS];
	sp->eos = e->info.special_ids[TFM_TOK_EOS];
	sp->cls = e->info.special_ids[TFM_TOK_CLS];
	sp->sep = e->info.special_ids[TFM_TOK_SEP];
}

/*
 * A text's ids (and, when starts is not NULL, each token's start byte
 * offset, palloc'd into *starts): max_length > 0 cuts them there; a cancel
 * ends a long text.
 */
static int32 *
encode(TfmCachedTokenizer *e, const char *text, size_t len, uint32 flags, size_t max_length,
	   int *n, size_t **starts)
{
	size_t		cap,
				scratch;
	size_t		per_id = sizeof(int32) + (starts ? sizeof(size_t) : 0);
	int32	   *ids;
	size_t	   *offs = NULL;
	size_t		got;
	tfm_status err;

	if (tfm_split_special_tokens)
		flags |= TFM_TOK_SPLIT_SPECIALS;
	cap = tfm_tok_encode_bound_text(e->tok, text, len, flags);
	/* a unigram normalizer past TFM_TOK_UNI_MAX_EXPANSION times the text gives SIZE_MAX */
	if (cap == SIZE_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("the tokenizer's normalizer makes the text more than %d times longer",
						TFM_TOK_UNI_MAX_EXPANSION)));
	scratch = tfm_tok_encode_scratch_bytes(e->tok, Max(cap, len));
	/* max_length only lowers the bound (it may be 2^31 - 1 for a short text) */
	if (max_length > 0 && max_length < cap)
		cap = max_length;

	if (cap > MaxAllocHugeSize / per_id)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("text too long to tokenize")));
	tfm_work_mem_require(per_id * cap + scratch,
						 psprintf("tokenizing a text of %zu bytes", len), "split the text");
	ids = palloc_extended(sizeof(int32) * Max(cap, 1), MCXT_ALLOC_HUGE);
	if (starts)
		offs = *starts = palloc_extended(sizeof(size_t) * Max(cap, 1), MCXT_ALLOC_HUGE);
	/* a long text ends at a cancel or statement_timeout (encoded again if nothing was raised) */
	tfm_tok_set_poll(e->tok, tfm_interrupt_pending, NULL);
	for (;;)
	{
		int			st = tfm_tok_encode(ids, offs, cap, &got, e->tok, text, len, flags,
										max_length, &err);

		if (st != TFM_ECANCELED)
		{
			tfm_raise(st, &err, "cannot tokenize");
			break;
		}
		CHECK_FOR_INTERRUPTS();
	}
	*n = (int) got;
	return ids;
}

int32 *
tfm_tokenizer_encode_with(TfmCachedTokenizer *e, const char *text, size_t len, uint32 flags, size_t max_length, int *n)
{
	return encode(e, text, len, flags, max_length, n, NULL);
}

int32 *
tfm_tokenizer_encode_spans(const char *name, const char *text, size_t len, int *n,
						   size_t **starts, size_t **ends)
{
	TfmCachedTokenizer *e = tfm_tokenizer_cached(name);
	int32	   *ids = encode(e, text, len, 0, 0, n, starts);
	tfm_status	err;

	*ends = palloc_extended(sizeof(size_t) * Max(*n, 1), MCXT_ALLOC_HUGE);
	tfm_raise(tfm_tok_spans(*ends, *starts, (size_t) *n, e->tok, text, len, &err), &err,
			  "cannot find the tokens' places in the text");
	return ids;
}

int32 *
tfm_tokenizer_encode(const char *name, const char *text, size_t len, int *n)
{
	TfmCachedTokenizer *e = tfm_tokenizer_cached(name);

	/* a Llama tokenizer's post-processor puts <s> before every text, T5's </s> after it */
	return tfm_tokenizer_encode_with(e, text, len,
									 ((e->info.flags & TFM_TOK_INFO_TEXT_BOS) ? TFM_TOK_ADD_BOS : 0) |
									 ((e->info.flags & TFM_TOK_INFO_TEXT_EOS) ? TFM_TOK_ADD_EOS : 0),
									 0, n);
}

/* PostgreSQL text cannot hold NUL: a decoded U+0000 becomes U+FFFD */
text *
tfm_text_without_nul(text *t)
{
	const char *p = VARDATA(t);
	size_t		len = VARSIZE(t) - VARHDRSZ,
				nul = 0;
	text	   *out;
	char	   *q;

	for (size_t i = 0; i < len; i++)
		nul += p[i] == '\0';
	if (nul == 0)
		return t;
	out = palloc_extended(VARHDRSZ + len + 2 * nul, MCXT_ALLOC_HUGE);
	q = VARDATA(out);
	for (size_t i = 0; i < len; i++)
	{
		if (p[i] == '\0')
		{
			*q++ = (char) 0xEF;
			*q++ = (char) 0xBF;
			*q++ = (char) 0xBD;
		}
		else
			*q++ = p[i];
	}
	SET_VARSIZE(out, VARHDRSZ + len + 2 * nul);
	pfree(t);
	return out;
}

/* a piece as text: valid UTF-8 as is, other bytes as \xNN */
text *
tfm_piece_text(const uint8_t *b, size_t len)
{
	StringInfoData s;
	size_t		i = 0;

	initStringInfo(&s);
	while (i < len)
	{
		int			l = pg_utf_mblen(b + i);

		if (b[i] != 0 && i + l <= len && pg_utf8_islegal(b + i, l))
		{
			appendBinaryStringInfo(&s, (const char *) b + i, l);
			i += l;
		}
		else
			appendStringInfo(&s, "\\x%02X", b[i++]);
	}
	return cstring_to_text_with_len(s.data, s.len);
}

/* the piece of an id as text (bytes that are not UTF-8 as \xNN) */
text *
tfm_tokenizer_piece_text(const char *name, int32 id)
{
	const uint8_t *b;
	size_t		len;
	tfm_status err;

	tfm_raise(tfm_tok_piece(&b, &len, tfm_tokenizer_cached(name)->tok, id, &err), &err, "cannot read a piece");
	return tfm_piece_text(b, len);
}

/* the text of ids (specials dropped, invalid UTF-8 replaced) */
text *
tfm_tokenizer_decode(const char *name, const int32 *ids, int n)
{
	return tfm_tokenizer_decode_flags(name, ids, n, 0);
}

/* the same; continuation keeps a SentencePiece tokenizer's first space (generated text) */
text *
tfm_tokenizer_decode_flags(const char *name, const int32 *ids, int n, bool continuation)
{
	TfmCachedTokenizer *e = tfm_tokenizer_cached(name);
	uint32		flags = TFM_TOK_DECODE_REPLACE | (continuation ? TFM_TOK_DECODE_CONTINUE : 0);
	size_t		cap = tfm_tok_decode_bound(e->tok, n, flags),
				got;
	text	   *out = palloc_extended(VARHDRSZ + Max(cap, 1), MCXT_ALLOC_HUGE);
	tfm_status err;

	tfm_raise(tfm_tok_decode(VARDATA(out), cap, &got, e->tok, ids, n, flags, &err),
			  &err, "cannot detokenize");
	SET_VARSIZE(out, VARHDRSZ + got);
	out = tfm_text_without_nul(out);
	return out;
}

/*
 * Room for these ids, not for n of the longest piece (GPT-2: 387 bytes an
 * id): each piece (U+FFFD for <unk>) and a separator, 3 bytes for any byte
 * that is replaced; at most what a text holds (a longer result fails in the
 * core).  Ids out of range count nothing here: the core reports them.
 */
static size_t
detokenized_room(TfmCachedTokenizer *e, const int32 *ids, int n)
{
	uint64		raw = 0,
				least = 0;

	for (int i = 0; i < n; i++)
	{
		const uint8_t *b;
		size_t		len;
		bool		special = false;

		if ((i & 0xFFFFF) == 0xFFFFF)
			CHECK_FOR_INTERRUPTS();

		if (tfm_tok_piece(&b, &len, e->tok, ids[i], NULL) != TFM_OK)
			continue;
		raw += Max(len, 3) + 1;
		for (int k = 0; k < TFM_TOK_N_SPECIALS; k++)
			special |= ids[i] == e->info.special_ids[k];
		if (!special)
			least += len;
	}
	if (least > MaxAllocSize - VARHDRSZ)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("the text of these %d ids would be longer than a text can be (1 GB)", n)));
	return (size_t) Min(raw * 3, (uint64) (MaxAllocSize - VARHDRSZ));
}

text *
tfm_tokenizer_detokenize(TfmCachedTokenizer *e, const int32 *ids, int n)
{
	size_t		cap = detokenized_room(e, ids, n),
				got;
	text	   *out = palloc_extended(VARHDRSZ + Max(cap, 1), MCXT_ALLOC_HUGE);
	tfm_status err;

	/* many ids end at a cancel or statement_timeout (decoded again if nothing was raised) */
	tfm_tok_set_poll(e->tok, tfm_interrupt_pending, NULL);
	for (;;)
	{
		int			st = tfm_tok_decode(VARDATA(out), cap, &got, e->tok, (const int32_t *) ids,
										n, TFM_TOK_DECODE_REPLACE, &err);

		if (st != TFM_ECANCELED)
		{
			tfm_raise(st, &err, "cannot detokenize");
			break;
		}
		CHECK_FOR_INTERRUPTS();
	}
	SET_VARSIZE(out, VARHDRSZ + got);
	return tfm_text_without_nul(out);
}
