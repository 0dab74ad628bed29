/*
 * model_forward.c — whole-model passes: embeddings, the encoder and decoder
 * stacks, the heads (pooling + classifier, tied or untied output
 * projection), the loss and the backward pass through all of them, in the
 * activation workspace model_workspace.c carves.
 *
 * Stacks: classify = encoder over `input`; lm = decoder (causal) over
 * `input`; seq2seq = encoder over `input`, decoder over `dec_input` with
 * cross-attention to the encoder's top output.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tfm/blas.h"
#include "tfm/layers.h"
#include "tfm/layers_llama.h"
#include "tfm/layers_t5.h"
#include "tfm/lowp.h"
#include "tfm/precision.h"
#include "tfm/kquant.h"
#include "tfm/kept_block.h"
#include "model_internal.h"

/* ---- forward ------------------------------------------------------------ */

static void
pad_mask(uint8_t *pad, const int32_t *ids, size_t n, int pad_id)
{
	for (size_t i = 0; i < n; i++)
		pad[i] = ids[i] == pad_id;
}

/* run a stack; returns its top output (after the final norm for pre-LN) */
static const float *
stack_forward(tfm_model *m, bool decoder, const float *x, const tfm_stack_pass *p)
{
	const tfm_config *c = &m->cfg;
	tfm_workspace *ws = m->ws;
	int			L = decoder ? c->dec_layers : c->enc_layers;
	const tfm_block_w *bw = decoder ? m->w.dec : m->w.enc;
	tfm_block_acts *acts = decoder ? ws->dec : ws->enc;
	const int	N = p->B * p->T;

	if (c->arch == TFM_ARCH_T5)	/* the position bias every layer adds */
		tfm_relpos_bias((float *) p->bias, decoder ? m->w.dec_rel_bias : m->w.enc_rel_bias,
						c->heads, p->T, p->T, 0, !decoder, c->rel_buckets, c->rel_max_distance);
	for (int l = 0; l < L; l++)
	{
		if (m->poll)
			m->poll(m->poll_arg);
		if (m->stop && *m->stop)
			return NULL;		/* (set by tfm_model_forward_lanes only) */
		tfm_arch_block_forward(c) (c, &bw[l], &acts[l], ws, x, p, l);
		x = acts[l].out;
	}
	if (c->arch != TFM_ARCH_TFM)	/* RMSNorm: Llama's, T5's */
	{
		float	   *top = decoder ? ws->dec_top : ws->enc_top;

		tfm_rmsnorm_forward(top, decoder ? ws->dec_lnf_rstd : ws->enc_lnf_rstd, x,
							decoder ? m->w.dec_lnf_g : m->w.enc_lnf_g, N, c->d_model,
							tfm_config_ln_eps(c));
		return top;
	}
	if (c->norm == TFM_NORM_PRE)
	{
		float	   *top = decoder ? ws->dec_top : ws->enc_top;

		tfm_layernorm_forward_eps(top, decoder ? ws->dec_lnf_mean : ws->enc_lnf_mean,
								  decoder ? ws->dec_lnf_rstd : ws->enc_lnf_rstd, x,
								  decoder ? m->w.dec_lnf_g : m->w.enc_lnf_g,
								  decoder ? m->w.dec_lnf_b : m->w.enc_lnf_b, N, c->d_model,
								  tfm_config_ln_eps(c));
		return top;
	}
	return x;
}

/* the rows of an embedding table: the target vocabulary's, or the source's */
static inline int
emb_rows(const tfm_model *m, const float *tok)
{
	return tok == m->w.tgt_emb && m->cfg.tgt_vocab > 0 ? m->cfg.tgt_vocab : m->cfg.vocab;
}

int
tfm_embed_tokens(tfm_model *m, float *out, const int32_t *ids, const float *tok,
				 const float *pos, int B, int T, int pos0)
{
	const tfm_config *c = &m->cfg;
	float		scale = c->scale_embeddings ? sqrtf((float) c->d_model) : 1.0f;

	return tfm_model_embedding_forward(m, out, ids, tok, emb_rows(m, tok), pos ? pos : m->ws->sinus,
									   scale, B, T, c->d_model, pos0);
}

