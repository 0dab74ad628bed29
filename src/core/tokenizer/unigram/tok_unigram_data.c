/*
 * tok_unigram_data.c — a Unigram tokenizer's model data, stored beside its
 * rows (tfm.tokenizers.model_data): the byte image written from a built
 * tokenizer, and the load that rebuilds one from its rows and that image,
 * validating every count and length.
 *
 * Layout (little-endian): "TFMU", version 1, n, unk_id, byte_fallback,
 * pretok, prepend, decoder, replacement (length, bytes), steps (count;
 * each kind, left, right, a (length, bytes), b (length, bytes)), then n
 * float32 scores and n type bytes.
 */
#include "tok_unigram_model.h"

#define DATA_VERSION 1

static void
w32(uint8_t **p, uint32_t v)
{
	(*p)[0] = (uint8_t) v;
	(*p)[1] = (uint8_t) (v >> 8);
	(*p)[2] = (uint8_t) (v >> 16);
	(*p)[3] = (uint8_t) (v >> 24);
	*p += 4;
}

static void
wbytes(uint8_t **p, const uint8_t *b, size_t n)
{
	w32(p, (uint32_t) n);
	if (n)
		memcpy(*p, b, n);
	*p += n;
}

size_t
tfm_tok_model_data_size(const tfm_tokenizer *t)
{
	const tfm_tok_unigram *u = t->uni;
	size_t n;

	if (!u)
		return 0;
	n = 4 * 10 + u->repl_len;
	for (int k = 0; k < u->n_steps; k++)
		n += 4 * 5 + u->step[k].a_len + u->step[k].b_len;
	return n + (size_t) u->n * 5;
}

int
tfm_tok_model_data(uint8_t *out, size_t cap, const tfm_tokenizer *t, tfm_status *err)
{
	const tfm_tok_unigram *u = t->uni;
	uint8_t *p = out;

	if (!u)
		return TFM_OK;
	if (cap < tfm_tok_model_data_size(t))
		return tfm_status_set(err, TFM_ELIMIT, "buffer too small for the model data");
	memcpy(p, "TFMU", 4);
	p += 4;
	w32(&p, DATA_VERSION);
	w32(&p, (uint32_t) u->n);
	w32(&p, (uint32_t) u->unk_id);
	w32(&p, (uint32_t) u->byte_fallback);
	w32(&p, u->pretok);
	w32(&p, (uint32_t) u->prepend);
	w32(&p, u->decoder);
	wbytes(&p, u->repl, u->repl_len);
	w32(&p, (uint32_t) u->n_steps);
	for (int k = 0; k < u->n_steps; k++)
	{
		const tfm_tok_uni_step *s = &u->step[k];

		w32(&p, (uint32_t) s->kind);
		w32(&p, (uint32_t) s->left);
		w32(&p, (uint32_t) s->right);
		wbytes(&p, s->a, s->a_len);
		wbytes(&p, s->b, s->b_len);
	}
	for (int32_t i = 0; i < u->n; i++)
	{
		uint32_t bits;

		memcpy(&bits, &u->score[i], 4);
		w32(&p, bits);
	}
	memcpy(p, u->type, (size_t) u->n);
	return TFM_OK;
}

typedef struct reader
{
	const uint8_t *p;
	size_t left;
	int bad;
} reader;

static uint32_t
r32(reader *r)
{
	uint32_t v;

	if (r->left < 4)
	{
		r->bad = 1;
		return 0;
	}
	v = (uint32_t) r->p[0] | (uint32_t) r->p[1] << 8 | (uint32_t) r->p[2] << 16 |
		(uint32_t) r->p[3] << 24;
	r->p += 4;
	r->left -= 4;
	return v;
}

static const uint8_t *
rbytes(reader *r, size_t *n)
{
	const uint8_t *b;

	*n = r32(r);
	if (r->bad || *n > r->left)
	{
		r->bad = 1;
		*n = 0;
		return NULL;
	}
	b = r->p;
	r->p += *n;
	r->left -= *n;
	return b;
}

