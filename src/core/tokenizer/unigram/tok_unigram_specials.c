/*
 * tok_unigram_specials.c — what a Unigram tokenizer finds in a text before
 * its normalizer runs:
 *   - the special pieces of a tokenizer.json (its added tokens marked
 *     special: T5's "<extra_id_0>", "</s>"), found as Hugging Face's added
 *     vocabulary finds them (tok_added.c's matcher: the leftmost match, the
 *     longest there, a token's lstrip / rstrip taking the White_Space
 *     beside it); the text between them is normalised and cut on its own
 *     (SPECIALS_IN_TEXT);
 *   - Marian's target-language codes (">>fra<<"), as MarianTokenizer takes
 *     them: the regular expression ">>.+<<" (greedy, "." any character but
 *     a newline) matched at the start of the text is a token, every match
 *     anywhere is taken out of the text before SentencePiece (LANG_CODES).
 * The Unigram encoder's entry is here: the text cut at what is found, each
 * part normalised and segmented by tok_unigram.c.
 */
#include <stdint.h>
#include <stdlib.h>

#include "tok_unigram_model.h"
#include "../unicode/tok_unicode.h"

/* the index of the specials found in text (tok_added.c's matcher), built
 * at the first encode */
static int
index_specials(tfm_tokenizer *t)
{
	tfm_tok_unigram *u = t->uni;
	int32_t		n = 0,
			   *ids = tfm_tok_alloc(((size_t) u->n + 1) * sizeof(int32_t));
	uint8_t    *flags = tfm_tok_alloc((size_t) u->n + 1);
	tfm_status	err;
	int			st;

	if (!ids || !flags)
	{
		tfm_tok_dealloc(ids);
		tfm_tok_dealloc(flags);
		return TFM_ENOMEM;
	}
	for (int32_t id = 0; id < u->n; id++)
		if (TFM_TOK_UNI_KIND(u->type[id]) == TFM_TOK_UNI_CONTROL && tfm_tok_piece_len(t, id) > 0)
		{
			ids[n] = id;
			flags[n++] = TFM_TOK_ADDED_SPECIAL |
				((u->type[id] & TFM_TOK_UNI_T_LSTRIP) ? TFM_TOK_ADDED_LSTRIP : 0) |
				((u->type[id] & TFM_TOK_UNI_T_RSTRIP) ? TFM_TOK_ADDED_RSTRIP : 0);
		}
	st = tfm_tok_added_build(&u->specials, t, ids, flags, n, &err);
	tfm_tok_dealloc(ids);
	tfm_tok_dealloc(flags);
	return st;
}

/* the start of the last "<<" in s[a..line_end), or SIZE_MAX */
static size_t
last_ll(const uint8_t *s, size_t a, size_t line_end)
{
	size_t		last = SIZE_MAX;

	for (size_t k = a; k + 1 < line_end; k++)
		if (s[k] == '<' && s[k + 1] == '<')
			last = k;
	return last;
}

int
tfm_tok_uni_lang_codes(tfm_tok_bytes *out, size_t **orig, size_t *orig_cap, int32_t *code,
					   const tfm_tokenizer *t, const uint8_t *s, size_t len)
{
	out->len = 0;
	*code = -1;
	/* line by line: a match ends at the line's last "<<" (".+" is greedy and
	 * stops at a newline), so each line is read twice at most */
	for (size_t a = 0; a < len;)
	{
		size_t		line_end = a,
					last;

		while (line_end < len && s[line_end] != '\n')
			line_end++;
		last = last_ll(s, a, line_end);
		for (size_t i = a; i < line_end; i++)
		{
			if (last != SIZE_MAX && last >= i + 3 && s[i] == '>' && s[i + 1] == '>')
			{
				if (i == 0)
				{
					*code = tfm_tok_piece_id(t, s, last + 2);
					if (*code < 0 || *code >= t->uni->n)
						*code = t->uni->unk_id;
				}
				i = last + 1;	/* the rest of the line has no "<<": no match */
				last = SIZE_MAX;
				continue;
			}
			if (tfm_tok_bytes_append(out, s + i, 1) ||
				tfm_grow((void **) orig, orig_cap, out->len, sizeof(size_t)))
				return TFM_ENOMEM;
			(*orig)[out->len - 1] = i;
		}
		if (line_end < len)
		{
			if (tfm_tok_bytes_append(out, s + line_end, 1) ||
				tfm_grow((void **) orig, orig_cap, out->len, sizeof(size_t)))
				return TFM_ENOMEM;
			(*orig)[out->len - 1] = line_end;
		}
		a = line_end + 1;
	}
	return TFM_OK;
}

