/*
 * decode.c — the key/value-cached decoder (see decode.h).
 *
 * Each step embeds the new tokens (positions counted per sequence from its
 * first real token), runs every decoder block with the cache wired into its
 * attention (block.c appends the step's keys and values, then attends over
 * all cached positions), applies the final norm and projects only the last
 * position to the vocabulary.  The block code is the same as in training.
 *
 * longrope (Phi-3.5, Phi-4-mini) picks its factors by the sequence's length:
 * the decoder keeps every token fed, and the feed that takes the sequence
 * past rope_orig_max first recomputes the whole cache with the long factors,
 * as transformers' Phi3ForCausalLM drops its cache there, so each step's
 * logits are those of one pass over the whole sequence.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tfm/blas.h"
#include "tfm/decode.h"
#include "tfm/layers_llama.h"
#include "tfm/layers_t5.h"
#include "tfm/precision.h"
#include "tfm/kept_block.h"
#include "../model/model_internal.h"

struct tfm_decoder
{
	tfm_model  *m;
	int			B,
				cap,
				nmax,
				Ts;
	tfm_kv		kv;
	int		   *start;			/* per sequence: leading pads */
	int		   *mem_src;		/* per sequence: the source its memory holds */
	int		   *rows;			/* (2 · B) tfm_decoder_select's row lists */
	char	   *move;			/* and its scratch */
	size_t		move_bytes;
	float	   *mem;			/* seq2seq encoder output (B, Ts, d) */
	uint8_t    *mem_pad;		/* (B, Ts) */
	float	   *tmp;			/* (B·nmax, d) */
	float	   *last;			/* (B, d) */
	float	   *sinus;			/* cap rows, sinusoidal positions */
	int32_t    *ids_row;		/* nmax */
	int32_t    *pos;			/* (B · nmax) rotary positions of a feed */
	float	   *bias;			/* T5: (h, nmax, cap) a feed's position bias */
	int32_t    *hist;			/* longrope: (B, cap) every token fed, and */
	uint8_t    *hist_pad;		/* (B, cap) its pad flags; */
	int32_t    *chunk;			/* (B · nmax) and */
	uint8_t    *chunk_pad;		/* (B · nmax) a refeed's slices */
};

static inline size_t
zmax(size_t a, size_t b)
{
	return a > b ? a : b;
}

/* zeroed, with 16 floats of slack: BLIS may read a little past a view */
static void *
zalloc(size_t n)
{
	return calloc(1, n + 16 * sizeof(float));
}

/*
 * Self-attention over the cache sees up to cap keys for up to nmax queries:
 * more than the workspace's attention scratch is sized for, so the decoder
 * keeps its own, for as many threads as run now.
 */
static bool
reserve_kv_scratch(tfm_decoder *d)
{
	const tfm_config *c = &d->m->cfg;
	tfm_attn_shape sh = {.Tq = d->nmax, .Tk = d->cap, .s = tfm_config_head_size(c)};
	int			threads = tfm_get_threads();
	float	   *sc;

	if (d->kv.scratch && d->kv.scratch_threads >= threads)
		return true;
	sc = malloc(sizeof(float) * tfm_attention_scratch(&sh, threads));	/* no need to zero */
	if (!sc)
		return false;
	free(d->kv.scratch);
	d->kv.scratch = sc;
	d->kv.scratch_threads = threads;
	return true;
}

