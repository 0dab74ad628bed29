/*
 * tok_vocab.c: a tokenizer's vocabulary and merges: building (from training,
 * import or stored rows, all through one validating path), the accessors
 * that export it as rows, and freeing.
 *
 * Rows: tfm_tok_info, then piece bytes for ids 0 .. vocab_size-1, then
 * (left, right) for ranks 0 .. n_merges-1.  The merge result is not stored:
 * it is the id whose piece is left's bytes followed by right's.
 *
 * GPT2_JS: gpt-3-encoder looks merge ranks up with the pair joined by ","
 * as an object key, so a pair such as ("\",", "\"") finds the rank of the
 * real merge ("\"", ",\"").  Such aliases are derived here from the merges
 * (11 pairs for GPT-2) so that encoding matches the reference exactly.
 */
#include "tok_internal.h"
#include "pretokenize/tok_split.h"
#include "unicode/tok_unicode.h"

void
tfm_tok_free(tfm_tokenizer *t)
{
	if (!t)
		return;
	tfm_tok_dealloc(t->piece_pool);
	tfm_tok_dealloc(t->piece_off);
	tfm_tok_strtab_free(&t->lookup);
	tfm_tok_dealloc(t->lookup_id);
	tfm_tok_dealloc(t->merge_left);
	tfm_tok_dealloc(t->merge_right);
	tfm_tok_dealloc(t->merge_result);
	tfm_tok_u64map_free(&t->merge_rank);
	tfm_tok_ivec_free(&t->alias_rank);
	tfm_tok_ivec_free(&t->alias_result);
	tfm_tok_dealloc(t->is_special);
	tfm_tok_added_free(t->added);
	tfm_tok_strtab_free(&t->cache);
	tfm_tok_dealloc(t->cache_start);
	tfm_tok_dealloc(t->cache_len);
	tfm_tok_ivec_free(&t->cache_ids);
	tfm_tok_ivec_free(&t->work);
	tfm_tok_ivec_free(&t->work2);
	tfm_tok_ivec_free(&t->work3);
	tfm_tok_bytes_free(&t->wbuf);
	tfm_tok_splits_free(t->splits);
	tfm_tok_bytes_free(&t->nbuf);
	tfm_tok_dealloc(t->nalign);
	if (t->uni)
		t->uni_free(t->uni);	/* the unigram/ loaders' own free */
	tfm_tok_dealloc(t);
}