/* one id (a special or a language code) at offset at */
static void
emit_one(int32_t *out_ids, size_t *offs, size_t cap, size_t *n_out, int32_t id, size_t at)
{
	if (*n_out < cap)
	{
		out_ids[*n_out] = id;
		if (offs)
			offs[*n_out] = at;
	}
	(*n_out)++;
}

int
tfm_tok_unigram_encode(int32_t *out_ids, size_t *offs, size_t cap, size_t *n_out,
					   tfm_tokenizer *t, const uint8_t *s, size_t len)
{
	int			st = TFM_OK;

	*n_out = 0;
	if (t->info.flags & TFM_TOK_INFO_LANG_CODES)
	{
		tfm_tok_bytes rest = {0};
		size_t	   *orig = NULL,
					orig_cap = 0;
		int32_t		code;

		st = tfm_tok_uni_lang_codes(&rest, &orig, &orig_cap, &code, t, s, len);
		if (st == TFM_OK && code >= 0)
			emit_one(out_ids, offs, cap, n_out, code, 0);
		if (st == TFM_OK && rest.len > 0)
			st = tfm_tok_uni_encode_part(out_ids, offs, cap, n_out, t, rest.data, rest.len, orig, 0);
		tfm_tok_bytes_free(&rest);
		tfm_tok_dealloc(orig);
		return st;
	}
	if (t->info.flags & TFM_TOK_INFO_SPECIALS_IN_TEXT)
	{
		size_t		done = 0,
					a,
					b;
		int32_t		id;
		int			found;

		if (!t->uni->specials && (st = index_specials(t)) != TFM_OK)
			return st;
		while (done < len &&
			   (found = tfm_tok_added_find(&id, &a, &b, t->uni->specials, t, 0, 0, s, len, done)) != 0)
		{
			if (found < 0)
				return TFM_ECANCELED;
			if (a > done &&
				(st = tfm_tok_uni_encode_part(out_ids, offs, cap, n_out, t, s + done, a - done, NULL, done)) != TFM_OK)
				return st;
			emit_one(out_ids, offs, cap, n_out, id, a);
			done = b;
		}
		if (done < len)
			st = tfm_tok_uni_encode_part(out_ids, offs, cap, n_out, t, s + done, len - done, NULL, done);
		return st;
	}
	return tfm_tok_uni_encode_part(out_ids, offs, cap, n_out, t, s, len, NULL, 0);
}

size_t
tfm_tok_unigram_normalized_len(tfm_tokenizer *t, const uint8_t *s, size_t len)
{
	/* the parts' normalized lengths, and one for each special or code */
	if (t->info.flags & TFM_TOK_INFO_LANG_CODES)
	{
		tfm_tok_bytes rest = {0};
		size_t	   *orig = NULL,
					orig_cap = 0,
					n = SIZE_MAX;
		int32_t		code;

		if (tfm_tok_uni_lang_codes(&rest, &orig, &orig_cap, &code, t, s, len) == TFM_OK)
			n = tfm_tok_uni_part_len(t, rest.data ? rest.data : s, rest.len);
		tfm_tok_bytes_free(&rest);
		tfm_tok_dealloc(orig);
		return n == SIZE_MAX ? n : n + 1;
	}
	if (t->info.flags & TFM_TOK_INFO_SPECIALS_IN_TEXT)
	{
		size_t		done = 0,
					a,
					b,
					n = 0,
					p;
		int32_t		id;

		if (!t->uni->specials && index_specials(t) != TFM_OK)
			return SIZE_MAX;
		while (done < len && tfm_tok_added_find(&id, &a, &b, t->uni->specials, t, 0, 0, s, len, done) > 0)
		{
			if ((p = tfm_tok_uni_part_len(t, s + done, a - done)) == SIZE_MAX)
				return p;
			n += p + 1;
			done = b;
		}
		if ((p = tfm_tok_uni_part_len(t, s + done, len - done)) == SIZE_MAX)
			return p;
		return n + p;
	}
	return tfm_tok_uni_part_len(t, s, len);
}