size_t
tfm_decoder_bytes(const tfm_config *c, int B, int cap, int nmax, int Ts, bool lowp,
				  int threads)
{
	const size_t L = c->dec_layers,
				dm = c->d_model,
				h = c->heads,
				kvd = tfm_config_kv_dim(c),
				b = B,
				z = 16 * sizeof(float);	/* zalloc's slack */
	bool		s2s = c->task == TFM_TASK_SEQ2SEQ;
	tfm_attn_shape sh = {.Tq = nmax, .Tk = cap, .s = tfm_config_head_size(c)};
	size_t		bytes,
				kv_row = (size_t) cap * kvd * sizeof(float),
				mem_row = (size_t) (s2s ? Ts : 0) * dm * sizeof(float),
				ckv_row = (size_t) (s2s ? Ts : 0) * 2 * tfm_config_cross_dim(c) * sizeof(float);

	bytes = sizeof(tfm_decoder) + L * sizeof(tfm_kv_layer) + b * cap +
		sizeof(float) * b * h * nmax * cap +
		sizeof(float) * tfm_attention_scratch(&sh, threads) +
		sizeof(int) * 4 * b + sizeof(float) * b * nmax * dm + sizeof(float) * b * dm +
		sizeof(int32_t) * (nmax + b * nmax) + 12 * z +
		L * 2 * (sizeof(float) * b * cap * kvd + z);
	if (c->positions == TFM_POS_SINUSOIDAL)
		bytes += sizeof(float) * cap * dm;
	if (c->arch == TFM_ARCH_T5)
		bytes += sizeof(float) * h * nmax * cap + z;
	if (c->rope_type == TFM_ROPE_LONGROPE)
		bytes += (sizeof(int32_t) + 1) * b * (cap + nmax) + 4 * z;
	/* tfm_decoder_select's scratch grows by doubling to at most twice a need */
	bytes += 2 * b * zmax(zmax(kv_row, (size_t) cap), zmax(ckv_row, mem_row));
	if (s2s)
	{
		bytes += b * mem_row + z + b * Ts + sizeof(float) * b * h * nmax * Ts +
			L * (b * ckv_row + z);
		bytes += tfm_model_workspace_bytes(c, B, Ts, nmax, lowp ? TFM_WS_LOWP : 0, threads);
	}
	else
		bytes += tfm_model_workspace_bytes(c, B, nmax, 0, lowp ? TFM_WS_LOWP : 0, threads);
	return bytes;
}

tfm_decoder *
tfm_decoder_create(tfm_model *m, int B, int cap, int nmax)
{
	const tfm_config *c = &m->cfg;
	tfm_decoder *d = zalloc(sizeof(tfm_decoder));
	int			L = c->dec_layers,
				dm = c->d_model,
				kvd = tfm_config_kv_dim(c);	/* a cached key's width */
	bool		ok;

	if (!d)
		return NULL;
	d->m = m;
	d->B = B;
	d->cap = cap;
	d->nmax = nmax;
	d->kv.B = B;
	d->kv.cap = cap;
	d->kv.layers = zalloc(sizeof(tfm_kv_layer) * L);
	d->kv.pad = zalloc((size_t) B * cap);
	d->kv.probs = zalloc(sizeof(float) * B * c->heads * nmax * cap);
	ok = reserve_kv_scratch(d);
	d->start = zalloc(sizeof(int) * B);
	d->mem_src = zalloc(sizeof(int) * B);
	d->rows = zalloc(sizeof(int) * 2 * B);
	d->tmp = zalloc(sizeof(float) * B * nmax * dm);
	d->last = zalloc(sizeof(float) * B * dm);
	d->ids_row = zalloc(sizeof(int32_t) * nmax);
	d->pos = zalloc(sizeof(int32_t) * B * nmax);
	ok = ok && d->kv.layers && d->kv.pad && d->kv.probs && d->start && d->mem_src && d->rows &&
		d->tmp && d->last && d->ids_row && d->pos;
	for (int l = 0; ok && l < L; l++)
	{
		d->kv.layers[l].k = zalloc(sizeof(float) * B * cap * kvd);
		d->kv.layers[l].v = zalloc(sizeof(float) * B * cap * kvd);
		ok = d->kv.layers[l].k && d->kv.layers[l].v;
	}
	if (ok && c->arch == TFM_ARCH_T5)
	{
		d->bias = zalloc(sizeof(float) * c->heads * nmax * cap);
		ok = d->bias != NULL;
	}
	if (ok && c->rope_type == TFM_ROPE_LONGROPE)
	{
		d->hist = zalloc(sizeof(int32_t) * B * cap);
		d->hist_pad = zalloc((size_t) B * cap);
		d->chunk = zalloc(sizeof(int32_t) * B * nmax);
		d->chunk_pad = zalloc((size_t) B * nmax);
		ok = d->hist && d->hist_pad && d->chunk && d->chunk_pad;
	}
	if (ok && c->positions == TFM_POS_SINUSOIDAL)
	{
		d->sinus = malloc(sizeof(float) * cap * dm);
		ok = d->sinus != NULL;
		if (ok)
			tfm_config_sinusoids(c, d->sinus, cap);
	}
	if (!ok)
	{
		tfm_decoder_free(d);
		return NULL;
	}
	return d;
}