int
tfm_tok_load_unigram(tfm_tokenizer **out, const tfm_tok_info *info, const uint8_t *const *pieces,
					 const size_t *piece_lens, const uint8_t *data, size_t data_len,
					 tfm_status *err)
{
	tfm_tok_strtab tab = {0};
	tfm_tok_unigram *u;
	reader r = {data, data_len, 0};
	const uint8_t *repl;
	size_t repl_len;
	uint32_t pretok, prepend, decoder, n_steps;
	int st;

	*out = NULL;
	if (info->kind != TFM_TOK_UNIGRAM)
		return tfm_status_set(err, TFM_EFORMAT, "model data belongs to a unigram tokenizer");
	if (!data || data_len < 8 || memcmp(data, "TFMU", 4) != 0)
		return tfm_status_set(err, TFM_EFORMAT, "the unigram model data is missing or damaged");
	r.p += 4;
	r.left -= 4;
	if (r32(&r) != DATA_VERSION)
		return tfm_status_set(err, TFM_EFORMAT, "unigram model data version is not %d", DATA_VERSION);
	if (info->vocab_size < 1 || info->vocab_size > TFM_TOK_MAX_VOCAB_SIZE)
		return tfm_status_set(err, TFM_EFORMAT, "vocabulary size %d is out of range",
							(int) info->vocab_size);
	if ((st = tfm_tok_rows_strtab(&tab, info, pieces, piece_lens, err)) != TFM_OK)
		return st;
	st = tfm_tok_build_from_strtab(out, info, &tab, NULL, err);
	tfm_tok_strtab_free(&tab);
	if (st != TFM_OK)
		return st;
	u = tfm_tok_calloc(1, sizeof(*u));
	if (!u)
	{
		st = tfm_tok_oom(err);
		goto fail;
	}
	(*out)->uni = u;
	(*out)->uni_free = tfm_tok_unigram_free;
	u->n = (int32_t) r32(&r);
	u->unk_id = (int32_t) r32(&r);
	u->byte_fallback = r32(&r) != 0;
	pretok = r32(&r);
	prepend = r32(&r);
	decoder = r32(&r);
	repl = rbytes(&r, &repl_len);
	n_steps = r32(&r);
	if (r.bad || u->n < 1 || u->n > info->vocab_size || u->unk_id < 0 || u->unk_id >= u->n ||
		info->special_ids[TFM_TOK_UNK] != u->unk_id || n_steps > TFM_TOK_UNI_MAX_NORMALIZERS)
	{
		st = tfm_status_set(err, TFM_EFORMAT, "the unigram model data is damaged");
		goto fail;
	}
	for (uint32_t k = 0; k < n_steps; k++)
	{
		tfm_tok_norm_step s;

		s.kind = (tfm_tok_norm_kind) r32(&r);
		s.left = (int) r32(&r);
		s.right = (int) r32(&r);
		s.a = rbytes(&r, &s.a_len);
		s.b = rbytes(&r, &s.b_len);
		if (r.bad)
		{
			st = tfm_status_set(err, TFM_EFORMAT, "the unigram model data is damaged");
			goto fail;
		}
		if ((st = tfm_tok_uni_add_step(u, &s, err)) != TFM_OK)
			goto fail;
	}
	if ((st = tfm_tok_uni_set_pipeline(u, pretok, (int) prepend, repl, repl_len, decoder, err)) != TFM_OK)
		goto fail;
	if (r.left != (size_t) u->n * 5)
	{
		st = tfm_status_set(err, TFM_EFORMAT, "the unigram model data has %zu bytes of scores, not %zu",
						  r.left, (size_t) u->n * 5);
		goto fail;
	}
	u->score = tfm_tok_alloc((size_t) u->n * sizeof(float));
	u->type = tfm_tok_alloc((size_t) u->n);
	if (!u->score || !u->type)
	{
		st = tfm_tok_oom(err);
		goto fail;
	}
	for (int32_t i = 0; i < u->n; i++)
	{
		uint32_t bits = r32(&r);

		memcpy(&u->score[i], &bits, 4);
	}
	memcpy(u->type, r.p, (size_t) u->n);
	for (int32_t i = 0; i < u->n; i++)
		if (TFM_TOK_UNI_KIND(u->type[i]) > TFM_TOK_UNI_BYTE || (u->type[i] & 0xC0) ||
			((u->type[i] & (TFM_TOK_UNI_T_LSTRIP | TFM_TOK_UNI_T_RSTRIP)) &&
			 TFM_TOK_UNI_KIND(u->type[i]) != TFM_TOK_UNI_CONTROL))
		{
			st = tfm_status_set(err, TFM_EFORMAT, "piece %d has an unknown type", (int) i);
			goto fail;
		}
	if ((st = tfm_tok_uni_prepare(*out, err)) != TFM_OK)
		goto fail;
	return TFM_OK;
fail:
	tfm_tok_free(*out);
	*out = NULL;
	return st;
}
