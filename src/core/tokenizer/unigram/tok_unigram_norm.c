/*
 * tok_unigram_norm.c — a Unigram tokenizer's normalizer and pre-tokenizer
 * as its tokenizer.json describes them, keeping each byte's offset in the
 * input:
 *   Precompiled    sentencepiece's NormalizePrefix over the text (longest
 *                  match of the charsmap, tok_precompiled.c)
 *   Replace        a string, every leftmost non-overlapping occurrence;
 *                  or the Regex " {2,}" (runs of two or more spaces)
 *   Strip          White_Space at the left and/or right end
 *   Prepend        a string before a text that is not empty
 *   Lowercase      simple lower-case mapping
 *   NFC, NFD, NFKC, NFKD  the Unicode normalization forms
 *                  (tok_unicode_forms.c)
 *   StripAccents   the characters of General_Category Mark removed
 * then WhitespaceSplit (words = runs of non-White_Space) and/or Metaspace
 * (" " -> the replacement, the replacement put before the first word or
 * every word that does not start with it, and with split a new word
 * before each replacement, which goes with what follows it).
 * White_Space is Unicode's property, as Rust's char::is_whitespace.
 * Freeing a Unigram model (its steps, scores and trie) is here too, below
 * the files that build one; they hand it to the tokenizer with the model
 * (uni_free), which tok_vocab.c's tfm_tok_free calls.
 */
#include "tok_unigram_model.h"
#include "../unicode/tok_unicode.h"
#include "../unicode/tok_unicode_forms.h"

void
tfm_tok_unigram_free(tfm_tok_unigram *u)
{
	if (!u)
		return;
	tfm_tok_dealloc(u->score);
	tfm_tok_dealloc(u->type);
	for (int k = 0; k < u->n_steps; k++)
	{
		tfm_tok_dealloc(u->step[k].a);
		tfm_tok_dealloc(u->step[k].b);
		tfm_tok_charsmap_free(&u->step[k].map);
	}
	tfm_tok_u64map_free(&u->trie);
	tfm_tok_dealloc(u->node_id);
	tfm_tok_added_free(u->specials);
	tfm_tok_dealloc(u);
}

void
tfm_tok_otext_free(tfm_tok_otext *x)
{
	tfm_tok_dealloc(x->b);
	tfm_tok_dealloc(x->orig);
	memset(x, 0, sizeof(*x));
}

/* appends bytes p[0..n) all from input offset at; TFM_ELIMIT past limit */
static int
put(tfm_tok_otext *x, const uint8_t *p, size_t n, size_t at, size_t limit)
{
	size_t c1, c2;

	if (x->len + n > limit)
		return TFM_ELIMIT;
	c1 = c2 = x->cap;
	if (x->len + n > x->cap)
	{
		if (tfm_grow((void **) &x->b, &c1, x->len + n, 1) ||
			tfm_grow((void **) &x->orig, &c2, x->len + n, sizeof(size_t)))
			return TFM_ENOMEM;
		x->cap = c1 < c2 ? c1 : c2;
	}
	memcpy(x->b + x->len, p, n);
	for (size_t i = 0; i < n; i++)
		x->orig[x->len + i] = at;
	x->len += n;
	return TFM_OK;
}


static int
step_precompiled(tfm_tok_otext *o, const tfm_tok_otext *x, const tfm_tok_charsmap *m, size_t limit)
{
	size_t i = 0;
	int st;

	while (i < x->len)
	{
		const uint8_t *r;
		size_t rl, used = tfm_tok_charsmap_prefix(&r, &rl, m, x->b + i, x->len - i);

		if ((st = put(o, r, rl, x->orig[i], limit)) != TFM_OK)
			return st;
		i += used;
	}
	return TFM_OK;
}

static int
step_replace(tfm_tok_otext *o, const tfm_tok_otext *x, const tfm_tok_uni_step *s, size_t limit)
{
	size_t i = 0;
	int st;

	while (i < x->len)
	{
		size_t m = 0;

		if (s->kind == TFM_TOK_NORM_REPLACE_SPACES)
			while (i + m < x->len && x->b[i + m] == ' ')
				m++;
		else if (s->a_len > 0 && i + s->a_len <= x->len && memcmp(x->b + i, s->a, s->a_len) == 0)
			m = s->a_len;
		if ((s->kind == TFM_TOK_NORM_REPLACE_SPACES && m >= 2) ||
			(s->kind == TFM_TOK_NORM_REPLACE && m > 0))
		{
			if ((st = put(o, s->b, s->b_len, x->orig[i], limit)) != TFM_OK)
				return st;
			i += m;
			continue;
		}
		m = m > 0 ? m : 1;
		for (size_t k = 0; k < m; k++)
			if ((st = put(o, x->b + i + k, 1, x->orig[i + k], limit)) != TFM_OK)
				return st;
		i += m;
	}
	return TFM_OK;
}