void
tfm_decoder_free(tfm_decoder *d)
{
	if (!d)
		return;
	for (int l = 0; d->kv.layers && l < d->m->cfg.dec_layers; l++)
	{
		free(d->kv.layers[l].k);
		free(d->kv.layers[l].v);
		free(d->kv.layers[l].ckv);
	}
	free(d->kv.layers);
	free(d->kv.pad);
	free(d->kv.probs);
	free(d->kv.scratch);
	free(d->kv.cprobs);
	free(d->start);
	free(d->mem_src);
	free(d->rows);
	free(d->move);
	free(d->mem);
	free(d->mem_pad);
	free(d->tmp);
	free(d->last);
	free(d->sinus);
	free(d->ids_row);
	free(d->pos);
	free(d->bias);
	free(d->hist);
	free(d->hist_pad);
	free(d->chunk);
	free(d->chunk_pad);
	free(d);
}

void
tfm_decoder_reset(tfm_decoder *d)
{
	d->kv.len = 0;
	memset(d->kv.pad, 0, (size_t) d->B * d->cap);
	memset(d->start, 0, sizeof(int) * d->B);
}

int
tfm_decoder_len(const tfm_decoder *d)
{
	return d->kv.len;
}

static int
decoder_encode(tfm_decoder *d, const int32_t *src, int Ts, int repeat)
{
	tfm_model  *m = d->m;
	const tfm_config *c = &m->cfg;
	const tfm_packed_w *pw = tfm_packed_of(m->lowp);	/* decoding is inference */
	int			dm = c->d_model,
				cw = tfm_config_cross_dim(c),	/* a memory row's keys (as many values) */
				B = d->B,
				S;
	const float *top;
	size_t		row = (size_t) Ts * dm,
				crow = (size_t) Ts * 2 * cw;

	if (repeat < 1 || B % repeat != 0)
		return -1;
	S = B / repeat;
	if (tfm_workspace_reserve(m, B, Ts, d->nmax, false, false) != 0)
		return -1;
	free(d->mem);
	free(d->mem_pad);
	free(d->kv.cprobs);
	d->Ts = Ts;
	d->mem = zalloc(sizeof(float) * B * row);
	d->mem_pad = malloc((size_t) B * Ts);
	d->kv.cprobs = malloc(sizeof(float) * B * c->heads * d->nmax * Ts);
	if (!d->mem || !d->mem_pad || !d->kv.cprobs)
		return -1;
	/* the S distinct sources once; each memory row then serves `repeat` rows */
	top = tfm_encode_stack(m, src, S, Ts);
	if (!top)
		return TFM_EBADID;
	memcpy(d->mem, top, sizeof(float) * S * row);
	for (int l = 0; l < c->dec_layers; l++)
	{
		const tfm_block_w *w = &m->w.dec[l];
		float	   *ckv;

		free(d->kv.layers[l].ckv);
		ckv = d->kv.layers[l].ckv = zalloc(sizeof(float) * B * crow);
		if (!ckv)
			return -1;
		tfm_linear_forward(ckv, d->mem, w->ckv_w, w->ckv_b, S * Ts, dm, 2 * cw,
						   pw ? pw->dec[l].ckv : NULL);
		for (int s = S - 1; s >= 0; s--)
			for (int k = repeat - 1; k >= 0; k--)
				if (s * repeat + k != s)
					memcpy(ckv + (size_t) (s * repeat + k) * crow, ckv + (size_t) s * crow,
						   sizeof(float) * crow);
	}
	for (int s = S - 1; s >= 0; s--)
		for (int k = repeat - 1; k >= 0; k--)
		{
			int			r = s * repeat + k;

			d->mem_src[r] = s;
			if (r != s)
				memcpy(d->mem + (size_t) r * row, d->mem + (size_t) s * row, sizeof(float) * row);
			for (int t = 0; t < Ts; t++)
				d->mem_pad[(size_t) r * Ts + t] = src[(size_t) s * Ts + t] == c->pad_id;
		}
	return 0;
}

