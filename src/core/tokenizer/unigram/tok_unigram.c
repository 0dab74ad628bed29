/*
 * tok_unigram.c — SentencePiece Unigram tokenizers (kind unigram): import
 * from a tokenizer.json's parts, the checks of their pipeline, the trie of
 * the pieces and Viterbi encoding.  The model data stored beside the rows
 * is tok_unigram_data.c, decoding tok_unigram_decode.c, the normalizer and
 * pre-tokenizer tok_unigram_norm.c.
 *
 * Encode, as sentencepiece's unigram model (EncodeOptimized) and Hugging
 * Face's Unigram: each pre-tokenized word is segmented by the path of
 * highest total score over its characters, every piece that starts at a
 * character boundary a candidate (a trie walk); a character without a
 * one-character piece also gets the unk node, scored the lowest normal
 * score - 10.  Float sums and a strict > keep the first best path, as
 * sentencepiece does.  Consecutive unk tokens are fused into one; with
 * byte_fallback an unk becomes the <0xNN> pieces of its bytes.  Special
 * and control pieces (the file's special added tokens) and the byte pieces
 * are never matched in text, as sentencepiece does not match them.  With
 * the unk-by-text flag (Marian's), an unknown run whose text is a piece of
 * the vocabulary is that piece's id.
 */
#include <math.h>

#include "tok_unigram_model.h"
#include "../unicode/tok_unicode.h"

#define UNK_PENALTY 10.0f

int
tfm_tok_uni_byte_piece(const uint8_t *p, size_t l, int *b)
{
	int hi, lo;

	if (l != 6 || p[0] != '<' || p[1] != '0' || p[2] != 'x' || p[5] != '>')
		return 0;
	hi = p[3] >= '0' && p[3] <= '9' ? p[3] - '0' : p[3] >= 'A' && p[3] <= 'F' ? p[3] - 'A' + 10 : -1;
	lo = p[4] >= '0' && p[4] <= '9' ? p[4] - '0' : p[4] >= 'A' && p[4] <= 'F' ? p[4] - 'A' + 10 : -1;
	if (hi < 0 || lo < 0)
		return 0;
	*b = hi * 16 + lo;
	return 1;
}

/* checks a step's fields and copies them into u's step k */
int
tfm_tok_uni_add_step(tfm_tok_unigram *u, const tfm_tok_norm_step *s, tfm_status *err)
{
	tfm_tok_uni_step *d = &u->step[u->n_steps];
	size_t max_a = s->kind == TFM_TOK_NORM_PRECOMPILED ? TFM_TOK_CHARSMAP_MAX_BYTES
		: TFM_TOK_UNI_MAX_TEXT_BYTES;

	if (u->n_steps >= TFM_TOK_UNI_MAX_NORMALIZERS)
		return tfm_status_set(err, TFM_ELIMIT, "more than %d normalizers",
							TFM_TOK_UNI_MAX_NORMALIZERS);
	if (s->kind < TFM_TOK_NORM_PRECOMPILED || s->kind > TFM_TOK_NORM_STRIP_ACCENTS)
		return tfm_status_set(err, TFM_EFORMAT, "unknown normalizer kind %d", (int) s->kind);
	if (s->a_len > max_a || s->b_len > TFM_TOK_UNI_MAX_TEXT_BYTES ||
		(s->a_len > 0 && !s->a) || (s->b_len > 0 && !s->b))
		return tfm_status_set(err, TFM_ELIMIT, "a normalizer's text is longer than %zu bytes",
							max_a);
	if ((s->kind == TFM_TOK_NORM_REPLACE || s->kind == TFM_TOK_NORM_PREPEND) && s->a_len == 0)
		return tfm_status_set(err, TFM_EFORMAT, "a Replace pattern or Prepend text is empty");
	memset(d, 0, sizeof(*d));
	d->kind = s->kind;
	d->left = s->left != 0;
	d->right = s->right != 0;
	d->a = tfm_tok_alloc(s->a_len + 1);
	d->b = tfm_tok_alloc(s->b_len + 1);
	u->n_steps++;
	if (!d->a || !d->b)
		return tfm_tok_oom(err);
	if (s->a_len)
		memcpy(d->a, s->a, s->a_len);
	if (s->b_len)
		memcpy(d->b, s->b, s->b_len);
	d->a_len = s->a_len;
	d->b_len = s->b_len;
	if (s->kind == TFM_TOK_NORM_PRECOMPILED)
		return tfm_tok_charsmap_parse(&d->map, d->a, d->a_len, err);
	return TFM_OK;
}