static int
step_strip(tfm_tok_otext *o, const tfm_tok_otext *x, const tfm_tok_uni_step *s, size_t limit)
{
	size_t a = 0, b = x->len, i = 0;

	if (s->left)
		while (a < b)
		{
			int32_t cp;
			size_t ul = tfm_tok_utf8_next(&cp, x->b + a, b - a);

			if (!tfm_tok_white_space(cp))
				break;
			a += ul;
		}
	if (s->right)
	{
		size_t end = a;

		/* the end of the last character that is not White_Space */
		for (i = a; i < b;)
		{
			int32_t cp;
			size_t ul = tfm_tok_utf8_next(&cp, x->b + i, b - i);

			i += ul;
			if (!tfm_tok_white_space(cp))
				end = i;
		}
		b = end;
	}
	for (i = a; i < b; i++)
	{
		int st = put(o, x->b + i, 1, x->orig[i], limit);

		if (st != TFM_OK)
			return st;
	}
	return TFM_OK;
}

static int
step_lower(tfm_tok_otext *o, const tfm_tok_otext *x, size_t limit)
{
	size_t i = 0;

	while (i < x->len)
	{
		int32_t cp;
		size_t ul = tfm_tok_utf8_next(&cp, x->b + i, x->len - i), tl;
		uint8_t tmp[4];
		int st;

		if (cp < 0)
		{
			for (size_t k = 0; k < ul; k++)
				if ((st = put(o, x->b + i + k, 1, x->orig[i + k], limit)) != TFM_OK)
					return st;
		}
		else
		{
			tl = tfm_tok_utf8_put(tmp, tfm_tok_lower((uint32_t) cp));
			if ((st = put(o, tmp, tl, x->orig[i], limit)) != TFM_OK)
				return st;
		}
		i += ul;
	}
	return TFM_OK;
}

/* a normalization form of x, each byte keeping the offset of the character
 * it comes from */
static int
step_form(tfm_tok_otext *o, const tfm_tok_otext *x, unsigned form, size_t limit)
{
	tfm_tok_bytes b = {0};
	size_t	   *align = NULL,
				cap = 0;
	int			same,
				st;

	st = tfm_tok_unicode_form(&b, &align, &cap, &same, x->b, x->len, form);
	if (st == TFM_OK && same)
		for (size_t i = 0; i < x->len && st == TFM_OK; i++)
			st = put(o, x->b + i, 1, x->orig[i], limit);
	else
		for (size_t i = 0; i < b.len && st == TFM_OK; i++)
			st = put(o, b.data + i, 1, x->orig[align[i]], limit);
	tfm_tok_bytes_free(&b);
	tfm_tok_dealloc(align);
	return st;
}

/* x without its marks (Hugging Face's StripAccents) */
static int
step_strip_accents(tfm_tok_otext *o, const tfm_tok_otext *x, size_t limit)
{
	size_t		i = 0;

	while (i < x->len)
	{
		int32_t		cp;
		size_t		ul = tfm_tok_utf8_next(&cp, x->b + i, x->len - i);

		if (!tfm_tok_is_mark(cp))
			for (size_t k = 0; k < ul; k++)
			{
				int			st = put(o, x->b + i + k, 1, x->orig[i + k], limit);

				if (st != TFM_OK)
					return st;
			}
		i += ul;
	}
	return TFM_OK;
}

static int
run_step(tfm_tok_otext *o, const tfm_tok_otext *x, const tfm_tok_uni_step *s, size_t limit)
{
	o->len = 0;
	switch (s->kind)
	{
		case TFM_TOK_NORM_PRECOMPILED:
			return step_precompiled(o, x, &s->map, limit);
		case TFM_TOK_NORM_REPLACE:
		case TFM_TOK_NORM_REPLACE_SPACES:
			return step_replace(o, x, s, limit);
		case TFM_TOK_NORM_STRIP:
			return step_strip(o, x, s, limit);
		case TFM_TOK_NORM_PREPEND:
			{
				int st;

				if (x->len == 0)
					return TFM_OK;
				if ((st = put(o, s->a, s->a_len, x->orig[0], limit)) != TFM_OK)
					return st;
				for (size_t i = 0; i < x->len; i++)
					if ((st = put(o, x->b + i, 1, x->orig[i], limit)) != TFM_OK)
						return st;
				return TFM_OK;
			}
		case TFM_TOK_NORM_LOWERCASE:
			return step_lower(o, x, limit);
		case TFM_TOK_NORM_NFC:
			return step_form(o, x, TFM_TOK_UFORM_NFC, limit);
		case TFM_TOK_NORM_NFD:
			return step_form(o, x, TFM_TOK_UFORM_NFD, limit);
		case TFM_TOK_NORM_NFKC:
			return step_form(o, x, TFM_TOK_UFORM_NFKC, limit);
		case TFM_TOK_NORM_NFKD:
			return step_form(o, x, TFM_TOK_UFORM_NFKD, limit);
		case TFM_TOK_NORM_STRIP_ACCENTS:
			return step_strip_accents(o, x, limit);
	}
	return TFM_EFORMAT;
}

/* Metaspace on the word x->b[a..b): appended to out, new words' starts
 * pushed; "first" prepends only to the word at the start of the input
 * (Hugging Face: offsets_original().0 == 0) */
