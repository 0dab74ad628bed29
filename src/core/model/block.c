/*
 * block.c — one transformer block, forward and backward: self-attention
 * (fused Q/K/V), optional cross-attention (k×k queries, k×2k keys/values
 * over the encoder memory) and the feed-forward network, each wrapped as a
 * post-LN or pre-LN residual sub-layer:
 *
 *   post-LN:  x = LN(x + Drop(Sub(x)))
 *   pre-LN:   x = x + Drop(Sub(LN(x)))
 *
 * Gradients flow back through the same three sub-layers in reverse; every
 * weight gradient accumulates (+=) into g.
 */
#include <string.h>

#include "tfm/blas.h"
#include "tfm/layers.h"
#include "model_internal.h"

/* the pass's packed copy of block `layer`'s matrix w->x_w, or NULL (fp32) */
#define PK(x) (p->packed ? p->packed[layer].x : NULL)
/* or, in a varlen pass at fp32, its panels for tfm_gemm_rows_packed (NULL: none) */
#define PKR(x) (p->packed ? p->packed[layer].x : p->panels ? p->panels[layer].x : NULL)

static tfm_attn_shape
attn_shape(const tfm_config *c, const tfm_stack_pass *p, bool cross, int layer)
{
	tfm_attn_shape sh;
	int			d = c->d_model;

	memset(&sh, 0, sizeof(sh));
	sh.B = p->B;
	sh.Tq = p->T;
	sh.Tk = cross ? p->Ts : p->T;
	sh.h = c->heads;
	sh.s = d / c->heads;
	sh.rsq = cross ? d : 3 * d;
	sh.rsk = cross ? 2 * d : 3 * d;
	sh.rsv = cross ? 2 * d : 3 * d;
	sh.rso = d;
	sh.causal = cross ? 0 : p->causal;
	sh.lowp = p->packed != NULL;
	sh.p_drop = p->training ? c->attn_dropout : 0.0f;
	sh.key = site_key(p->key, layer, cross ? SITE_CROSS_P : SITE_ATTN_P);
	return sh;
}

/*
 * A forward product of the pass: row-exact in a varlen pass (each text's
 * rows give the bits they give alone), else the fastest for the shape;
 * act NULL: none.
 */
static void
lin(const tfm_stack_pass *p, float *out, const float *inp, const float *W, const float *b,
	int N, int in, int o, const tfm_activation *act, const tfm_lowp_entry *pk)
{
	if (p->seg_len)
		tfm_linear_rows_forward(out, inp, W, b, N, in, o, act, pk);
	else if (act)
		tfm_linear_act_forward(out, inp, W, b, N, in, o, *act, pk);
	else
		tfm_linear_forward(out, inp, W, b, N, in, o, pk);
}

static inline float
drop_p(const tfm_config *c, const tfm_stack_pass *p)
{
	return p->training ? c->dropout : 0.0f;
}

void
tfm_block_self_attention(tfm_block_acts *a, tfm_workspace *ws,
						 const tfm_stack_pass *p, int layer, tfm_attn_shape *sh,
						 int d, int kw, int qw)
{
	if (p->kv)
	{
		/* decoding: append this step's keys and values to the cache */
		tfm_kv	   *kv = p->kv;
		tfm_kv_layer *kl = &kv->layers[layer];

		for (int b = 0; b < p->B; b++)
			for (int t = 0; t < p->T; t++)
			{
				const float *src = a->qkv + ((size_t) b * p->T + t) * qw;
				size_t		dst = ((size_t) b * kv->cap + kv->len + t) * kw;

				memcpy(kl->k + dst, src + d, sizeof(float) * kw);
				memcpy(kl->v + dst, src + d + kw, sizeof(float) * kw);
			}
		sh->Tk = kv->len + p->T;
		sh->rsk = sh->rsv = kw;
		sh->bsk = sh->bsv = (ptrdiff_t) kv->cap * kw;
		sh->bspad = kv->cap;
		tfm_attention_forward(a->cat, kv->probs, a->qkv, kl->k, kl->v, kv->pad, sh,
							  kv->scratch);
	}
	else if (p->seg_len)
	{
		/* varlen: each text attends to its own rows, as alone (B 1, its length) */
		size_t		r = 0;

		sh->B = 1;
		for (int i = 0; i < p->seg; r += p->seg_len[i++])
		{
			const float *q = a->qkv + r * qw;

			sh->Tq = sh->Tk = p->seg_len[i];
			tfm_attention_forward(a->cat + r * sh->rso, NULL, q, q + d, q + d + kw,
								  p->pad + r, sh, ws->attn_scratch);
		}
	}
	else
		tfm_attention_forward(a->cat, p->keep_acts ? a->probs : NULL, a->qkv, a->qkv + d,
							  a->qkv + d + kw, p->pad, sh, ws->attn_scratch);
}