/* one feed of n tokens a sequence; rope_len: longrope's sequence length (0 for others) */
static int
decoder_step(tfm_decoder *d, const int32_t *tokens, const uint8_t *is_pad,
			 int n, float *logits, int rope_len)
{
	tfm_model  *m = d->m;
	const tfm_config *c = &m->cfg;
	const tfm_packed_w *pw = tfm_packed_of(m->lowp);	/* decoding is inference */
	int			dm = c->d_model,
				B = d->B,
				L = c->dec_layers;
	bool		s2s = c->task == TFM_TASK_SEQ2SEQ;
	int			V = s2s && c->tgt_vocab > 0 ? c->tgt_vocab : c->vocab;
	const float *tok = s2s && c->tgt_vocab > 0 ? m->w.tgt_emb : m->w.tok_emb;
	const float *pos = s2s ? m->w.dec_pos_emb : m->w.pos_emb;
	tfm_workspace *ws;
	tfm_stack_pass p;
	const float *x;
	int			len = d->kv.len;

	if (n < 1 || n > d->nmax || len + n > d->cap)
		return -1;
	/* every token is a row of the embedding: refuse the feed before any work */
	if (tfm_ids_find_bad(tokens, (size_t) B * n, V, 0) >= 0)
		return TFM_EBADID;
	if (tfm_workspace_reserve(m, B, s2s ? d->Ts : n, s2s ? n : 0, false, false) != 0 ||
		!reserve_kv_scratch(d))
		return -1;
	ws = m->ws;

	/* embeddings, positions counted from each sequence's first real token */
	for (int b = 0; b < B; b++)
	{
		const int32_t *row = tokens + (size_t) b * n;
		const uint8_t *prow = is_pad ? is_pad + (size_t) b * n : NULL;

		for (int t = 0; t < n; t++)
		{
			int			p0 = len + t - d->start[b];

			d->kv.pad[(size_t) b * d->cap + len + t] = prow ? prow[t] : 0;
			if (p0 < 0)
				p0 = 0;
			d->pos[(size_t) b * n + t] = p0;
			if (c->positions == TFM_POS_ROPE)
			{
				/* rotary: the blocks rotate queries and keys by d->pos */
				d->ids_row[0] = row[t];
				(void) tfm_model_embedding_forward(m, ws->dec_x + ((size_t) b * n + t) * dm, d->ids_row,
												   tok, V, NULL,
											 c->scale_embeddings ? sqrtf((float) dm) : 1.0f,
											 1, 1, dm, 0);
				continue;
			}
			if (c->positions == TFM_POS_LEARNED && p0 >= c->max_len)
				return -1;		/* past the learned positions: the caller slides */
			d->ids_row[0] = row[t];
			(void) tfm_model_embedding_forward(m, ws->dec_x + ((size_t) b * n + t) * dm, d->ids_row, tok, V,
										 c->positions == TFM_POS_LEARNED ? pos : d->sinus,
								  c->scale_embeddings ? sqrtf((float) dm) : 1.0f,
								  1, 1, dm, p0);
		}
	}

	memset(&p, 0, sizeof(p));
	p.B = B;
	p.T = n;
	p.causal = true;
	p.kv = &d->kv;
	p.pos = d->pos;
	p.rope_len = rope_len;
	p.packed = pw ? pw->dec : NULL;
	if (s2s)
	{
		p.mem = d->mem;
		p.mem_pad = d->mem_pad;
		p.Ts = d->Ts;
	}
	if (c->arch == TFM_ARCH_T5)
	{
		/* the new queries (positions len ..) over every key so far, causal */
		tfm_relpos_bias(d->bias, m->w.dec_rel_bias, c->heads, n, len + n, len, false,
						c->rel_buckets, c->rel_max_distance);
		p.bias = d->bias;
	}
	x = ws->dec_x;
	for (int l = 0; l < L; l++)
	{
		tfm_arch_block_forward(c) (c, &m->w.dec[l], &ws->dec[l], ws, x, &p, l);
		x = ws->dec[l].out;
	}
	d->kv.len += n;

	/* the last position of each sequence → final norm → vocabulary */
	for (int b = 0; b < B; b++)
		memcpy(d->last + (size_t) b * dm, x + ((size_t) b * n + n - 1) * dm, sizeof(float) * dm);
	if (c->arch != TFM_ARCH_TFM)	/* RMSNorm: Llama's, T5's */
	{
		memcpy(d->tmp, d->last, sizeof(float) * B * dm);
		tfm_rmsnorm_forward(d->last, NULL, d->tmp, m->w.dec_lnf_g, B, dm, tfm_config_ln_eps(c));
	}
	else if (c->norm == TFM_NORM_PRE)
	{
		memcpy(d->tmp, d->last, sizeof(float) * B * dm);
		tfm_layernorm_forward_eps(d->last, ws->dec_lnf_mean, ws->dec_lnf_rstd, d->tmp,
								  m->w.dec_lnf_g, m->w.dec_lnf_b, B, dm, tfm_config_ln_eps(c));
	}
	if (c->tie)
	{
		if (!tfm_lowp_linear(pw ? pw->head : NULL, logits, d->last, NULL, B, dm, V))
			tfm_gemm(false, true, B, V, dm, 1.0f, d->last, dm, tok, dm, 0.0f, logits, V);
	}
	else
		tfm_linear_forward(logits, d->last, m->w.out_w, NULL, B, dm, V, pw ? pw->head : NULL);
	tfm_scale(logits, (size_t) B * V, tfm_config_out_scale(c));
	tfm_add_out_bias(m, logits, B, V);
	tfm_softcap_forward(logits, (size_t) B * V, c->final_softcap);
	return 0;
}