static int
check_info(const tfm_tok_info *info, tfm_status *err)
{
	const uint32_t hf_opts = TFM_TOK_INFO_LLAMA3 | TFM_TOK_INFO_DIGITS |
		TFM_TOK_INFO_DIGIT_RUNS | TFM_TOK_INFO_PREFIX_SPACE | TFM_TOK_INFO_IGNORE_MERGES |
		TFM_TOK_INFO_SPLIT | TFM_TOK_INFO_NFC;
	int i, j;

	if (info->format_version != TFM_TOK_FORMAT_VERSION)
		return tfm_status_set(err, TFM_EFORMAT,
							"tokenizer format version %d is not supported (expected %d)",
							(int) info->format_version, TFM_TOK_FORMAT_VERSION);
	if (!tfm_tok_kind_name(info->kind))
		return tfm_status_set(err, TFM_EFORMAT, "unknown tokenizer kind %d", (int) info->kind);
	if (info->flags & ~(TFM_TOK_INFO_LOWERCASE | TFM_TOK_INFO_GPT2_JS | TFM_TOK_INFO_BERT |
						TFM_TOK_INFO_SPIECE | TFM_TOK_INFO_TEXT_BOS | TFM_TOK_INFO_HF_BPE |
						hf_opts | TFM_TOK_INFO_CASED | TFM_TOK_INFO_KEEP_ACCENTS |
						TFM_TOK_INFO_TEXT_EOS | TFM_TOK_INFO_UNK_BY_TEXT |
						TFM_TOK_INFO_SPECIALS_IN_TEXT | TFM_TOK_INFO_LANG_CODES |
						TFM_TOK_INFO_NO_PREFIX))
		return tfm_status_set(err, TFM_EFORMAT, "unknown tokenizer flags 0x%x",
							(unsigned) info->flags);
	if ((info->flags & TFM_TOK_INFO_HF_BPE) &&
		(info->kind != TFM_TOK_BPE || (info->flags & (TFM_TOK_INFO_GPT2_JS | TFM_TOK_INFO_SPIECE))))
		return tfm_status_set(err, TFM_EFORMAT, "the tokenizer.json bpe flag needs a bpe tokenizer");
	if ((info->flags & hf_opts) && !(info->flags & TFM_TOK_INFO_HF_BPE))
		return tfm_status_set(err, TFM_EFORMAT,
							"pre-tokenizer options need a tokenizer.json bpe tokenizer");
	if ((info->flags & TFM_TOK_INFO_DIGITS) && (info->flags & TFM_TOK_INFO_DIGIT_RUNS))
		return tfm_status_set(err, TFM_EFORMAT, "the digits flags exclude each other");
	if ((info->flags & (TFM_TOK_INFO_CASED | TFM_TOK_INFO_KEEP_ACCENTS)) &&
		!(info->flags & TFM_TOK_INFO_BERT))
		return tfm_status_set(err, TFM_EFORMAT, "the cased and accents flags need the bert flag");
	if ((info->flags & TFM_TOK_INFO_GPT2_JS) && info->kind != TFM_TOK_BPE)
		return tfm_status_set(err, TFM_EFORMAT, "the gpt2 flag needs a bpe tokenizer");
	if ((info->flags & TFM_TOK_INFO_SPIECE) &&
		(info->kind != TFM_TOK_BPE || (info->flags & TFM_TOK_INFO_GPT2_JS)))
		return tfm_status_set(err, TFM_EFORMAT, "the sentencepiece flag needs a bpe tokenizer");
	if ((info->flags & TFM_TOK_INFO_TEXT_BOS) &&
		!(info->flags & (TFM_TOK_INFO_SPIECE | TFM_TOK_INFO_HF_BPE)) &&
		info->kind != TFM_TOK_UNIGRAM)
		return tfm_status_set(err, TFM_EFORMAT,
							"the text-bos flag needs a sentencepiece, tokenizer.json bpe or unigram tokenizer");
	if ((info->flags & TFM_TOK_INFO_NO_PREFIX) && !(info->flags & TFM_TOK_INFO_SPIECE))
		return tfm_status_set(err, TFM_EFORMAT, "the no-prefix flag needs a sentencepiece tokenizer");
	if ((info->flags & TFM_TOK_INFO_TEXT_EOS) && info->kind != TFM_TOK_UNIGRAM)
		return tfm_status_set(err, TFM_EFORMAT, "the text-eos flag needs a unigram tokenizer");
	if ((info->flags & TFM_TOK_INFO_UNK_BY_TEXT) && info->kind != TFM_TOK_UNIGRAM)
		return tfm_status_set(err, TFM_EFORMAT, "the unk-by-text flag needs a unigram tokenizer");
	if (info->kind == TFM_TOK_UNIGRAM &&
		(info->flags & ~(TFM_TOK_INFO_TEXT_BOS | TFM_TOK_INFO_TEXT_EOS | TFM_TOK_INFO_UNK_BY_TEXT |
						 TFM_TOK_INFO_SPECIALS_IN_TEXT | TFM_TOK_INFO_LANG_CODES)))
		return tfm_status_set(err, TFM_EFORMAT, "a unigram tokenizer takes only the text-bos, text-eos, "
							  "unk-by-text, specials-in-text and language-codes flags");
	if ((info->flags & (TFM_TOK_INFO_SPECIALS_IN_TEXT | TFM_TOK_INFO_LANG_CODES)) &&
		info->kind != TFM_TOK_UNIGRAM)
		return tfm_status_set(err, TFM_EFORMAT,
							  "the specials-in-text and language-codes flags need a unigram tokenizer");
	if ((info->flags & TFM_TOK_INFO_SPECIALS_IN_TEXT) && (info->flags & TFM_TOK_INFO_LANG_CODES))
		return tfm_status_set(err, TFM_EFORMAT,
							  "the specials-in-text and language-codes flags exclude each other");
	if ((info->flags & TFM_TOK_INFO_BERT) && info->kind != TFM_TOK_WORDPIECE)
		return tfm_status_set(err, TFM_EFORMAT, "the bert flag needs a wordpiece tokenizer");
	if ((info->flags & TFM_TOK_INFO_LOWERCASE) &&
		info->kind != TFM_TOK_WORD && info->kind != TFM_TOK_WORDPIECE)
		return tfm_status_set(err, TFM_EFORMAT,
							"the lowercase flag needs a word or wordpiece tokenizer");
	if (info->vocab_size < TFM_TOK_N_SPECIALS || info->vocab_size > TFM_TOK_MAX_VOCAB_SIZE)
		return tfm_status_set(err, TFM_EFORMAT, "vocabulary size %d is out of range",
							(int) info->vocab_size);
	if (info->n_merges < 0 || (info->n_merges > 0 && info->kind != TFM_TOK_BPE) ||
		info->n_merges > TFM_TOK_MAX_VOCAB_SIZE)
		return tfm_status_set(err, TFM_EFORMAT, "merge count %d is invalid for kind %s",
							(int) info->n_merges, tfm_tok_kind_name(info->kind));
	for (i = 0; i < TFM_TOK_N_SPECIALS; i++)
	{
		if (info->special_ids[i] < 0 || info->special_ids[i] >= info->vocab_size)
			return tfm_status_set(err, TFM_EFORMAT, "special token %s has id %d out of range",
								tfm_tok_special_piece((tfm_tok_special) i),
								(int) info->special_ids[i]);
		for (j = 0; j < i; j++)
			if (info->special_ids[i] == info->special_ids[j])
				return tfm_status_set(err, TFM_EFORMAT, "special tokens %s and %s share id %d",
									tfm_tok_special_piece((tfm_tok_special) j),
									tfm_tok_special_piece((tfm_tok_special) i),
									(int) info->special_ids[i]);
	}
	return TFM_OK;
}