/*
 * Embeddings of one stack's input.  The encoder of a BERT-family classifier
 * also adds its token types (type_emb row types[r], row 0 where types is
 * NULL; a type outside type_vocab is refused as TFM_EBADID), reads positions from row
 * pos_offset on, and normalises the sum (emb_ln) before the dropout.
 */
static int
embed(tfm_model *m, float *out, const int32_t *ids, const int32_t *types, const float *tok,
	  const float *pos, int B, int T, bool training, uint64_t key)
{
	const tfm_config *c = &m->cfg;
	const bool	bert = tok == m->w.tok_emb && pos == m->w.pos_emb &&
		c->task == TFM_TASK_CLASSIFY;
	const size_t N = (size_t) B * T;
	const int	d = c->d_model;
	float	   *raw = bert && c->emb_norm ? m->ws->emb_raw : out;

	if (tfm_embed_tokens(m, raw, ids, tok, pos, B, T, bert ? c->pos_offset : 0) != 0)
		return TFM_EBADID;
	if (bert && c->type_vocab > 0)
		for (size_t r = 0; r < N; r++)
		{
			const float *te = m->w.type_emb;

			if (types)
			{
				if (types[r] < 0 || types[r] >= c->type_vocab)
					return TFM_EBADID;
				te += (size_t) types[r] * d;
			}
			for (int i = 0; i < d; i++)
				raw[r * d + i] += te[i];
		}
	if (bert && c->emb_norm)
		tfm_layernorm_forward_eps(out, m->ws->emb_mean, m->ws->emb_rstd, raw,
								  m->w.emb_ln_g, m->w.emb_ln_b, (int) N, d,
								  tfm_config_ln_eps(c));
	if (training && c->dropout > 0.0f)
		tfm_dropout_forward(out, out, N * d, c->dropout, site_key(key, 0, SITE_EMB));
	return 0;
}

/* the classifier's dense layer on the pooled vectors (BERT pooler & co.) */
static const float *
cls_pre_forward(tfm_model *m, const float *pooled, int B, const tfm_packed_w *pw)
{
	const tfm_config *c = &m->cfg;
	const int	d = c->d_model;
	float	   *y = m->ws->pre_out;

	if (c->cls_pre == TFM_CLS_PRE_NONE)
		return pooled;
	tfm_linear_forward(y, pooled, m->w.cls_pre_w, m->w.cls_pre_b, B, d, d,
					   pw ? pw->cls_pre : NULL);
	for (size_t i = 0; i < (size_t) B * d; i++)
		y[i] = c->cls_pre == TFM_CLS_PRE_TANH ? tanhf(y[i]) : (y[i] > 0.0f ? y[i] : 0.0f);
	return y;
}

static inline const float *
out_embedding(const tfm_model *m, const tfm_weights *w)
{
	return m->cfg.task == TFM_TASK_SEQ2SEQ && m->cfg.tgt_vocab > 0 ? w->tgt_emb : w->tok_emb;
}

static inline int
out_vocab(const tfm_config *c)
{
	return c->task == TFM_TASK_SEQ2SEQ && c->tgt_vocab > 0 ? c->tgt_vocab : c->vocab;
}

/*
 * ids (B, T) embedded into x (tok, pos: the tables), then a stack over
 * them (p, with p->B rows of ids): its top output, or NULL for an id
 * outside the vocabulary
 */
static const float *
embed_and_stack(tfm_model *m, bool decoder, float *x, const int32_t *ids, const float *tok,
				const float *pos, int T, bool training, const tfm_stack_pass *p)
{
	if (embed(m, x, ids, decoder ? NULL : m->ws->pass_types, tok, pos, p->B, T, training,
			  p->key) != 0)
		return NULL;
	return stack_forward(m, decoder, x, p);
}