/* the trie of the matchable pieces, the byte pieces, the unk score */
int
tfm_tok_uni_prepare(tfm_tokenizer *t, tfm_status *err)
{
	tfm_tok_unigram *u = t->uni;
	float min_score = INFINITY;
	size_t cap = 0;

	for (int b = 0; b < 256; b++)
		u->byte_piece[b] = -1;
	u->n_nodes = 1;
	if (tfm_grow((void **) &u->node_id, &cap, 1, sizeof(int32_t)))
		return tfm_tok_oom(err);
	u->node_id[0] = -1;
	for (int32_t id = 0; id < u->n; id++)
	{
		const uint8_t *p = tfm_tok_piece_ptr(t, id);
		size_t l = tfm_tok_piece_len(t, id);
		uint64_t node = 0;
		int b;

		if (!isfinite(u->score[id]))
			return tfm_status_set(err, TFM_EFORMAT, "piece %d has a score that is not finite",
								(int) id);
		if (u->type[id] == TFM_TOK_UNI_BYTE)
		{
			if (!u->byte_fallback || !tfm_tok_uni_byte_piece(p, l, &b))
				return tfm_status_set(err, TFM_EFORMAT, "piece %d is not a byte piece <0xNN>",
									(int) id);
			u->byte_piece[b] = id;
			continue;
		}
		if (u->type[id] != TFM_TOK_UNI_NORMAL || t->is_special[id] || id == u->unk_id || l == 0)
			continue;
		if (u->score[id] < min_score)
			min_score = u->score[id];
		for (size_t i = 0; i < l; i++)
		{
			uint64_t key = node << 8 | p[i];
			int32_t child = tfm_tok_u64map_get(&u->trie, key);

			if (child < 0)
			{
				if (u->n_nodes >= INT32_MAX ||
					tfm_grow((void **) &u->node_id, &cap, u->n_nodes + 1, sizeof(int32_t)) ||
					tfm_tok_u64map_put(&u->trie, key, (int32_t) u->n_nodes))
					return tfm_tok_oom(err);
				child = (int32_t) u->n_nodes;
				u->node_id[u->n_nodes++] = -1;
			}
			node = (uint64_t) child;
		}
		u->node_id[node] = id;
	}
	u->unk_score = (isfinite(min_score) ? min_score : 0.0f) - UNK_PENALTY;
	return TFM_OK;
}

/* the spec's pipeline checked into u */
int
tfm_tok_uni_set_pipeline(tfm_tok_unigram *u, uint32_t pretok, int prepend, const uint8_t *repl,
			 size_t repl_len, uint32_t decoder, tfm_status *err)
{
	int32_t cp;

	if (pretok & ~(TFM_TOK_PRETOK_WHITESPACE_SPLIT | TFM_TOK_PRETOK_METASPACE |
				   TFM_TOK_PRETOK_METASPACE_SPLIT))
		return tfm_status_set(err, TFM_EFORMAT, "unknown pre-tokenizer flags 0x%x", (unsigned) pretok);
	if (decoder & ~(TFM_TOK_UDEC_REPLACE | TFM_TOK_UDEC_BYTE_FALLBACK | TFM_TOK_UDEC_STRIP_FIRST))
		return tfm_status_set(err, TFM_EFORMAT, "unknown decoder flags 0x%x", (unsigned) decoder);
	if (prepend < TFM_TOK_PREPEND_NEVER || prepend > TFM_TOK_PREPEND_ALWAYS)
		return tfm_status_set(err, TFM_EFORMAT, "unknown prepend scheme %d", prepend);
	if (repl_len < 1 || repl_len > 4 || !repl || tfm_tok_utf8_next(&cp, repl, repl_len) != repl_len ||
		cp < 0 || cp == ' ')
		return tfm_status_set(err, TFM_EFORMAT, "the replacement must be one character other than a space");
	u->pretok = pretok;
	u->prepend = prepend;
	memcpy(u->repl, repl, repl_len);
	u->repl_len = repl_len;
	u->decoder = decoder;
	return TFM_OK;
}

