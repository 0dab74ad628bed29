/*
 * tok_unigram_decode.c — ids -> text for a Unigram tokenizer, as the
 * file's decoder: pieces concatenated, the replacement character as a
 * space (Metaspace, Replace), <0xNN> runs as their bytes with U+FFFD for
 * each byte not part of a valid character (ByteFallback, as sentencepiece
 * decodes them; Hugging Face's replaces every byte of such a run), one
 * leading space dropped (Metaspace's prepend, Strip) unless the ids
 * continue a text.  Specials and control pieces are dropped, the unk id
 * is U+FFFD, unless TFM_TOK_DECODE_SPECIALS.
 */
#include "tok_unigram_model.h"
#include "../unicode/tok_unicode.h"

static const uint8_t replacement_char[3] = {0xEF, 0xBF, 0xBD};

/* the bytes of ids before the leading space is stripped, into raw (room enough) */
static size_t
decode_raw(uint8_t *raw, const tfm_tokenizer *t, const int32_t *ids, size_t n_ids, uint32_t flags)
{
	const tfm_tok_unigram *u = t->uni;
	size_t w = 0;

	for (size_t i = 0; i < n_ids; i++)
	{
		int32_t id = ids[i];
		const uint8_t *p = tfm_tok_piece_ptr(t, id);
		size_t l = tfm_tok_piece_len(t, id);
		int b;

		if (t->is_special[id] || (id < u->n && TFM_TOK_UNI_KIND(u->type[id]) == TFM_TOK_UNI_CONTROL))
		{
			if (flags & TFM_TOK_DECODE_SPECIALS)
			{
				memcpy(raw + w, p, l);
				w += l;
			}
			else if (id == u->unk_id)
			{
				memcpy(raw + w, replacement_char, 3);
				w += 3;
			}
			continue;
		}
		if ((u->decoder & TFM_TOK_UDEC_BYTE_FALLBACK) && tfm_tok_uni_byte_piece(p, l, &b))
		{
			/* a run of byte pieces: its characters, and U+FFFD for each byte
			 * that is not part of a valid one (sentencepiece's decode) */
			size_t j = i, r;

			while (j < n_ids && !t->is_special[ids[j]] &&
				   tfm_tok_uni_byte_piece(tfm_tok_piece_ptr(t, ids[j]), tfm_tok_piece_len(t, ids[j]), &b))
				j++;
			for (r = i; r < j;)
			{
				uint8_t win[4];
				size_t m = 0, ul;
				int32_t cp;

				/* the next (at most 4) bytes of the run */
				while (m < 4 && r + m < j)
				{
					(void) tfm_tok_uni_byte_piece(tfm_tok_piece_ptr(t, ids[r + m]),
										 tfm_tok_piece_len(t, ids[r + m]), &b);
					win[m++] = (uint8_t) b;
				}
				ul = tfm_tok_utf8_next(&cp, win, m);
				if (cp >= 0)
				{
					memcpy(raw + w, win, ul);
					w += ul;
				}
				else
					for (size_t k = 0; k < ul; k++)
					{
						memcpy(raw + w, replacement_char, 3);
						w += 3;
					}
				r += ul;
			}
			i = j - 1;
			continue;
		}
		for (size_t k = 0; k < l;)
			if ((u->decoder & TFM_TOK_UDEC_REPLACE) && k + u->repl_len <= l &&
				memcmp(p + k, u->repl, u->repl_len) == 0)
			{
				raw[w++] = ' ';
				k += u->repl_len;
			}
			else
				raw[w++] = p[k++];
	}
	return w;
}

int
tfm_tok_unigram_decode(char *out, size_t cap, size_t *n_out, const tfm_tokenizer *t,
					   const int32_t *ids, size_t n_ids, uint32_t flags, tfm_status *err)
{
	size_t per = t->max_piece_len < 18 ? 18 : t->max_piece_len, w, skip = 0;
	uint8_t *raw;
	int st;

	*n_out = 0;
	for (size_t i = 0; i < n_ids; i++)
		if (ids[i] < 0 || ids[i] >= t->info.vocab_size)
			return tfm_status_set(err, TFM_ERANGE,
								"token id %d at position %zu is out of range (the vocabulary has %d ids)",
								(int) ids[i], i + 1, (int) t->info.vocab_size);
	if (n_ids > (SIZE_MAX - 1) / per)
		return tfm_status_set(err, TFM_ELIMIT, "too many ids to decode");
	raw = tfm_tok_alloc(n_ids * per + 1);
	if (!raw)
		return tfm_tok_oom(err);
	w = decode_raw(raw, t, ids, n_ids, flags);
	if ((t->uni->decoder & TFM_TOK_UDEC_STRIP_FIRST) && w > 0 && raw[0] == ' ' &&
		!(flags & TFM_TOK_DECODE_CONTINUE))
		skip = 1;
	st = tfm_tok_put_text(out, cap, n_out, raw + skip, w - skip, flags, err);
	tfm_tok_dealloc(raw);
	return st;
}