/* the pass descriptions of a batch's stacks; pw: the packed weights (NULL: fp32) */
static void
passes(const tfm_model *m, const tfm_batch *b, bool training, uint64_t key,
	   const tfm_packed_w *pw, tfm_stack_pass *enc, tfm_stack_pass *dec)
{
	const tfm_config *c = &m->cfg;
	tfm_workspace *ws = m->ws;

	memset(enc, 0, sizeof(*enc));
	memset(dec, 0, sizeof(*dec));
	enc->B = dec->B = b->B;
	enc->training = dec->training = training;
	enc->keep_acts = dec->keep_acts = training || ws->training || b->keep_attention;
	enc->packed = pw ? pw->enc : NULL;
	dec->packed = pw ? pw->dec : NULL;
	enc->key = tfm_subkey(key, 1);
	dec->key = tfm_subkey(key, 2);
	enc->T = b->T;
	enc->pad = ws->enc_pad;
	dec->T = tfm_model_dec_len(c, b->T, b->Tt);
	dec->pad = c->task == TFM_TASK_LM ? ws->enc_pad : ws->dec_pad;
	dec->causal = true;
	if (c->arch == TFM_ARCH_T5)
	{
		enc->bias = ws->enc_bias;
		dec->bias = ws->dec_bias;
		enc->dscores = dec->dscores = ws->g_scores;
		enc->dbias = ws->g_enc_bias;
		dec->dbias = ws->g_dec_bias;
	}
	if (c->task == TFM_TASK_SEQ2SEQ)
	{
		dec->mem_pad = ws->enc_pad;
		dec->Ts = b->T;
	}
}

/* the encoder over src (B, Ts) after tfm_workspace_reserve; its top output */
const float *
tfm_encode_stack(tfm_model *m, const int32_t *src, int B, int Ts)
{
	tfm_batch	b;
	tfm_stack_pass ep,
				dp;

	memset(&b, 0, sizeof(b));
	b.B = B;
	b.T = Ts;
	b.input = src;
	passes(m, &b, false, 0, tfm_packed_of(m->lowp), &ep, &dp);
	pad_mask(m->ws->enc_pad, src, (size_t) B * Ts, m->cfg.pad_id);
	m->ws->pass_types = NULL;
	if (embed(m, m->ws->enc_x, src, NULL, m->w.tok_emb, m->w.pos_emb, B, Ts, false, 0) != 0)
		return NULL;			/* an id outside the vocabulary */
	return stack_forward(m, false, m->ws->enc_x, &ep);
}

/*
 * A classifier's varlen pass (tfm_batch.lens): the B texts' ids one after
 * the other (N rows in all) embedded text by text (positions from 0 in
 * each), the encoder over the N rows (products row-exact, attention per
 * text: block.c), then each text's pooled vector and logits.  The
 * workspace holds B texts of the longest one's length, as a padded batch
 * would.
 */
static int
varlen_forward(tfm_model *m, const tfm_batch *b, const tfm_packed_w *pw)
{
	const tfm_config *c = &m->cfg;
	const int	d = c->d_model;
	tfm_workspace *ws;
	tfm_stack_pass ep,
				dp;
	const float *top;
	size_t		N = 0,
				r;
	const float *pooled;
	const tfm_packed_w *rows = pw ? NULL : tfm_packed_of(m->rows32);

	for (int i = 0; i < b->B; i++)
	{
		if (b->lens[i] < 1 || b->lens[i] > b->T)
			return -1;
		N += b->lens[i];
	}
	if (tfm_workspace_reserve(m, b->B, b->T, 0, false, false) != 0)
		return -1;
	ws = m->ws;
	ws->pass_training = false;
	ws->pass_key = 0;
	passes(m, b, false, 0, pw, &ep, &dp);
	if (rows)
		ep.panels = rows->enc;	/* fp32 products on panels packed at load */
	ep.B = 1;
	ep.T = (int) N;
	ep.seg = b->B;
	ep.seg_len = b->lens;
	pad_mask(ws->enc_pad, b->input, N, c->pad_id);
	r = 0;
	for (int i = 0; i < b->B; r += b->lens[i++])
		if (embed(m, ws->enc_x + r * d, b->input + r, b->types ? b->types + r : NULL,
				  m->w.tok_emb, m->w.pos_emb, 1, b->lens[i], false, 0) != 0)
			return TFM_EBADID;
	if (!(top = stack_forward(m, false, ws->enc_x, &ep)))
		return TFM_ECANCELED;
	r = 0;
	for (int i = 0; i < b->B; r += b->lens[i++])
	{
		if (c->pooling == TFM_POOL_CLS)
			tfm_cls_pool_forward(ws->pooled + (size_t) i * d, top + r * d, 1, b->lens[i], d);
		else
			tfm_mean_pool_forward(ws->pooled + (size_t) i * d, top + r * d, b->input + r,
								  c->pad_id, 1, b->lens[i], d);
	}
	pooled = ws->pooled;
	if (c->cls_pre != TFM_CLS_PRE_NONE)
	{
		float	   *y = ws->pre_out;

		tfm_linear_rows_forward(y, pooled, m->w.cls_pre_w, m->w.cls_pre_b, b->B, d, d, NULL,
								pw ? pw->cls_pre : NULL);
		for (size_t i = 0; i < (size_t) b->B * d; i++)
			y[i] = c->cls_pre == TFM_CLS_PRE_TANH ? tanhf(y[i]) : (y[i] > 0.0f ? y[i] : 0.0f);
		pooled = y;
	}
	tfm_linear_rows_forward(ws->logits, pooled, m->w.cls_w, m->w.cls_b, b->B, d, c->n_classes,
							NULL, pw ? pw->cls : rows ? rows->cls : NULL);
	/* a head on every token: the same layer on each of the N rows */
	if (b->token_logits && c->token_head != TFM_TOKEN_HEAD_NONE)
		tfm_linear_rows_forward(b->token_logits, top, m->w.cls_w, m->w.cls_b, (int) N, d,
								c->n_classes, NULL, pw ? pw->cls : rows ? rows->cls : NULL);
	m->pooled = ws->pooled;
	m->hidden = (float *) top;
	m->logits = ws->logits;
	return 0;
}