int
tfm_tok_import_unigram(tfm_tokenizer **out, const uint8_t *const *pieces, const size_t *piece_lens,
					   int32_t n_pieces, const tfm_tok_unigram_spec *spec, tfm_status *err)
{
	tfm_tok_strtab tab = {0};
	tfm_tok_info info;
	tfm_tok_unigram *u = NULL;
	int32_t n, i;
	int st, k;

	*out = NULL;
	if (n_pieces < 1 || n_pieces > TFM_TOK_MAX_VOCAB_SIZE - TFM_TOK_N_SPECIALS)
		return tfm_status_set(err, TFM_ELIMIT, "a unigram tokenizer needs 1 to %d pieces, not %d",
							TFM_TOK_MAX_VOCAB_SIZE - TFM_TOK_N_SPECIALS, (int) n_pieces);
	if (spec->unk_id < 0 || spec->unk_id >= n_pieces ||
		spec->special_ids[TFM_TOK_UNK] != spec->unk_id)
		return tfm_status_set(err, TFM_EFORMAT, "unk_id %d is not one of the %d pieces",
							(int) spec->unk_id, (int) n_pieces);
	if (spec->n_steps < 0 || spec->n_steps > TFM_TOK_UNI_MAX_NORMALIZERS)
		return tfm_status_set(err, TFM_ELIMIT, "%d normalizers, more than %d", spec->n_steps,
							TFM_TOK_UNI_MAX_NORMALIZERS);
	memset(&info, 0, sizeof(info));
	for (k = 0; k < TFM_TOK_N_SPECIALS; k++)
	{
		if (spec->special_ids[k] < -1 || spec->special_ids[k] >= n_pieces)
			return tfm_status_set(err, TFM_EFORMAT, "special %s has id %d, not one of the %d ids",
								tfm_tok_special_piece((tfm_tok_special) k),
								(int) spec->special_ids[k], (int) n_pieces);
		info.special_ids[k] = spec->special_ids[k];
	}
	for (i = 0; i < n_pieces; i++)
	{
		if (!pieces[i] || piece_lens[i] == 0 || piece_lens[i] > TFM_TOK_MAX_PIECE_BYTES)
			return tfm_status_set(err, TFM_EFORMAT, "piece of id %d has invalid length %zu",
								(int) i, pieces[i] ? piece_lens[i] : 0);
		if ((st = tfm_tok_vocab_add(&tab, pieces[i], piece_lens[i], i, err)) != TFM_OK)
			return st;
	}
	/* tfm's specials the file does not have go after its ids */
	n = n_pieces;
	for (k = 0; k < TFM_TOK_N_SPECIALS; k++)
	{
		const char *name = tfm_tok_special_piece((tfm_tok_special) k);
		int32_t e;
		int added;

		if (info.special_ids[k] >= 0)
			continue;
		if (tfm_tok_strtab_intern(&e, &added, &tab, (const uint8_t *) name, strlen(name)))
		{
			tfm_tok_strtab_free(&tab);
			return tfm_tok_oom(err);
		}
		if (!added)
		{
			tfm_tok_strtab_free(&tab);
			return tfm_status_set(err, TFM_EFORMAT,
								"the piece %s (id %d) is in the vocabulary but not its special",
								name, (int) e);
		}
		info.special_ids[k] = n++;
	}
	info.format_version = TFM_TOK_FORMAT_VERSION;
	info.kind = TFM_TOK_UNIGRAM;
	info.flags = spec->info_flags;
	info.vocab_size = n;
	st = tfm_tok_build_from_strtab(out, &info, &tab, NULL, err);
	tfm_tok_strtab_free(&tab);
	if (st != TFM_OK)
		return st;

	u = tfm_tok_calloc(1, sizeof(*u));
	if (!u)
		goto oom;
	(*out)->uni = u;
	(*out)->uni_free = tfm_tok_unigram_free;
	u->n = n_pieces;
	u->unk_id = spec->unk_id;
	u->byte_fallback = spec->byte_fallback != 0;
	u->score = tfm_tok_alloc((size_t) n_pieces * sizeof(float));
	u->type = tfm_tok_calloc((size_t) n_pieces, 1);
	if (!u->score || !u->type)
		goto oom;
	for (i = 0; i < n_pieces; i++)
	{
		int b;

		u->score[i] = (float) spec->scores[i];
		if (spec->control && (spec->control[i] & TFM_TOK_UNI_SPECIAL))
			u->type[i] = TFM_TOK_UNI_CONTROL |
				((spec->control[i] & TFM_TOK_UNI_LSTRIP) ? TFM_TOK_UNI_T_LSTRIP : 0) |
				((spec->control[i] & TFM_TOK_UNI_RSTRIP) ? TFM_TOK_UNI_T_RSTRIP : 0);
		else if (u->byte_fallback && tfm_tok_uni_byte_piece(pieces[i], piece_lens[i], &b))
			u->type[i] = TFM_TOK_UNI_BYTE;
	}
	for (k = 0; k < spec->n_steps; k++)
		if ((st = tfm_tok_uni_add_step(u, &spec->steps[k], err)) != TFM_OK)
			goto fail;
	if ((st = tfm_tok_uni_set_pipeline(u, spec->pretok, spec->prepend, spec->replacement,
						   spec->replacement_len, spec->decoder, err)) != TFM_OK ||
		(st = tfm_tok_uni_prepare(*out, err)) != TFM_OK)
		goto fail;
	return TFM_OK;
oom:
	st = tfm_tok_oom(err);
fail:
	tfm_tok_free(*out);
	*out = NULL;
	return st;
}

