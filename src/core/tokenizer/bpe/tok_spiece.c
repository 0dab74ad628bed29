/*
 * tok_spiece.c: SentencePiece-style BPE as Hugging Face's tokenizers runs
 * Llama 2's (and TinyLlama's, Gemma 3's) tokenizer.json: normalizer Prepend
 * "▁" + Replace " " → "▁", no pre-tokenizer, model BPE with byte_fallback.
 *
 * Encode: an empty text gives no ids.  Otherwise the text, with "▁" before
 * it and every space replaced by "▁", is one word: each character is a
 * symbol if the vocabulary has it as a piece, else its UTF-8 bytes are the
 * symbols <0xNN> (a byte without such a piece, and each byte of invalid
 * UTF-8 likewise, falls back to the unk id).  Merges then apply lowest rank
 * first, leftmost first among equal ranks (a heap of (rank, position) over a
 * linked list, as tokenizers' Word::merge_all: tfm_tok_merge_all, shared with
 * BPE's long pre-tokens).  Specials are never produced here: the added
 * tokens ("<s>", "<start_of_turn>") are found in the text before
 * (tok_added.c), and each part between them is a text of its own.  Without
 * a Prepend (Gemma 3's normalizer, TFM_TOK_INFO_NO_PREFIX) no "▁" goes
 * before the text and decode keeps a first space.
 *
 * Decode (the file's decoder Replace "▁" → " ", ByteFallback, Fuse, Strip
 * one leading space): pieces are concatenated with "▁" as a space, <0xNN>
 * pieces as their byte, and one space at the very start is dropped (kept
 * with TFM_TOK_DECODE_CONTINUE: a continuation of a text).
 * Specials are dropped (<unk> becomes U+FFFD) unless asked for.
 */
#include "../tok_internal.h"
#include "../unicode/tok_unicode.h"

static const uint8_t space_piece[3] = {0xE2, 0x96, 0x81};	/* U+2581 ▁ */
static const uint8_t replacement[3] = {0xEF, 0xBF, 0xBD};

/* the symbols of one character (bytes s[0..l)) at offset off: its piece, or its bytes */
static void
push_char(int32_t *sym, size_t *off, size_t *m, const tfm_tokenizer *t, const uint8_t *s,
		  size_t l, int valid, size_t at)
{
	int32_t id = valid ? tfm_tok_piece_id(t, s, l) : -1;
	int32_t unk = t->info.special_ids[TFM_TOK_UNK];

	if (id >= 0 && !t->is_special[id])
	{
		sym[*m] = id;
		off[(*m)++] = at;
		return;
	}
	for (size_t i = 0; i < l; i++)
	{
		int32_t b = t->fallback_id[s[i]];

		sym[*m] = b >= 0 ? b : unk;
		off[(*m)++] = at + i;
	}
}

int
tfm_tok_spiece_encode(int32_t *ids, size_t *offs, size_t cap, size_t *n_out,
					  tfm_tokenizer *t, const uint8_t *s, size_t len)
{
	int32_t *sym = NULL, *next = NULL, *prev = NULL;
	size_t *off = NULL;
	size_t m = 0, pos = 0, i, w = 0;
	int st = TFM_ENOMEM;

	*n_out = 0;
	if (len == 0)
		return TFM_OK;
	if (len >= INT32_MAX / 4)
		return TFM_ELIMIT;
	/* at most 3 symbols per byte (a space whose "▁" falls back to bytes), and the leading "▁" */
	if (len > (SIZE_MAX / sizeof(size_t) - 3) / 3)
		return TFM_ELIMIT;
	sym = tfm_tok_alloc((3 * len + 3) * sizeof(int32_t));
	off = tfm_tok_alloc((3 * len + 3) * sizeof(size_t));
	next = tfm_tok_alloc((3 * len + 3) * sizeof(int32_t));
	prev = tfm_tok_alloc((3 * len + 3) * sizeof(int32_t));
	if (!sym || !off || !next || !prev)
		goto done;

	if (!(t->info.flags & TFM_TOK_INFO_NO_PREFIX))
		push_char(sym, off, &m, t, space_piece, 3, 1, 0);
	while (pos < len)
	{
		int32_t cp;
		size_t ul = tfm_tok_utf8_next(&cp, s + pos, len - pos);

		if (cp == ' ')
			push_char(sym, off, &m, t, space_piece, 3, 1, pos);
		else
			push_char(sym, off, &m, t, s + pos, ul, cp >= 0, pos);
		pos += ul;
	}

	if ((st = tfm_tok_merge_all(t, sym, next, prev, m, 0)) != TFM_OK)
		goto done;
	for (i = 0; i < m; i = next[i] < 0 ? m : (size_t) next[i])
	{
		if (w < cap)
		{
			ids[w] = sym[i];
			if (offs)
				offs[w] = off[i];
		}
		w++;
	}
	*n_out = w;
	st = TFM_OK;
done:
	tfm_tok_dealloc(sym);
	tfm_tok_dealloc(off);
	tfm_tok_dealloc(next);
	tfm_tok_dealloc(prev);
	return st;
}