static int
model_forward(tfm_model *m, const tfm_batch *b, bool training, uint64_t key,
			  const tfm_packed_w *pw)
{
	const tfm_config *c = &m->cfg;
	tfm_workspace *ws;
	tfm_stack_pass ep,
				dp;
	const int	d = c->d_model;
	const bool	lm = c->task == TFM_TASK_LM;
	const float *top = NULL;

	if (b->lens)
	{
		if (c->task != TFM_TASK_CLASSIFY || training || b->keep_attention)
			return -1;
		return varlen_forward(m, b, pw);
	}
	if (tfm_workspace_reserve(m, b->B, b->T, c->task == TFM_TASK_SEQ2SEQ ? b->Tt : 0,
							  training, b->keep_attention) != 0)
		return -1;
	ws = m->ws;
	ws->pass_training = training;
	ws->pass_key = key;
	ws->pass_types = b->types;
	passes(m, b, training, key, pw, &ep, &dp);
	pad_mask(ws->enc_pad, b->input, (size_t) b->B * b->T, c->pad_id);

	/* every task's first stack reads the input: the encoder, or the LM's decoder */
	top = embed_and_stack(m, lm, lm ? ws->dec_x : ws->enc_x, b->input, m->w.tok_emb,
						  m->w.pos_emb, b->T, training, lm ? &dp : &ep);
	if (!top)
		return TFM_EBADID;
	switch (c->task)
	{
		case TFM_TASK_CLASSIFY:
			if (c->pooling == TFM_POOL_CLS)
				tfm_cls_pool_forward(ws->pooled, top, b->B, b->T, d);
			else
				tfm_mean_pool_forward(ws->pooled, top, b->input, c->pad_id, b->B, b->T, d);
			if (c->token_head != TFM_TOKEN_HEAD_NONE)	/* the head on every token's row */
				tfm_linear_forward(ws->logits, top, m->w.cls_w, m->w.cls_b, b->B * b->T, d,
								   c->n_classes, pw ? pw->cls : NULL);
			else
				tfm_linear_forward(ws->logits, cls_pre_forward(m, ws->pooled, b->B, pw),
								   m->w.cls_w, m->w.cls_b, b->B, d, c->n_classes,
								   pw ? pw->cls : NULL);
			m->pooled = ws->pooled;
			break;
		case TFM_TASK_LM:
			break;
		case TFM_TASK_SEQ2SEQ:
			m->memory = (float *) top;
			dp.mem = top;
			pad_mask(ws->dec_pad, b->dec_input, (size_t) b->B * b->Tt, c->pad_id);
			/*
			 * a target started from the pad id (Hugging Face's decoders:
			 * Marian's, T5's) hides no key by its id, only the future's, as
			 * generate's; one started from <bos> (tfm's own) hides its pads,
			 * as nn.Transformer's tgt_key_padding_mask
			 */
			for (int r = 0; r < b->B; r++)
				if (b->dec_input[(size_t) r * b->Tt] == c->pad_id)
					memset(ws->dec_pad + (size_t) r * b->Tt, 0, b->Tt);
			top = embed_and_stack(m, true, ws->dec_x, b->dec_input, out_embedding(m, &m->w),
								  m->w.dec_pos_emb, b->Tt, training, &dp);
			if (!top)
				return TFM_EBADID;
			break;
	}
	m->hidden = (float *) top;
	if (c->task != TFM_TASK_CLASSIFY)
	{
		int			rows = b->B * dp.T;

		if (c->tie)				/* logits = top · Eᵀ */
		{
			if (!tfm_lowp_linear(pw ? pw->head : NULL, ws->logits, top, NULL, rows, d,
								 out_vocab(c)))
				tfm_gemm(false, true, rows, out_vocab(c), d, 1.0f, top, d,
						 out_embedding(m, &m->w), d, 0.0f, ws->logits, out_vocab(c));
		}
		else
			tfm_linear_forward(ws->logits, top, m->w.out_w, NULL, rows, d, out_vocab(c),
							   pw ? pw->head : NULL);
		tfm_scale(ws->logits, (size_t) rows * out_vocab(c), tfm_config_out_scale(c));
		tfm_add_out_bias(m, ws->logits, rows, out_vocab(c));
		tfm_softcap_forward(ws->logits, (size_t) rows * out_vocab(c), c->final_softcap);
	}
	m->logits = ws->logits;
	return 0;
}