void
tfm_block_forward(const tfm_config *c, const tfm_block_w *w,
				  tfm_block_acts *a, tfm_workspace *ws,
				  const float *in, const tfm_stack_pass *p, int layer)
{
	const tfm_block_sizes z = tfm_block_sizes_of(c, p);
	const bool	pre = c->norm == TFM_NORM_PRE;
	const float pd = drop_p(c, p);
	const float *u,
			   *x;
	tfm_attn_shape sh;

	a->in = in;

	/* self-attention */
	u = in;
	if (pre)
	{
		tfm_layernorm_forward_eps(a->u1, a->ln1_mean, a->ln1_rstd, in, w->ln1_g, w->ln1_b,
								  z.N, z.d, z.eps);
		u = a->u1;
	}
	lin(p, a->qkv, u, w->qkv_w, w->qkv_b, z.N, z.d, 3 * z.d, NULL, PKR(qkv));
	sh = attn_shape(c, p, false, layer);
	tfm_block_self_attention(a, ws, p, layer, &sh, z.d, z.d, 3 * z.d);
	lin(p, ws->sub_out, a->cat, w->attn_out_w, w->attn_out_b, z.N, z.d, z.d, NULL,
		PKR(attn_out));
	x = a->r1;
	if (!pre && pd <= 0.0f)
	{
		/* post-LN without dropout: the residual's add inside the norm's sweep */
		tfm_add_layernorm_forward_eps(a->x1, a->ln1_mean, a->ln1_rstd, a->r1, in, ws->sub_out,
									  w->ln1_g, w->ln1_b, z.N, z.d, z.eps);
		x = a->x1;
	}
	else
	{
		tfm_residual_forward(a->r1, in, ws->sub_out, z.nd, pd,
							 site_key(p->key, layer, SITE_ATTN_OUT));
		if (!pre)
		{
			tfm_layernorm_forward_eps(a->x1, a->ln1_mean, a->ln1_rstd, a->r1, w->ln1_g,
									  w->ln1_b, z.N, z.d, z.eps);
			x = a->x1;
		}
	}

	/* cross-attention over the encoder memory */
	if (p->mem)
	{
		const int	Ns = p->B * p->Ts;

		u = x;
		if (pre)
		{
			tfm_layernorm_forward_eps(a->u2, a->lnx_mean, a->lnx_rstd, x, w->lnx_g, w->lnx_b,
									  z.N, z.d, z.eps);
			u = a->u2;
		}
		tfm_linear_forward(a->cq, u, w->cq_w, w->cq_b, z.N, z.d, z.d, PK(cq));
		sh = attn_shape(c, p, true, layer);
		if (p->kv)
		{
			/* decoding: the memory's keys and values were computed once */
			const float *ckv = p->kv->layers[layer].ckv;

			tfm_attention_forward(a->ccat, p->kv->cprobs, a->cq, ckv, ckv + z.d,
								  p->mem_pad, &sh, ws->attn_scratch);
		}
		else
		{
			tfm_linear_forward(a->ckv, p->mem, w->ckv_w, w->ckv_b, Ns, z.d, 2 * z.d, PK(ckv));
			tfm_attention_forward(a->ccat, p->keep_acts ? a->cprobs : NULL, a->cq, a->ckv,
								  a->ckv + z.d, p->mem_pad, &sh, ws->attn_scratch);
		}
		tfm_linear_forward(ws->sub_out, a->ccat, w->cout_w, w->cout_b, z.N, z.d, z.d, PK(cout));
		if (!pre && pd <= 0.0f)
		{
			tfm_add_layernorm_forward_eps(a->x2, a->lnx_mean, a->lnx_rstd, a->r2, x,
										  ws->sub_out, w->lnx_g, w->lnx_b, z.N, z.d, z.eps);
			x = a->x2;
		}
		else
		{
			tfm_residual_forward(a->r2, x, ws->sub_out, z.nd, pd,
								 site_key(p->key, layer, SITE_CROSS_OUT));
			x = a->r2;
			if (!pre)
			{
				tfm_layernorm_forward_eps(a->x2, a->lnx_mean, a->lnx_rstd, a->r2, w->lnx_g,
										  w->lnx_b, z.N, z.d, z.eps);
				x = a->x2;
			}
		}
	}

	/* feed-forward */
	u = x;
	if (pre)
	{
		tfm_layernorm_forward_eps(a->u3, a->ln2_mean, a->ln2_rstd, x, w->ln2_g, w->ln2_b,
								  z.N, z.d, z.eps);
		u = a->u3;
	}
	if (p->keep_acts)
	{
		tfm_linear_forward(a->hpre, u, w->ff1_w, w->ff1_b, z.N, z.d, z.f, PK(ff1));
		tfm_activation_forward(a->hact, a->hpre, (size_t) z.N * z.f, c->activation);
	}
	else						/* nothing reads hpre: the activation in the product */
	{
		tfm_activation act = (tfm_activation) c->activation;

		lin(p, a->hact, u, w->ff1_w, w->ff1_b, z.N, z.d, z.f, &act, PKR(ff1));
	}
	if (pd > 0.0f)
		tfm_dropout_forward(a->hd, a->hact, (size_t) z.N * z.f, pd,
							site_key(p->key, layer, SITE_FF_H));
	lin(p, ws->sub_out, pd > 0.0f ? a->hd : a->hact, w->ff2_w, w->ff2_b, z.N, z.f, z.d, NULL,
		PKR(ff2));
	if (!pre && pd <= 0.0f)
		tfm_add_layernorm_forward_eps(a->out, a->ln2_mean, a->ln2_rstd, a->r3, x, ws->sub_out,
									  w->ln2_g, w->ln2_b, z.N, z.d, z.eps);
	else
	{
		tfm_residual_forward(pre ? a->out : a->r3, x, ws->sub_out, z.nd, pd,
							 site_key(p->key, layer, SITE_FF_OUT));
		if (!pre)
			tfm_layernorm_forward_eps(a->out, a->ln2_mean, a->ln2_rstd, a->r3, w->ln2_g,
									  w->ln2_b, z.N, z.d, z.eps);
	}
}