/*
 * Rows rows[0..n) of a buffer of row stride `stride` bytes take the first
 * `used` bytes of rows from[rows[i]]: all read into the scratch before any is
 * written, so a row may be both a source and a destination.
 */
/* decoding is inference: a model packed for bf16/int8 uses its packed matrices (pw) */
int
tfm_decoder_encode(tfm_decoder *d, const int32_t *src, int Ts, int repeat)
{
	return decoder_encode(d, src, Ts, repeat);
}

/*
 * longrope: the cache's len tokens fed again, nmax at a time, with the
 * factors of a sequence rope_len long (the feed about to pass rope_orig_max)
 */
static int
decoder_refeed(tfm_decoder *d, int len, float *logits, int rope_len)
{
	d->kv.len = 0;
	for (int off = 0; off < len;)
	{
		int			k = len - off < d->nmax ? len - off : d->nmax,
					rc;

		for (int b = 0; b < d->B; b++)
		{
			memcpy(d->chunk + (size_t) b * k, d->hist + (size_t) b * d->cap + off,
				   sizeof(int32_t) * k);
			memcpy(d->chunk_pad + (size_t) b * k, d->hist_pad + (size_t) b * d->cap + off, k);
		}
		if ((rc = decoder_step(d, d->chunk, d->chunk_pad, k, logits, rope_len)) != 0)
			return rc;
		off += k;
	}
	return 0;
}

int
tfm_decoder_feed(tfm_decoder *d, const int32_t *tokens, const uint8_t *is_pad,
				 int n, float *logits)
{
	const tfm_config *c = &d->m->cfg;
	int			len = d->kv.len,
				first = d->cap,
				rope_len = 0,
				rc;

	if (n < 1 || n > d->nmax || len + n > d->cap)
		return -1;
	if (len == 0)
		for (int b = 0; b < d->B; b++)
		{
			const uint8_t *prow = is_pad ? is_pad + (size_t) b * n : NULL;

			/* the first feed fixes how many leading pads a sequence has */
			d->start[b] = 0;
			while (prow && d->start[b] < n && prow[d->start[b]])
				d->start[b]++;
		}
	if (c->rope_type != TFM_ROPE_LONGROPE)
		return decoder_step(d, tokens, is_pad, n, logits, 0);
	/* transformers' max(position_ids) + 1 over the batch */
	for (int b = 0; b < d->B; b++)
		first = d->start[b] < first ? d->start[b] : first;
	rope_len = len + n - first;
	if (len > 0 && len - first <= c->rope_orig_max && rope_len > c->rope_orig_max &&
		(rc = decoder_refeed(d, len, logits, rope_len)) != 0)
		return rc;
	if ((rc = decoder_step(d, tokens, is_pad, n, logits, rope_len)) != 0)
		return rc;
	for (int b = 0; b < d->B; b++)
	{
		memcpy(d->hist + (size_t) b * d->cap + len, tokens + (size_t) b * n, sizeof(int32_t) * n);
		if (is_pad)
			memcpy(d->hist_pad + (size_t) b * d->cap + len, is_pad + (size_t) b * n, n);
		else
			memset(d->hist_pad + (size_t) b * d->cap + len, 0, n);
	}
	return 0;
}