/*
 * Inference passes of a model packed for bf16/int8 use its packed matrices,
 * training passes its training copies (mixed precision) if it has them.
 */
int
tfm_model_forward(tfm_model *m, const tfm_batch *b, bool training, uint64_t key)
{
	return model_forward(m, b, training, key,
						 tfm_packed_of(training ? m->lowp_train : m->lowp));
}

/* ---- loss and backward -------------------------------------------------- */

/*
 * Back through a stack.  dtop (in buffer one) is the gradient w.r.t. the
 * stack's top output; returns the buffer (one or two) holding the gradient
 * w.r.t. the stack's input.  With activation checkpointing each block's
 * forward pass runs again, from the input it kept, before its backward pass:
 * the same products over the same values with the same dropout keys, so the
 * same activations, bit for bit.  The last layer's are still there from the
 * forward pass (the backward pass follows its forward pass, and the encoder
 * and the decoder have a shared block each).
 */
static float *
stack_backward(tfm_model *m, bool decoder, float *one, float *two,
			   const tfm_stack_pass *p, float *dmem)
{
	const tfm_config *c = &m->cfg;
	tfm_workspace *ws = m->ws;
	int			L = decoder ? c->dec_layers : c->enc_layers;
	tfm_block_acts *acts = decoder ? ws->dec : ws->enc;
	const int	N = p->B * p->T;
	float	   *cur = one,
			   *other = two;

	if (p->dbias)
		memset(p->dbias, 0, sizeof(float) * c->heads * p->T * p->T);
	if (c->arch != TFM_ARCH_TFM)	/* RMSNorm: Llama's, T5's */
	{
		memset(two, 0, (size_t) N * c->d_model * sizeof(float));
		tfm_rmsnorm_backward(two, decoder ? m->g.dec_lnf_g : m->g.enc_lnf_g, one,
							 acts[L - 1].out, decoder ? m->w.dec_lnf_g : m->w.enc_lnf_g,
							 decoder ? ws->dec_lnf_rstd : ws->enc_lnf_rstd, N, c->d_model);
		cur = two;
		other = one;
	}
	else if (c->norm == TFM_NORM_PRE)
	{
		memset(two, 0, (size_t) N * c->d_model * sizeof(float));
		tfm_layernorm_backward(two, decoder ? m->g.dec_lnf_g : m->g.enc_lnf_g,
							   decoder ? m->g.dec_lnf_b : m->g.enc_lnf_b, one,
							   acts[L - 1].out, decoder ? m->w.dec_lnf_g : m->w.enc_lnf_g,
							   decoder ? ws->dec_lnf_mean : ws->enc_lnf_mean,
							   decoder ? ws->dec_lnf_rstd : ws->enc_lnf_rstd, N, c->d_model);
		cur = two;
		other = one;
	}
	for (int l = L - 1; l >= 0; l--)
	{
		float	   *t;

		if (m->poll)
			m->poll(m->poll_arg);
		if (ws->checkpoint && l < L - 1)
			tfm_arch_block_forward(c) (c, decoder ? &m->w.dec[l] : &m->w.enc[l], &acts[l], ws,
									   acts[l].in, p, l);
		tfm_arch_block_backward(c) (c, decoder ? &m->w.dec[l] : &m->w.enc[l],
									decoder ? &m->g.dec[l] : &m->g.enc[l], &acts[l], ws,
									cur, other, dmem, p, l);
		t = cur;
		cur = other;
		other = t;
	}
	if (p->dbias)				/* T5: every layer's bias gradient into the table's */
		tfm_relpos_bias_backward(decoder ? m->g.dec_rel_bias : m->g.enc_rel_bias, p->dbias,
								 c->heads, p->T, p->T, 0, !decoder, c->rel_buckets,
								 c->rel_max_distance);
	return cur;
}