/*
 * Backward of one residual sub-layer's skip connection (and, for post-LN, of
 * the norm after it).  On entry dy is the gradient w.r.t. the sub-layer's
 * output stream.  On exit dskip holds (=) the gradient w.r.t. its input
 * through the skip path and dsub the gradient w.r.t. the sub-layer
 * function's output; a pre-LN input norm is left to the caller.
 */
static void
residual_backward(const tfm_config *c, float *dskip, float *dsub,
				  const float *dy, const float *r, const float *gamma,
				  float *dgamma, float *dbeta, const float *mean,
				  const float *rstd, float *tmp, int N, float pd, uint64_t key)
{
	const int	d = c->d_model;
	const size_t nd = (size_t) N * d;
	const float *dr = dy;

	if (c->norm == TFM_NORM_POST)
	{
		/* dy is w.r.t. LN(r): take it back through the norm */
		tfm_zero(tmp, nd);
		tfm_layernorm_backward(tmp, dgamma, dbeta, dy, r, gamma, mean, rstd, N, d);
		dr = tmp;
	}
	tfm_copy(dskip, dr, nd);
	/* dropout's backward is its forward with the same mask */
	tfm_dropout_forward(dsub, dr, nd, pd, key);
}

void
tfm_block_backward(const tfm_config *c, const tfm_block_w *w,
				   tfm_block_w *g, const tfm_block_acts *a,
				   tfm_workspace *ws, float *dout, float *dx,
				   float *dmem, const tfm_stack_pass *p, int layer)
{
	const tfm_block_sizes z = tfm_block_sizes_of(c, p);
	const bool	pre = c->norm == TFM_NORM_PRE;
	const float pd = drop_p(c, p);
	float	   *dsub = ws->g_t;
	float	   *du = ws->g_u;
	float	   *dcur = ws->g_y;		/* gradient w.r.t. the current stream */
	const float *x_ff,
			   *x_cross;
	tfm_attn_shape sh;

	x_cross = pre ? a->r1 : a->x1;
	x_ff = p->mem ? (pre ? a->r2 : a->x2) : x_cross;

	/* ---- feed-forward ---- */
	residual_backward(c, dcur, dsub, dout, a->r3, w->ln2_g, g->ln2_g, g->ln2_b,
					  a->ln2_mean, a->ln2_rstd, du, z.N, pd,
					  site_key(p->key, layer, SITE_FF_OUT));
	/* dsub → ff2 → dropout → activation → ff1 */
	tfm_linear_backward_set(ws->g_h, g->ff2_w, g->ff2_b, dsub,
							pd > 0.0f ? a->hd : a->hact, w->ff2_w, z.N, z.f, z.d, PK(ff2));
	if (pd > 0.0f)
		tfm_dropout_forward(ws->g_h, ws->g_h, (size_t) z.N * z.f, pd,
							site_key(p->key, layer, SITE_FF_H));
	tfm_activation_backward_inplace(ws->g_h, a->hpre, (size_t) z.N * z.f, c->activation);
	tfm_linear_backward_set(du, g->ff1_w, g->ff1_b, ws->g_h, pre ? a->u3 : x_ff,
							w->ff1_w, z.N, z.d, z.f, PK(ff1));
	if (pre)
		tfm_layernorm_backward(dcur, g->ln2_g, g->ln2_b, du, x_ff, w->ln2_g,
							   a->ln2_mean, a->ln2_rstd, z.N, z.d);
	else
		tfm_add_into(dcur, du, z.nd);

	/* ---- cross-attention ---- */
	if (p->mem)
	{
		const int	Ns = p->B * p->Ts;

		/* dcur becomes the gradient w.r.t. the stream before cross */
		residual_backward(c, ws->g_x, dsub, dcur, a->r2, w->lnx_g, g->lnx_g, g->lnx_b,
						  a->lnx_mean, a->lnx_rstd, du, z.N, pd,
						  site_key(p->key, layer, SITE_CROSS_OUT));
		tfm_copy(dcur, ws->g_x, z.nd);
		/* dsub → out projection → attention → q and kv projections */
		tfm_linear_backward_set(ws->g_qkv, g->cout_w, g->cout_b, dsub, a->ccat, w->cout_w,
								z.N, z.d, z.d, PK(cout));	/* dccat */
		tfm_zero(du, z.nd);			/* dcq */
		tfm_zero(ws->g_ckv, (size_t) Ns * 2 * z.d);
		sh = attn_shape(c, p, true, layer);
		tfm_attention_backward(du, ws->g_ckv, ws->g_ckv + z.d, ws->g_qkv, a->cprobs,
							   a->cq, a->ckv, a->ckv + z.d, &sh, ws->attn_scratch);
		tfm_linear_backward(dmem, g->ckv_w, g->ckv_b, ws->g_ckv, p->mem, w->ckv_w, Ns, z.d,
							2 * z.d, PK(ckv));
		tfm_linear_backward_set(dsub, g->cq_w, g->cq_b, du, pre ? a->u2 : x_cross, w->cq_w,
								z.N, z.d, z.d, PK(cq));
		if (pre)
			tfm_layernorm_backward(dcur, g->lnx_g, g->lnx_b, dsub, x_cross, w->lnx_g,
								   a->lnx_mean, a->lnx_rstd, z.N, z.d);
		else
			tfm_add_into(dcur, dsub, z.nd);
	}

	/* ---- self-attention ---- */
	residual_backward(c, dx, dsub, dcur, a->r1, w->ln1_g, g->ln1_g, g->ln1_b,
					  a->ln1_mean, a->ln1_rstd, du, z.N, pd,
					  site_key(p->key, layer, SITE_ATTN_OUT));
	tfm_linear_backward_set(du, g->attn_out_w, g->attn_out_b, dsub, a->cat, w->attn_out_w,
							z.N, z.d, z.d, PK(attn_out));	/* dcat */
	tfm_zero(ws->g_qkv, z.nd * 3);
	sh = attn_shape(c, p, false, layer);
	tfm_attention_backward(ws->g_qkv, ws->g_qkv + z.d, ws->g_qkv + 2 * z.d, du, a->probs,
						   a->qkv, a->qkv + z.d, a->qkv + 2 * z.d, &sh, ws->attn_scratch);
	tfm_linear_backward_set(dsub, g->qkv_w, g->qkv_b, ws->g_qkv, pre ? a->u1 : a->in,
							w->qkv_w, z.N, z.d, 3 * z.d, PK(qkv));
	if (pre)
		tfm_layernorm_backward(dx, g->ln1_g, g->ln1_b, dsub, a->in, w->ln1_g,
							   a->ln1_mean, a->ln1_rstd, z.N, z.d);
	else
		tfm_add_into(dx, dsub, z.nd);
}