/* the bytes an id decodes to (before the leading space is stripped); len 0 = nothing */
static const uint8_t *
id_bytes(const tfm_tokenizer *t, int32_t id, uint32_t flags, size_t *l, uint8_t *byte)
{
	const uint8_t *p = tfm_tok_piece_ptr(t, id);

	*l = tfm_tok_piece_len(t, id);
	if (t->is_special[id])
	{
		if (flags & TFM_TOK_DECODE_SPECIALS)
			return p;
		if (id == t->info.special_ids[TFM_TOK_UNK])
		{
			*l = 3;
			return replacement;
		}
		*l = 0;
		return p;
	}
	if (*l == 6 && p[0] == '<' && p[1] == '0' && p[2] == 'x' && p[5] == '>')
		for (int b = 0; b < 256; b++)
			if (t->fallback_id[b] == id)
			{
				*byte = (uint8_t) b;
				*l = 1;
				return byte;
			}
	return p;
}

int
tfm_tok_spiece_decode(char *out, size_t cap, size_t *n_out, const tfm_tokenizer *t,
					  const int32_t *ids, size_t n_ids, uint32_t flags, tfm_status *err)
{
	size_t need = 0, w = 0, i, skip = 0;
	uint8_t *raw;
	uint8_t byte;
	int st;

	*n_out = 0;
	for (i = 0; i < n_ids; i++)
		if (ids[i] < 0 || ids[i] >= t->info.vocab_size)
			return tfm_status_set(err, TFM_ERANGE,
								"token id %d at position %zu is out of range (the vocabulary has %d ids)",
								(int) ids[i], i + 1, (int) t->info.vocab_size);
	for (i = 0; i < n_ids; i++)
	{
		size_t l;

		(void) id_bytes(t, ids[i], flags, &l, &byte);
		need += l;
	}
	raw = tfm_tok_alloc(need + 1);
	if (!raw)
		return tfm_tok_oom(err);
	for (i = 0; i < n_ids; i++)
	{
		size_t l;
		const uint8_t *p = id_bytes(t, ids[i], flags, &l, &byte);

		/* "▁" is a space, in any piece but the byte ones */
		for (size_t k = 0; k < l; k++)
			if (p != &byte && k + 3 <= l && memcmp(p + k, space_piece, 3) == 0)
			{
				raw[w++] = ' ';
				k += 2;
			}
			else
				raw[w++] = p[k];
	}
	if (w > 0 && raw[0] == ' ' && !(flags & TFM_TOK_DECODE_CONTINUE) &&
		!(t->info.flags & TFM_TOK_INFO_NO_PREFIX))
		skip = 1;
	st = tfm_tok_put_text(out, cap, n_out, raw + skip, w - skip, flags, err);
	tfm_tok_dealloc(raw);
	return st;
}

int
tfm_tok_put_text(char *out, size_t cap, size_t *n_out, const uint8_t *raw, size_t len,
				 uint32_t flags, tfm_status *err)
{
	size_t need = 0, r;

	*n_out = 0;
	/* invalid UTF-8 to U+FFFD if asked */
	for (r = 0; r < len;)
	{
		int32_t cp;
		size_t ul = tfm_tok_utf8_next(&cp, raw + r, len - r);

		need += (flags & TFM_TOK_DECODE_REPLACE) && cp < 0 ? 3 : ul;
		r += ul;
	}
	if (need > cap)
		return tfm_status_set(err, TFM_ELIMIT, "output buffer too small for the text");
	for (r = 0; r < len;)
	{
		int32_t cp;
		size_t ul = tfm_tok_utf8_next(&cp, raw + r, len - r);

		if ((flags & TFM_TOK_DECODE_REPLACE) && cp < 0)
		{
			memcpy(out + *n_out, replacement, 3);
			*n_out += 3;
		}
		else
		{
			memcpy(out + *n_out, raw + r, ul);
			*n_out += ul;
		}
		r += ul;
	}
	return TFM_OK;
}