/* the rows of an embedding's gradient */
static inline int
emb_rows_g(const tfm_model *m, const float *dtok)
{
	return dtok == m->g.tgt_emb && m->cfg.tgt_vocab > 0 ? m->cfg.tgt_vocab : m->cfg.vocab;
}

/* dx: gradient w.r.t. the embeddings' output (destroyed); tmp, tmp2 scratch */
static void
embed_backward(tfm_model *m, float *dx, float *tmp, float *tmp2, const int32_t *ids,
			   float *dtok, float *dpos, int B, int T, uint64_t key)
{
	const tfm_config *c = &m->cfg;
	tfm_workspace *ws = m->ws;
	float		scale = c->scale_embeddings ? sqrtf((float) c->d_model) : 1.0f;
	const int	d = c->d_model;
	size_t		n = (size_t) B * T * d;
	const bool	bert = dtok == m->g.tok_emb && dpos == m->g.pos_emb &&
		c->task == TFM_TASK_CLASSIFY;

	if (c->dropout > 0.0f && ws->pass_training)
	{
		memset(tmp, 0, n * sizeof(float));
		tfm_dropout_backward(tmp, dx, n, c->dropout, site_key(key, 0, SITE_EMB));
		dx = tmp;
	}
	if (bert && c->emb_norm)
	{
		float	   *dr = dx == tmp ? tmp2 : tmp;

		memset(dr, 0, n * sizeof(float));
		tfm_layernorm_backward(dr, m->g.emb_ln_g, m->g.emb_ln_b, dx, ws->emb_raw,
							   m->w.emb_ln_g, ws->emb_mean, ws->emb_rstd, B * T, d);
		dx = dr;
	}
	if (bert && c->type_vocab > 0)
		for (size_t r = 0; r < (size_t) B * T; r++)
		{
			/* the forward pass refused any type outside type_vocab */
			float	   *ge = m->g.type_emb + (ws->pass_types ? (size_t) ws->pass_types[r] * d : 0);

			for (int i = 0; i < d; i++)
				ge[i] += dx[r * d + i];
		}
	/* the forward pass refused any id outside the vocabulary */
	(void) tfm_embedding_backward(dtok, dpos, dx, ids, emb_rows_g(m, dtok), scale, B, T, d,
								  bert ? c->pos_offset : 0);
}

/*
 * A classifier's loss on the batch's targets: a token head's per token
 * (tags: token_labels, TFM_LABEL_IGNORE ignored; spans: the start and end
 * tokens), one logit's binary cross-entropy against scores, else the
 * labels' cross-entropy.  Targets the model's head needs but the batch
 * lacks: NaN and *count -1, as a target outside the labels.
 */
static double
classify_loss(tfm_model *m, const tfm_batch *b, float eps, bool backward, float grad_scale,
			  int *count)
{
	const tfm_config *c = &m->cfg;
	tfm_workspace *ws = m->ws;
	float	   *dl = backward ? ws->logits : NULL;

	*count = -1;
	switch (c->token_head)
	{
		case TFM_TOKEN_HEAD_TAGS:
			return b->token_labels ?
				tfm_cross_entropy(dl, count, ws->logits, b->token_labels, b->B * b->T,
								  c->n_classes, TFM_LABEL_IGNORE, eps, grad_scale) : NAN;
		case TFM_TOKEN_HEAD_SPANS:
			return b->spans ?
				tfm_span_cross_entropy(dl, count, ws->logits, b->spans, ws->enc_pad, b->B, b->T,
									   grad_scale) : NAN;
		default:
			if (b->scores)
				return c->n_classes == 1 ?
					tfm_bce_logits(dl, count, ws->logits, b->scores, b->B, grad_scale) : NAN;
			return b->labels ?
				tfm_cross_entropy(dl, count, ws->logits, b->labels, b->B, c->n_classes, -1, eps,
								  grad_scale) : NAN;
	}
}