/* is s[0..n) exactly one valid UTF-8 character */
static int
one_char(const uint8_t *s, size_t n)
{
	int32_t cp;

	return n > 0 && tfm_tok_utf8_next(&cp, s, n) == n && cp >= 0;
}

/* adds merge aliases the way gpt-3-encoder's string keys create them */
static int
add_js_aliases(tfm_tokenizer *t, tfm_tok_ivec *extra_rank, tfm_tok_ivec *extra_result)
{
	tfm_tok_bytes key = {0};
	int32_t r;
	int st = TFM_OK;

	for (r = 0; r < t->info.n_merges && st == TFM_OK; r++)
	{
		int32_t l = t->merge_left[r], rt = t->merge_right[r];
		size_t ll = tfm_tok_piece_len(t, l), p;

		key.len = 0;
		if (tfm_tok_bytes_append(&key, tfm_tok_piece_ptr(t, l), ll) ||
			tfm_tok_bytes_append(&key, ",", 1) ||
			tfm_tok_bytes_append(&key, tfm_tok_piece_ptr(t, rt), tfm_tok_piece_len(t, rt)))
		{
			st = TFM_ENOMEM;
			break;
		}
		for (p = 0; p < key.len; p++)
		{
			int32_t ea, eb, ab, idx;
			uint64_t pk;
			tfm_tok_bytes cat = {0};

			if (key.data[p] != ',')
				continue;
			if (p == ll)
			{
				/* the real pair again: a later key may not have been its own */
				if (tfm_tok_u64map_put(&t->merge_rank, tfm_tok_pair_key(l, rt), r))
				{
					st = TFM_ENOMEM;
					break;
				}
				continue;
			}
			ea = tfm_tok_strtab_find(&t->lookup, key.data, p);
			eb = tfm_tok_strtab_find(&t->lookup, key.data + p + 1, key.len - p - 1);
			if (ea < 0 || eb < 0 || t->is_special[t->lookup_id[ea]] ||
				t->is_special[t->lookup_id[eb]])
				continue;
			/* the reference merges the alias into its own concatenation */
			if (tfm_tok_bytes_append(&cat, key.data, p) ||
				tfm_tok_bytes_append(&cat, key.data + p + 1, key.len - p - 1))
			{
				tfm_tok_bytes_free(&cat);
				st = TFM_ENOMEM;
				break;
			}
			ab = tfm_tok_strtab_find(&t->lookup, cat.data, cat.len);
			tfm_tok_bytes_free(&cat);
			if (ab < 0)
				continue;
			pk = tfm_tok_pair_key(t->lookup_id[ea], t->lookup_id[eb]);
			idx = t->info.n_merges + (int32_t) extra_rank->len;
			if (tfm_tok_ivec_push(extra_rank, r) ||
				tfm_tok_ivec_push(extra_result, t->lookup_id[ab]) ||
				tfm_tok_u64map_put(&t->merge_rank, pk, idx))
			{
				st = TFM_ENOMEM;
				break;
			}
		}
	}
	tfm_tok_bytes_free(&key);
	return st;
}

/*
 * SentencePiece's lookups: the id of each byte's <0xNN> piece (its byte
 * fallback) and of "▁" (U+2581, a space), -1 where missing or special.
 */