int
tfm_tok_import_spiece(tfm_tokenizer **out, const uint8_t *const *pieces,
					  const size_t *piece_lens, int32_t n_pieces,
					  const int32_t *merge_lr, int32_t n_merges,
					  int32_t unk_id, int32_t bos_id, int32_t eos_id, uint32_t flags,
					  tfm_status *err)
{
	tfm_tok_strtab tab = {0};
	tfm_tok_info info;
	static const tfm_tok_special extra[3] = {TFM_TOK_PAD, TFM_TOK_CLS, TFM_TOK_SEP};
	int32_t n = n_pieces;
	int st;

	*out = NULL;
	if (flags & ~(TFM_TOK_INFO_TEXT_BOS | TFM_TOK_INFO_NO_PREFIX))
		return tfm_status_set(err, TFM_EINVAL, "unknown SentencePiece BPE flags 0x%x",
							  (unsigned) flags);
	if (n_pieces < 1 || n_pieces > TFM_TOK_MAX_VOCAB_SIZE - 3)
		return tfm_status_set(err, TFM_EFORMAT, "vocabulary size %d is out of range",
							(int) n_pieces);
	{
		int32_t sp = -1;

		for (int32_t i = 0; i < n_pieces && sp < 0; i++)
			if (piece_lens[i] == 3 && memcmp(pieces[i], space_piece, 3) == 0)
				sp = i;
		if (sp < 0)
			return tfm_status_set(err, TFM_EFORMAT, "the vocabulary has no piece \"▁\" (U+2581)");
	}
	if (unk_id < 0 || unk_id >= n_pieces || bos_id < 0 || bos_id >= n_pieces ||
		eos_id < 0 || eos_id >= n_pieces || unk_id == bos_id || unk_id == eos_id ||
		bos_id == eos_id)
		return tfm_status_set(err, TFM_EFORMAT,
							"unk, bos and eos must be three distinct ids of the vocabulary");
	memset(&info, 0, sizeof(info));
	info.format_version = TFM_TOK_FORMAT_VERSION;
	info.kind = TFM_TOK_BPE;
	info.flags = TFM_TOK_INFO_SPIECE | flags;
	info.n_merges = n_merges;
	info.special_ids[TFM_TOK_UNK] = unk_id;
	info.special_ids[TFM_TOK_BOS] = bos_id;
	info.special_ids[TFM_TOK_EOS] = eos_id;
	for (int32_t i = 0; i < n_pieces; i++)
	{
		if (piece_lens[i] == 0 || piece_lens[i] > TFM_TOK_MAX_PIECE_BYTES)
		{
			tfm_tok_strtab_free(&tab);
			return tfm_status_set(err, TFM_EFORMAT, "piece of id %d has invalid length %zu",
								(int) i, piece_lens[i]);
		}
		if ((st = tfm_tok_vocab_add(&tab, pieces[i], piece_lens[i], i, err)) != TFM_OK)
			return st;
	}
	for (int k = 0; k < 3; k++)
	{
		const char *name = tfm_tok_special_piece(extra[k]);
		int32_t e;
		int added;

		if (tfm_tok_strtab_intern(&e, &added, &tab, (const uint8_t *) name, strlen(name)))
		{
			tfm_tok_strtab_free(&tab);
			return tfm_tok_oom(err);
		}
		/* the file's own "<pad>" (Gemma's) is its pad */
		if (!added && !(extra[k] == TFM_TOK_PAD && e != unk_id && e != bos_id && e != eos_id))
		{
			tfm_tok_strtab_free(&tab);
			return tfm_status_set(err, TFM_EFORMAT,
								"the vocabulary has tfm's special piece %s (id %d)", name, (int) e);
		}
		if (added)
			n++;
		info.special_ids[extra[k]] = e;
	}
	info.vocab_size = n;
	st = tfm_tok_build_from_strtab(out, &info, &tab, merge_lr, err);
	tfm_tok_strtab_free(&tab);
	return st;
}