static int
metaspace_word(tfm_tok_otext *out, tfm_tok_ivec *starts, const tfm_tok_unigram *u,
			   const tfm_tok_otext *x, size_t a, size_t b, size_t limit)
{
	int prepend = u->prepend == TFM_TOK_PREPEND_ALWAYS ||
		(u->prepend == TFM_TOK_PREPEND_FIRST && a < b && x->orig[a] == 0);
	size_t i;
	int st;

	if (a == b)
		return TFM_OK;
	if (tfm_tok_ivec_push(starts, (int32_t) out->len))
		return TFM_ENOMEM;
	/* the word starts with the replacement if it is there or " " is */
	if (prepend && x->b[a] != ' ' &&
		!(b - a >= u->repl_len && memcmp(x->b + a, u->repl, u->repl_len) == 0))
		if ((st = put(out, u->repl, u->repl_len, x->orig[a], limit)) != TFM_OK)
			return st;
	for (i = a; i < b;)
	{
		int is_repl = x->b[i] == ' ' ||
			(b - i >= u->repl_len && memcmp(x->b + i, u->repl, u->repl_len) == 0);

		if (is_repl)
		{
			if ((u->pretok & TFM_TOK_PRETOK_METASPACE_SPLIT) &&
				(size_t) starts->data[starts->len - 1] != out->len &&
				tfm_tok_ivec_push(starts, (int32_t) out->len))
				return TFM_ENOMEM;
			if ((st = put(out, u->repl, u->repl_len, x->orig[i], limit)) != TFM_OK)
				return st;
			i += x->b[i] == ' ' ? 1 : u->repl_len;
		}
		else
		{
			if ((st = put(out, x->b + i, 1, x->orig[i], limit)) != TFM_OK)
				return st;
			i++;
		}
	}
	return TFM_OK;
}

int
tfm_tok_unigram_pretokenize(tfm_tok_otext *out, tfm_tok_ivec *starts, const tfm_tok_unigram *u,
							const uint8_t *s, size_t len)
{
	return tfm_tok_unigram_pretokenize_at(out, starts, u, s, len, NULL, 0);
}

int
tfm_tok_unigram_pretokenize_at(tfm_tok_otext *out, tfm_tok_ivec *starts, const tfm_tok_unigram *u,
							   const uint8_t *s, size_t len, const size_t *orig, size_t base)
{
	tfm_tok_otext x = {0}, y = {0};
	size_t limit, i;
	int st = TFM_OK;

	out->len = 0;
	starts->len = 0;
	if (len > (size_t) (INT32_MAX / 2) / TFM_TOK_UNI_MAX_EXPANSION)
		return TFM_ELIMIT;
	limit = (len + 16) * TFM_TOK_UNI_MAX_EXPANSION;
	for (i = 0; i < len && st == TFM_OK; i++)
		st = put(&x, s + i, 1, orig ? orig[i] : base + i, limit);
	for (int k = 0; k < u->n_steps && st == TFM_OK; k++)
	{
		tfm_tok_otext t;

		st = run_step(&y, &x, &u->step[k], limit);
		t = x;
		x = y;
		y = t;
	}
	if (st != TFM_OK)
		goto done;
	if (!(u->pretok & (TFM_TOK_PRETOK_WHITESPACE_SPLIT | TFM_TOK_PRETOK_METASPACE)))
	{
		/* the whole text is one word */
		if (x.len > 0)
		{
			if (tfm_tok_ivec_push(starts, 0))
				st = TFM_ENOMEM;
			else
				st = put(out, x.b, x.len, 0, limit);
			if (st == TFM_OK)
				memcpy(out->orig, x.orig, x.len * sizeof(size_t));
		}
		goto done;
	}
	for (i = 0; i < x.len && st == TFM_OK;)
	{
		size_t a = i, b;

		if (u->pretok & TFM_TOK_PRETOK_WHITESPACE_SPLIT)
		{
			int32_t cp;
			size_t ul = tfm_tok_utf8_next(&cp, x.b + i, x.len - i);

			if (tfm_tok_white_space(cp))
			{
				i += ul;
				continue;
			}
			for (b = i; b < x.len;)
			{
				ul = tfm_tok_utf8_next(&cp, x.b + b, x.len - b);
				if (tfm_tok_white_space(cp))
					break;
				b += ul;
			}
		}
		else
			b = x.len;
		if (u->pretok & TFM_TOK_PRETOK_METASPACE)
			st = metaspace_word(out, starts, u, &x, a, b, limit);
		else
		{
			if (tfm_tok_ivec_push(starts, (int32_t) out->len))
				st = TFM_ENOMEM;
			for (size_t k = a; k < b && st == TFM_OK; k++)
				st = put(out, x.b + k, 1, x.orig[k], limit);
		}
		i = b;
	}
done:
	if (st == TFM_OK && tfm_tok_ivec_push(starts, (int32_t) out->len))
		st = TFM_ENOMEM;
	tfm_tok_otext_free(&x);
	tfm_tok_otext_free(&y);
	return st;
}