static void
spiece_prepare(tfm_tokenizer *t)
{
	static const char hex[] = "0123456789ABCDEF";

	for (int b = 0; b < 256; b++)
	{
		uint8_t p[6] = {'<', '0', 'x', (uint8_t) hex[b >> 4], (uint8_t) hex[b & 15], '>'};
		int32_t id = tfm_tok_piece_id(t, p, 6);

		t->fallback_id[b] = id >= 0 && !t->is_special[id] ? id : -1;
	}
	t->space_id = tfm_tok_piece_id(t, (const uint8_t[3]) {0xE2, 0x96, 0x81}, 3);
	if (t->space_id >= 0 && t->is_special[t->space_id])
		t->space_id = -1;
}

int
tfm_tok_build_from_strtab(tfm_tokenizer **out, const tfm_tok_info *info,
						  const tfm_tok_strtab *pieces, const int32_t *merge_lr,
						  tfm_status *err)
{
	tfm_tokenizer *t;
	int32_t i, n;
	int st;

	*out = NULL;
	if ((st = check_info(info, err)) != TFM_OK)
		return st;
	if (pieces->n != info->vocab_size)
		return tfm_status_set(err, TFM_EFORMAT, "%d distinct pieces for %d ids",
							(int) pieces->n, (int) info->vocab_size);
	n = info->vocab_size;
	t = tfm_tok_calloc(1, sizeof(*t));
	if (!t)
		return tfm_tok_oom(err);
	t->info = *info;
	t->piece_pool = tfm_tok_alloc(pieces->pool_len);
	t->piece_off = tfm_tok_alloc(((size_t) n + 1) * sizeof(uint64_t));
	t->lookup_id = tfm_tok_alloc((size_t) n * sizeof(int32_t));
	t->is_special = tfm_tok_calloc((size_t) n, 1);
	if (!t->piece_pool || !t->piece_off || !t->lookup_id || !t->is_special)
		goto oom;
	/* entry i of the strtab is id i: pieces are stored in id order */
	{
		uint64_t off = 0;

		for (i = 0; i < n; i++)
		{
			size_t l = pieces->len[i];

			memcpy(t->piece_pool + off, tfm_tok_strtab_key(pieces, i), l);
			t->piece_off[i] = off;
			off += l;
			if (l > t->max_piece_len)
				t->max_piece_len = l;
		}
		t->piece_off[n] = off;
	}
	for (i = 0; i < TFM_TOK_N_SPECIALS; i++)
	{
		int32_t id = info->special_ids[i];
		const char *name = tfm_tok_special_piece((tfm_tok_special) i);

		t->is_special[id] = 1;
		/* SentencePiece vocabularies name their own unk, bos and eos */
		if ((info->flags & TFM_TOK_INFO_SPIECE) &&
			(i == TFM_TOK_UNK || i == TFM_TOK_BOS || i == TFM_TOK_EOS))
			continue;
		/* an imported tokenizer.json keeps its own specials ([PAD], [CLS],
		 * <s>, <|begin_of_text|> ...) */
		if ((info->flags & (TFM_TOK_INFO_BERT | TFM_TOK_INFO_HF_BPE)) ||
			info->kind == TFM_TOK_UNIGRAM)
			continue;
		if (tfm_tok_piece_len(t, id) != strlen(name) ||
			memcmp(tfm_tok_piece_ptr(t, id), name, strlen(name)) != 0)
		{
			tfm_tok_free(t);
			return tfm_status_set(err, TFM_EFORMAT, "id %d must have the piece %s",
								(int) id, name);
		}
	}
	for (i = 0; i < 256; i++)
		t->byte_id[i] = -1;
	for (i = 0; i < n; i++)
	{
		int32_t e;
		int added;
		size_t l = tfm_tok_piece_len(t, i);
		const uint8_t *p = tfm_tok_piece_ptr(t, i);

		if (l > TFM_TOK_MAX_PIECE_BYTES || (l == 0 && !t->is_special[i]))
		{
			tfm_tok_free(t);
			return tfm_status_set(err, TFM_EFORMAT, "piece of id %d has invalid length %zu",
								(int) i, l);
		}
		if (tfm_tok_strtab_intern(&e, &added, &t->lookup, p, l))
			goto oom;
		if (!added)
		{
			tfm_tok_free(t);
			return tfm_status_set(err, TFM_EFORMAT, "ids %d and %d have the same piece",
								(int) t->lookup_id[e], (int) i);
		}
		t->lookup_id[e] = i;
		if (t->is_special[i])
			continue;
		if (l == 1)
			t->byte_id[p[0]] = i;
		if (info->kind == TFM_TOK_CHAR && !one_char(p, l))
		{
			tfm_tok_free(t);
			return tfm_status_set(err, TFM_EFORMAT,
								"piece of id %d is not one UTF-8 character", (int) i);
		}
	}
	if (info->kind == TFM_TOK_BYTE ||
		(info->kind == TFM_TOK_BPE && !(info->flags & TFM_TOK_INFO_SPIECE)))
		for (i = 0; i < 256; i++)
			if (t->byte_id[i] < 0)
			{
				tfm_tok_free(t);
				return tfm_status_set(err, TFM_EFORMAT,
									"%s vocabulary lacks the one-byte piece 0x%02x",
									tfm_tok_kind_name(info->kind), (unsigned) i);
			}
	if (info->kind == TFM_TOK_BYTE && n != TFM_TOK_N_SPECIALS + 256)
	{
		tfm_tok_free(t);
		return tfm_status_set(err, TFM_EFORMAT, "a byte vocabulary has %d ids, not %d",
							TFM_TOK_N_SPECIALS + 256, (int) n);
	}

	/* merges */
	if (info->n_merges > 0)
	{
		int32_t nm = info->n_merges, r;
		tfm_tok_bytes cat = {0};

		t->merge_left = tfm_tok_alloc((size_t) nm * sizeof(int32_t));
		t->merge_right = tfm_tok_alloc((size_t) nm * sizeof(int32_t));
		t->merge_result = tfm_tok_alloc((size_t) nm * sizeof(int32_t));
		if (!t->merge_left || !t->merge_right || !t->merge_result)
			goto oom;
		for (r = 0; r < nm; r++)
		{
			int32_t l = merge_lr[2 * r], rt = merge_lr[2 * r + 1], e;

			if (l < 0 || l >= n || rt < 0 || rt >= n || t->is_special[l] || t->is_special[rt])
			{
				tfm_tok_free(t);
				tfm_tok_bytes_free(&cat);
				return tfm_status_set(err, TFM_EFORMAT,
									"merge of rank %d refers to invalid ids %d and %d",
									(int) r, (int) l, (int) rt);
			}
			cat.len = 0;
			if (tfm_tok_bytes_append(&cat, tfm_tok_piece_ptr(t, l), tfm_tok_piece_len(t, l)) ||
				tfm_tok_bytes_append(&cat, tfm_tok_piece_ptr(t, rt), tfm_tok_piece_len(t, rt)))
			{
				tfm_tok_bytes_free(&cat);
				goto oom;
			}
			e = tfm_tok_strtab_find(&t->lookup, cat.data, cat.len);
			if (e < 0 || t->is_special[t->lookup_id[e]])
			{
				tfm_tok_free(t);
				tfm_tok_bytes_free(&cat);
				return tfm_status_set(err, TFM_EFORMAT,
									"merge of rank %d (ids %d, %d) makes a piece not in the vocabulary",
									(int) r, (int) l, (int) rt);
			}
			t->merge_left[r] = l;
			t->merge_right[r] = rt;
			t->merge_result[r] = t->lookup_id[e];
			if (!(info->flags & TFM_TOK_INFO_GPT2_JS) &&
				tfm_tok_u64map_get(&t->merge_rank, tfm_tok_pair_key(l, rt)) >= 0)
			{
				tfm_tok_free(t);
				tfm_tok_bytes_free(&cat);
				return tfm_status_set(err, TFM_EFORMAT,
									"merge of rank %d (ids %d, %d) is a duplicate",
									(int) r, (int) l, (int) rt);
			}
			if (tfm_tok_u64map_put(&t->merge_rank, tfm_tok_pair_key(l, rt), r))
			{
				tfm_tok_bytes_free(&cat);
				goto oom;
			}
		}
		tfm_tok_bytes_free(&cat);
		/* real merges first (above), aliases after: an alias replaces a
		 * real pair only where the reference's string key does too */
		if ((info->flags & TFM_TOK_INFO_GPT2_JS) &&
			add_js_aliases(t, &t->alias_rank, &t->alias_result) != TFM_OK)
			goto oom;
	}
	if (info->flags & TFM_TOK_INFO_SPIECE)
		spiece_prepare(t);
	*out = t;
	return TFM_OK;
oom:
	tfm_tok_free(t);
	return tfm_tok_oom(err);
}