static double
loss_backward(tfm_model *m, const tfm_batch *b, float eps,
			  bool backward, float grad_scale, int *count, const tfm_packed_w *pw)
{
	const tfm_config *c = &m->cfg;
	tfm_workspace *ws = m->ws;
	const int	d = c->d_model;
	tfm_stack_pass ep,
				dp;
	double		sum;
	float	   *dtop,
			   *dx;

	passes(m, b, ws->pass_training, ws->pass_key, pw, &ep, &dp);
	dp.mem = m->memory;
	if (backward && ws->capped)	/* final_softcap: the capped logits, for their gradient */
		memcpy(ws->capped, ws->logits, sizeof(float) * (size_t) b->B * dp.T * out_vocab(c));
	if (c->task == TFM_TASK_CLASSIFY)
		sum = classify_loss(m, b, eps, backward, grad_scale, count);
	else
		sum = tfm_cross_entropy(backward ? ws->logits : NULL, count, ws->logits,
								b->target, b->B * dp.T, out_vocab(c), c->pad_id,
								eps, grad_scale);
	if (!backward || *count < 0)
		return sum;				/* *count -1: a target outside the vocabulary */
	if (!ws->g_a || tfm_model_alloc_grads(m) != 0)
		return NAN;
	/* from here on ws->logits holds d(loss)/d(logits) */
	m->logits = NULL;
	if (ws->capped && c->task != TFM_TASK_CLASSIFY)
		tfm_softcap_backward(ws->logits, ws->capped, (size_t) b->B * dp.T * out_vocab(c),
							 c->final_softcap);

	if (c->task == TFM_TASK_CLASSIFY && c->token_head != TFM_TOKEN_HEAD_NONE)
	{
		/* the head on every token: dtop = dlogits · clsᵀ, dcls += topᵀ · dlogits */
		tfm_linear_backward_set(ws->g_a, m->g.cls_w, m->g.cls_b, ws->logits, m->hidden,
								m->w.cls_w, b->B * b->T, d, c->n_classes, pw ? pw->cls : NULL);
		dx = stack_backward(m, false, ws->g_a, ws->g_b, &ep, NULL);
		embed_backward(m, dx, dx == ws->g_a ? ws->g_b : ws->g_a, ws->g_x, b->input,
					   m->g.tok_emb, m->g.pos_emb, b->B, b->T, ep.key);
		return sum;
	}
	if (c->task == TFM_TASK_CLASSIFY)
	{
		float	   *dpooled = ws->g_x;
		size_t		nd = (size_t) b->B * b->T * d;

		memset(dpooled, 0, (size_t) b->B * d * sizeof(float));
		if (c->cls_pre == TFM_CLS_PRE_NONE)
			tfm_linear_backward(dpooled, m->g.cls_w, m->g.cls_b, ws->logits, ws->pooled,
								m->w.cls_w, b->B, d, c->n_classes, pw ? pw->cls : NULL);
		else
		{
			/* back through cls, the activation, then the dense layer */
			float	   *dpre = ws->g_y;
			const float *y = ws->pre_out;

			memset(dpre, 0, (size_t) b->B * d * sizeof(float));
			tfm_linear_backward(dpre, m->g.cls_w, m->g.cls_b, ws->logits, y,
								m->w.cls_w, b->B, d, c->n_classes, pw ? pw->cls : NULL);
			for (size_t i = 0; i < (size_t) b->B * d; i++)
				dpre[i] *= c->cls_pre == TFM_CLS_PRE_TANH ? 1.0f - y[i] * y[i] :
					(y[i] > 0.0f ? 1.0f : 0.0f);
			tfm_linear_backward(dpooled, m->g.cls_pre_w, m->g.cls_pre_b, dpre, ws->pooled,
								m->w.cls_pre_w, b->B, d, d, pw ? pw->cls_pre : NULL);
		}
		dtop = ws->g_a;
		memset(dtop, 0, nd * sizeof(float));
		if (c->pooling == TFM_POOL_CLS)
			tfm_cls_pool_backward(dtop, dpooled, b->B, b->T, d);
		else
			tfm_mean_pool_backward(dtop, dpooled, b->input, c->pad_id, b->B, b->T, d);
		dx = stack_backward(m, false, ws->g_a, ws->g_b, &ep, NULL);
		embed_backward(m, dx, dx == ws->g_a ? ws->g_b : ws->g_a, ws->g_x, b->input,
					   m->g.tok_emb, m->g.pos_emb, b->B, b->T, ep.key);
		return sum;
	}

	/* lm and seq2seq: back through the output projection (and T5's scale before it) */
	{
		int			rows = b->B * dp.T;
		int			V = out_vocab(c);
		const float *top = m->hidden;

		if (c->out_bias)
			for (int r = 0; r < rows; r++)
				for (int v = 0; v < V; v++)
					m->g.out_b[v] += ws->logits[(size_t) r * V + v];
		tfm_scale(ws->logits, (size_t) rows * V, tfm_config_out_scale(c));

		dtop = ws->g_a;
		if (c->tie)
		{
			/* dtop = dlogits · E;  dE += dlogitsᵀ · top */
			if (!tfm_lowp_linear_backward(pw ? pw->head : NULL, dtop, 0.0f,
										  (float *) out_embedding(m, &m->g),
										  ws->logits, top, rows, d, V))
			{
				tfm_gemm(false, false, rows, d, V, 1.0f, ws->logits, V,
						 out_embedding(m, &m->w), d, 0.0f, dtop, d);
				tfm_gemm(true, false, V, d, rows, 1.0f, ws->logits, V, top, d,
						 1.0f, (float *) out_embedding(m, &m->g), d);
			}
		}
		else
		{
			memset(dtop, 0, (size_t) rows * d * sizeof(float));
			tfm_linear_backward(dtop, m->g.out_w, NULL, ws->logits, top, m->w.out_w,
								rows, d, V, pw ? pw->head : NULL);
		}
	}
	if (c->task == TFM_TASK_LM)
	{
		dx = stack_backward(m, true, ws->g_a, ws->g_b, &dp, NULL);
		embed_backward(m, dx, dx == ws->g_a ? ws->g_b : ws->g_a, NULL, b->input,
					   m->g.tok_emb, m->g.pos_emb, b->B, b->T, dp.key);
		return sum;
	}

	/* seq2seq: decoder, then the encoder from the memory's gradient */
	memset(ws->g_mem, 0, (size_t) b->B * b->T * d * sizeof(float));
	dx = stack_backward(m, true, ws->g_a, ws->g_b, &dp, ws->g_mem);
	embed_backward(m, dx, dx == ws->g_a ? ws->g_b : ws->g_a, NULL, b->dec_input,
				   (float *) out_embedding(m, &m->g), m->g.dec_pos_emb, b->B, b->Tt, dp.key);
	memcpy(ws->g_a, ws->g_mem, (size_t) b->B * b->T * d * sizeof(float));
	dx = stack_backward(m, false, ws->g_a, ws->g_b, &ep, NULL);
	embed_backward(m, dx, dx == ws->g_a ? ws->g_b : ws->g_a, NULL, b->input,
				   m->g.tok_emb, m->g.pos_emb, b->B, b->T, ep.key);
	return sum;
}

/* the backward pass's linear layers use the training copies, as the forward did */
double
tfm_model_loss_backward(tfm_model *m, const tfm_batch *b, float eps,
						bool backward, float grad_scale, int *count)
{
	return loss_backward(m, b, eps, backward, grad_scale, count,
						 backward ? tfm_packed_of(m->lowp_train) : NULL);
}

const float *
tfm_model_attention(const tfm_model *m, int layer, bool decoder, bool cross)
{
	const tfm_config *c = &m->cfg;

	if (!m->ws || layer < 0)
		return NULL;
	if (!decoder)
		return c->enc_layers > layer && !cross ? m->ws->enc[layer].probs : NULL;
	if (c->dec_layers <= layer)
		return NULL;
	if (cross)
		return c->task == TFM_TASK_SEQ2SEQ ? m->ws->dec[layer].cprobs : NULL;
	return m->ws->dec[layer].probs;
}