/* ---- encode ----------------------------------------------------------------- */
typedef struct best
{
	float   score;
	int32_t id;      /* -1: unreached */
	int32_t from;    /* start of the last token */
} best;

/* Viterbi over w[0..n): the tokens' (id, start) pairs appended, unk fused */
static int
viterbi(tfm_tok_ivec *ids, tfm_tok_ivec *at, const tfm_tok_unigram *u, const uint8_t *w,
		size_t n, best *bp)
{
	size_t pos, start_len = ids->len;

	for (pos = 0; pos <= n; pos++)
	{
		bp[pos].id = -1;
		bp[pos].from = -1;
		bp[pos].score = 0;
	}
	bp[0].id = -2;
	for (pos = 0; pos < n;)
	{
		int32_t cp;
		size_t ul = tfm_tok_utf8_next(&cp, w + pos, n - pos);
		float here = bp[pos].score;
		uint64_t node = 0;
		int single = 0;

		if (bp[pos].id == -1)
		{
			pos += ul;
			continue;
		}
		for (size_t i = pos; i < n; i++)
		{
			int32_t child = tfm_tok_u64map_get(&u->trie, node << 8 | w[i]);
			int32_t id;

			if (child < 0)
				break;
			node = (uint64_t) child;
			id = u->node_id[node];
			if (id >= 0)
			{
				float cand = u->score[id] + here;
				best *tg = &bp[i + 1];

				if (i + 1 - pos == ul)
					single = 1;
				if (tg->id == -1 || cand > tg->score)
				{
					tg->score = cand;
					tg->id = id;
					tg->from = (int32_t) pos;
				}
			}
		}
		if (!single)
		{
			float cand = u->unk_score + here;
			best *tg = &bp[pos + ul];

			if (tg->id == -1 || cand > tg->score)
			{
				tg->score = cand;
				tg->id = u->unk_id;
				tg->from = (int32_t) pos;
			}
		}
		pos += ul;
	}
	/* backtrack: the tokens in reverse, then turned around */
	for (pos = n; pos > 0;)
	{
		if (bp[pos].id < 0 || bp[pos].from < 0)
			return TFM_EFORMAT;		/* cannot happen: every character has a node */
		if (tfm_tok_ivec_push(ids, bp[pos].id) || tfm_tok_ivec_push(at, bp[pos].from))
			return TFM_ENOMEM;
		pos = (size_t) bp[pos].from;
	}
	for (size_t a = start_len, b = ids->len; a + 1 < b; a++, b--)
	{
		int32_t x = ids->data[a], y = at->data[a];

		ids->data[a] = ids->data[b - 1];
		at->data[a] = at->data[b - 1];
		ids->data[b - 1] = x;
		at->data[b - 1] = y;
	}
	/* fuse consecutive unks */
	{
		size_t wi = start_len;

		for (size_t i = start_len; i < ids->len; i++)
		{
			if (i > start_len && ids->data[i] == u->unk_id && ids->data[wi - 1] == u->unk_id)
				continue;
			ids->data[wi] = ids->data[i];
			at->data[wi] = at->data[i];
			wi++;
		}
		ids->len = wi;
		at->len = wi;
	}
	return TFM_OK;
}