int
tfm_tok_vocab_add(tfm_tok_strtab *s, const uint8_t *piece, size_t len, int32_t i,
				  tfm_status *err)
{
	int32_t e;
	int added;

	if (tfm_tok_strtab_intern(&e, &added, s, piece, len))
	{
		tfm_tok_strtab_free(s);
		return tfm_tok_oom(err);
	}
	if (!added)
	{
		tfm_tok_strtab_free(s);
		return tfm_status_set(err, TFM_EFORMAT, "ids %d and %d have the same piece",
							(int) e, (int) i);
	}
	return TFM_OK;
}

int
tfm_tok_rows_strtab(tfm_tok_strtab *tab, const tfm_tok_info *info, const uint8_t *const *pieces,
					const size_t *piece_lens, tfm_status *err)
{
	int st;

	for (int32_t i = 0; i < info->vocab_size; i++)
	{
		if (piece_lens[i] > TFM_TOK_MAX_PIECE_BYTES)
		{
			tfm_tok_strtab_free(tab);
			return tfm_status_set(err, TFM_EFORMAT, "piece of id %d is longer than %d bytes",
								(int) i, TFM_TOK_MAX_PIECE_BYTES);
		}
		if ((st = tfm_tok_vocab_add(tab, pieces[i], piece_lens[i], i, err)) != TFM_OK)
			return st;
	}
	return TFM_OK;
}

