/*
 * tok_unigram_specials.c — what a Unigram tokenizer finds in a text before
 * its normalizer runs:
 *   - the special pieces of a tokenizer.json (its added tokens marked
 *     special: T5's "<extra_id_0>", "</s>"), found as Hugging Face's added
 *     vocabulary finds them: the leftmost match, the longest there, a
 *     token's lstrip / rstrip taking the White_Space beside it; the text
 *     between them is normalised and cut on its own (SPECIALS_IN_TEXT);
 *   - Marian's target-language codes (">>fra<<"), as MarianTokenizer takes
 *     them: the regular expression ">>.+<<" (greedy, "." any character but
 *     a newline) matched at the start of the text is a token, every match
 *     anywhere is taken out of the text before SentencePiece (LANG_CODES).
 * The Unigram encoder's entry is here: the text cut at what is found, each
 * part normalised and segmented by tok_unigram.c.
 */
#include <stdint.h>
#include <stdlib.h>

#include "tok_unigram.h"
#include "../unicode/tok_unicode.h"

static const tfm_tokenizer *sort_t;

/* by first byte, then longest first, then lowest id */
static int
cmp_special(const void *x, const void *y)
{
	int32_t		a = *(const int32_t *) x,
				b = *(const int32_t *) y;
	size_t		la = tfm_tok_piece_len(sort_t, a),
				lb = tfm_tok_piece_len(sort_t, b);
	uint8_t		fa = tfm_tok_piece_ptr(sort_t, a)[0],
				fb = tfm_tok_piece_ptr(sort_t, b)[0];

	if (fa != fb)
		return fa < fb ? -1 : 1;
	if (la != lb)
		return la > lb ? -1 : 1;
	return a < b ? -1 : a > b;
}

/* the index of the specials found in text, built at the first encode */
static int
index_specials(tfm_tokenizer *t)
{
	tfm_tok_unigram *u = t->uni;
	int32_t		n = 0;

	memset(u->sp_start, 0, sizeof(u->sp_start));
	u->sp_ids = tfm_tok_alloc(((size_t) u->n + 1) * sizeof(int32_t));
	if (!u->sp_ids)
		return TFM_ENOMEM;
	for (int32_t id = 0; id < u->n; id++)
		if (TFM_TOK_UNI_KIND(u->type[id]) == TFM_TOK_UNI_CONTROL && tfm_tok_piece_len(t, id) > 0)
			u->sp_ids[n++] = id;
	/* qsort has no context argument: the tokenizer is built by one thread */
	sort_t = t;
	qsort(u->sp_ids, (size_t) n, sizeof(int32_t), cmp_special);
	sort_t = NULL;
	for (int32_t i = 0; i < n; i++)
		u->sp_start[tfm_tok_piece_ptr(t, u->sp_ids[i])[0] + 1]++;
	for (int b = 1; b <= 256; b++)
		u->sp_start[b] += u->sp_start[b - 1];
	return TFM_OK;
}

/* the end of the White_Space run that starts at i (i itself if none) */
static size_t
space_after(const uint8_t *s, size_t len, size_t i)
{
	while (i < len)
	{
		int32_t		cp;
		size_t		ul = tfm_tok_utf8_next(&cp, s + i, len - i);

		if (!tfm_tok_white_space(cp))
			break;
		i += ul;
	}
	return i;
}

/* the start of the White_Space run that ends at end, not before floor */
static size_t
space_before(const uint8_t *s, size_t floor, size_t end)
{
	size_t		i = floor,
				last = floor;	/* the end of the last character that is not White_Space */

	while (i < end)
	{
		int32_t		cp;
		size_t		ul = tfm_tok_utf8_next(&cp, s + i, end - i);

		i += ul;
		if (!tfm_tok_white_space(cp))
			last = i;
	}
	return last;
}

int
tfm_tok_uni_find_special(int32_t *id, size_t *a, size_t *b, const tfm_tokenizer *t,
						 const uint8_t *s, size_t len, size_t from, size_t floor)
{
	const tfm_tok_unigram *u = t->uni;

	if (!u->sp_ids || u->sp_start[256] == 0)
		return 0;
	for (size_t i = from; i < len; i++)
	{
		int32_t		lo = u->sp_start[s[i]],
					hi = u->sp_start[s[i] + 1];

		for (int32_t k = lo; k < hi; k++)
		{
			int32_t		sid = u->sp_ids[k];
			size_t		l = tfm_tok_piece_len(t, sid);

			if (l > len - i || memcmp(s + i, tfm_tok_piece_ptr(t, sid), l) != 0)
				continue;
			*id = sid;
			*a = (u->type[sid] & TFM_TOK_UNI_T_LSTRIP) ? space_before(s, floor, i) : i;
			*b = (u->type[sid] & TFM_TOK_UNI_T_RSTRIP) ? space_after(s, len, i + l) : i + l;
			return 1;
		}
	}
	return 0;
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

		if (!t->uni->sp_ids && (st = index_specials(t)) != TFM_OK)
			return st;
		while (done < len && tfm_tok_uni_find_special(&id, &a, &b, t, s, len, done, done))
		{
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

		if (!t->uni->sp_ids && index_specials(t) != TFM_OK)
			return SIZE_MAX;
		while (done < len && tfm_tok_uni_find_special(&id, &a, &b, t, s, len, done, done))
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