int
tfm_tok_uni_encode_part(int32_t *out_ids, size_t *offs, size_t cap, size_t *n_out, tfm_tokenizer *t,
			const uint8_t *s, size_t len, const size_t *orig, size_t base)
{
	const tfm_tok_unigram *u = t->uni;
	tfm_tok_otext x = {0};
	tfm_tok_ivec starts = {0}, ids = {0}, at = {0};
	best *bp = NULL;
	size_t w = *n_out, maxw = 0;
	int st;

	if ((st = tfm_tok_unigram_pretokenize_at(&x, &starts, u, s, len, orig, base)) != TFM_OK)
		goto done;
	for (size_t k = 0; k + 1 < starts.len; k++)
		if ((size_t) (starts.data[k + 1] - starts.data[k]) > maxw)
			maxw = (size_t) (starts.data[k + 1] - starts.data[k]);
	bp = tfm_tok_alloc((maxw + 1) * sizeof(best));
	if (!bp)
	{
		st = TFM_ENOMEM;
		goto done;
	}
	for (size_t k = 0; k + 1 < starts.len; k++)
	{
		size_t a = (size_t) starts.data[k], b = (size_t) starts.data[k + 1];

		if (t->poll && (k & 4095) == 4095 && t->poll(t->poll_arg) != 0)
		{
			st = TFM_ECANCELED;
			goto done;
		}
		ids.len = at.len = 0;
		if ((st = viterbi(&ids, &at, u, x.b + a, b - a, bp)) != TFM_OK)
			goto done;
		for (size_t i = 0; i < ids.len; i++)
		{
			size_t from = a + (size_t) at.data[i];
			size_t to = i + 1 < ids.len ? a + (size_t) at.data[i + 1] : b;
			int fall = u->byte_fallback && ids.data[i] == u->unk_id;

			/* byte fallback only when every byte has its piece */
			for (size_t j = from; fall && j < to; j++)
				fall = u->byte_piece[x.b[j]] >= 0;
			if (fall)
			{
				for (size_t j = from; j < to; j++)
				{
					if (w < cap)
					{
						out_ids[w] = u->byte_piece[x.b[j]];
						if (offs)
							offs[w] = x.orig[j];
					}
					w++;
				}
				continue;
			}
			if (w < cap)
			{
				int32_t id = ids.data[i];

				/* Marian: an unknown run spelled as a piece of the vocabulary is that piece */
				if (id == u->unk_id && (t->info.flags & TFM_TOK_INFO_UNK_BY_TEXT))
				{
					int32_t same = tfm_tok_piece_id(t, x.b + from, to - from);

					if (same >= 0 && same < u->n)
						id = same;
				}
				out_ids[w] = id;
				if (offs)
					offs[w] = x.orig[from];
			}
			w++;
		}
	}
	*n_out = w;
	st = TFM_OK;
done:
	tfm_tok_otext_free(&x);
	tfm_tok_ivec_free(&starts);
	tfm_tok_ivec_free(&ids);
	tfm_tok_ivec_free(&at);
	tfm_tok_dealloc(bp);
	return st;
}

size_t
tfm_tok_uni_part_len(tfm_tokenizer *t, const uint8_t *s, size_t len)
{
	tfm_tok_otext x = {0};
	tfm_tok_ivec starts = {0};
	size_t n = SIZE_MAX;

	if (tfm_tok_unigram_pretokenize(&x, &starts, t->uni, s, len) == TFM_OK)
		n = x.len;
	tfm_tok_otext_free(&x);
	tfm_tok_ivec_free(&starts);
	return n;
}