int
tfm_tok_load(tfm_tokenizer **out, const tfm_tok_info *info, const uint8_t *const *pieces,
			 const size_t *piece_lens, const int32_t *merge_left, const int32_t *merge_right,
			 tfm_status *err)
{
	tfm_tok_strtab tab = {0};
	int32_t *lr = NULL, i;
	int st;

	*out = NULL;
	if ((st = check_info(info, err)) != TFM_OK)
		return st;
	if (info->kind == TFM_TOK_UNIGRAM)
		return tfm_status_set(err, TFM_EFORMAT,
							"a unigram tokenizer is loaded with its model data (tfm_tok_load_unigram)");
	if ((st = tfm_tok_rows_strtab(&tab, info, pieces, piece_lens, err)) != TFM_OK)
		return st;
	if (info->n_merges > 0)
	{
		lr = tfm_tok_alloc((size_t) info->n_merges * 2 * sizeof(int32_t));
		if (!lr)
		{
			tfm_tok_strtab_free(&tab);
			return tfm_tok_oom(err);
		}
		for (i = 0; i < info->n_merges; i++)
		{
			lr[2 * i] = merge_left[i];
			lr[2 * i + 1] = merge_right[i];
		}
	}
	st = tfm_tok_build_from_strtab(out, info, &tab, lr, err);
	tfm_tok_dealloc(lr);
	tfm_tok_strtab_free(&tab);
	return st;
}

void
tfm_tok_get_info(tfm_tok_info *info, const tfm_tokenizer *t)
{
	*info = t->info;
}

int
tfm_tok_piece(const uint8_t **bytes, size_t *len, const tfm_tokenizer *t, int32_t id,
			  tfm_status *err)
{
	if (id < 0 || id >= t->info.vocab_size)
		return tfm_status_set(err, TFM_ERANGE,
							"token id %d is out of range (the vocabulary has %d ids)",
							(int) id, (int) t->info.vocab_size);
	*bytes = tfm_tok_piece_ptr(t, id);
	*len = tfm_tok_piece_len(t, id);
	return TFM_OK;
}

int
tfm_tok_merge(int32_t *left, int32_t *right, int32_t *result, const tfm_tokenizer *t,
			  int32_t rank, tfm_status *err)
{
	if (rank < 0 || rank >= t->info.n_merges)
		return tfm_status_set(err, TFM_ERANGE,
							"merge rank %d is out of range (the tokenizer has %d merges)",
							(int) rank, (int) t->info.n_merges);
	*left = t->merge_left[rank];
	*right = t->merge_right[rank];
	*result = t->merge_result[rank];
	return TFM_OK;
}

int32_t
tfm_tok_piece_id(const tfm_tokenizer *t, const uint8_t *bytes, size_t len)
{
	int32_t e = tfm_tok_strtab_find(&t->lookup, bytes, len);

	return e < 0 ? -1 : t->lookup_id[e];
}

int32_t
tfm_tok_special_id(const tfm_tokenizer *t, tfm_tok_special which)
{
	if ((int) which < 0 || (int) which >= TFM_TOK_N_SPECIALS)
		return -1;
	return t->info.special_ids[which];
}