static void
move_rows(char *base, size_t stride, size_t used, const int *from, const int *rows, int n,
		  char *tmp)
{
	for (int i = 0; i < n; i++)
		memcpy(tmp + i * used, base + from[rows[i]] * stride, used);
	for (int i = 0; i < n; i++)
		memcpy(base + rows[i] * stride, tmp + i * used, used);
}

int
tfm_decoder_select(tfm_decoder *d, const int *from, int nB)
{
	const tfm_config *c = &d->m->cfg;
	int			dm = c->d_model,
				kvd = tfm_config_kv_dim(c);
	size_t		kv_row = (size_t) d->cap * kvd * sizeof(float),
				kv_used = (size_t) d->kv.len * kvd * sizeof(float),
				mem_row = (size_t) d->Ts * dm * sizeof(float),
				ckv_row = (size_t) d->Ts * 2 * tfm_config_cross_dim(c) * sizeof(float),
				need;
	int		   *rows = d->rows,
			   *mrows = d->rows + d->B,
				n = 0,
				nm = 0;
	char	   *tmp;

	if (nB < 0 || nB > d->B)
		return -1;
	for (int i = 0; i < nB; i++)
		if (from[i] < 0 || from[i] >= d->B)
			return -1;
	/* the rows that change; of those, the ones whose encoder memory changes */
	for (int i = 0; i < nB; i++)
		if (from[i] != i)
		{
			rows[n++] = i;
			if (d->mem && d->mem_src[from[i]] != d->mem_src[i])
				mrows[nm++] = i;
		}
	need = (size_t) n * (kv_used > (size_t) d->cap ? kv_used : (size_t) d->cap);
	if (need < (size_t) nm * (ckv_row > mem_row ? ckv_row : mem_row))
		need = (size_t) nm * (ckv_row > mem_row ? ckv_row : mem_row);
	if (d->move_bytes < need)
	{
		size_t		grow = need > 2 * d->move_bytes ? need : 2 * d->move_bytes;
		char	   *p = malloc(grow);

		if (!p)
			return -1;
		free(d->move);
		d->move = p;
		d->move_bytes = grow;
	}
	tmp = d->move;
	for (int l = 0; l < c->dec_layers; l++)
	{
		move_rows((char *) d->kv.layers[l].k, kv_row, kv_used, from, rows, n, tmp);
		move_rows((char *) d->kv.layers[l].v, kv_row, kv_used, from, rows, n, tmp);
		if (d->kv.layers[l].ckv)
			move_rows((char *) d->kv.layers[l].ckv, ckv_row, ckv_row, from, mrows, nm, tmp);
	}
	move_rows((char *) d->kv.pad, d->cap, d->cap, from, rows, n, tmp);
	move_rows((char *) d->start, sizeof(int), sizeof(int), from, rows, n, tmp);
	if (d->hist)
	{
		move_rows((char *) d->hist, sizeof(int32_t) * d->cap, sizeof(int32_t) * d->kv.len, from,
				  rows, n, tmp);
		move_rows((char *) d->hist_pad, d->cap, d->kv.len, from, rows, n, tmp);
	}
	if (d->mem)
	{
		move_rows((char *) d->mem, mem_row, mem_row, from, mrows, nm, tmp);
		move_rows((char *) d->mem_pad, d->Ts, d->Ts, from, mrows, nm, tmp);
		move_rows((char *) d->mem_src, sizeof(int), sizeof(int), from, mrows, nm, tmp);
	}
	d->B = nB;
	d->kv.B = nB;
	return 0;
}

int
tfm_decoder_reorder(tfm_decoder *d, const int *from)
{
	return tfm_decoder_select(d, from, d->B);
}
