/*
 * t5_block.c — one T5 block, forward and backward, as Hugging Face's
 * T5Block computes it (T5ForConditionalGeneration; qd = heads · d_kv):
 *
 *   u  = RMSNorm(x; ln1.g)
 *   q|k|v = u · attn.qkv.w             (d, 3·qd), no bias
 *   a  = attention with scores q·kᵀ (no 1/√d_kv) + the stack's position
 *        bias (p->bias, computed once a stack from its rel_bias table),
 *        causal in the decoder; pad keys hidden in the encoder only
 *   x  = x + a · attn.out.w            (qd, d)
 *   decoder only, over the encoder's output m:
 *   u  = RMSNorm(x; lnx.g)
 *   a  = attention of u · cross.q.w over m · cross.kv.w (d, 2·qd: k | v),
 *        unscaled, no bias, the source's pads hidden
 *   x  = x + a · cross.out.w
 *   u  = RMSNorm(x; ln2.g)
 *   x  = x + act(u · ff1.w) · ff2.w    ff1.w (d, f): relu (T5 v1.0); or
 *        gated (ff_gated): ff1.w (d, 2f) = wi_0 | wi_1, gelu_tanh(u·wi_0) ⊙ (u·wi_1)
 *
 * No dropout (a t5 config has none).  While decoding (p->kv) the step's
 * keys and values are appended to the cache and the cross-attention reads
 * the memory's keys and values computed once (decode.c); p->bias then
 * covers every cached key.  Backward runs the same steps in reverse; the
 * self-attention's score gradients (p->dscores), summed over the batch,
 * accumulate into p->dbias, which the stack turns into rel_bias's gradient.
 */
#include <string.h>

#include "tfm/layers.h"
#include "tfm/layers_llama.h"
#include "model_internal.h"

#define PK(x) (p->packed ? p->packed[layer].x : NULL)

static tfm_attn_shape
t5_attn_shape(const tfm_config *c, const tfm_stack_pass *p, bool cross)
{
	tfm_attn_shape sh;
	int			qd = tfm_config_q_dim(c);

	memset(&sh, 0, sizeof(sh));
	sh.B = p->B;
	sh.Tq = p->T;
	sh.Tk = cross ? p->Ts : p->T;
	sh.h = c->heads;
	sh.s = tfm_config_head_size(c);
	sh.rsq = cross ? qd : 3 * qd;
	sh.rsk = sh.rsv = cross ? 2 * qd : 3 * qd;
	sh.rso = qd;
	sh.causal = cross ? 0 : p->causal;
	sh.lowp = p->packed != NULL;
	sh.scale = 1.0f;			/* T5 does not scale its scores */
	sh.bias = cross ? NULL : p->bias;
	return sh;
}

void
tfm_t5_block_forward(const tfm_config *c, const tfm_block_w *w,
					 tfm_block_acts *a, tfm_workspace *ws,
					 const float *in, const tfm_stack_pass *p, int layer)
{
	const tfm_block_sizes z = tfm_block_sizes_of(c, p);
	tfm_attn_shape sh = t5_attn_shape(c, p, false);
	const float *x;

	a->in = in;
	tfm_rmsnorm_forward(a->u1, a->ln1_rstd, in, w->ln1_g, z.N, z.d, z.eps);
	tfm_linear_forward(a->qkv, a->u1, w->qkv_w, NULL, z.N, z.d, 3 * z.qd, PK(qkv));
	tfm_block_self_attention(a, ws, p, layer, &sh, z.qd, z.qd, 3 * z.qd);
	tfm_linear_forward(ws->sub_out, a->cat, w->attn_out_w, NULL, z.N, z.qd, z.d, PK(attn_out));
	tfm_copy(a->r1, in, z.nd);
	tfm_add_into(a->r1, ws->sub_out, z.nd);
	x = a->r1;

	if (p->mem)
	{
		const int	Ns = p->B * p->Ts;

		tfm_rmsnorm_forward(a->u2, a->lnx_rstd, x, w->lnx_g, z.N, z.d, z.eps);
		tfm_linear_forward(a->cq, a->u2, w->cq_w, NULL, z.N, z.d, z.qd, PK(cq));
		sh = t5_attn_shape(c, p, true);
		if (p->kv)
		{
			const float *ckv = p->kv->layers[layer].ckv;

			tfm_attention_forward(a->ccat, p->kv->cprobs, a->cq, ckv, ckv + z.qd, p->mem_pad,
								  &sh, ws->attn_scratch);
		}
		else
		{
			tfm_linear_forward(a->ckv, p->mem, w->ckv_w, NULL, Ns, z.d, 2 * z.qd, PK(ckv));
			tfm_attention_forward(a->ccat, p->keep_acts ? a->cprobs : NULL, a->cq, a->ckv,
								  a->ckv + z.qd, p->mem_pad, &sh, ws->attn_scratch);
		}
		tfm_linear_forward(ws->sub_out, a->ccat, w->cout_w, NULL, z.N, z.qd, z.d, PK(cout));
		tfm_copy(a->r2, x, z.nd);
		tfm_add_into(a->r2, ws->sub_out, z.nd);
		x = a->r2;
	}

	tfm_rmsnorm_forward(a->u3, a->ln2_rstd, x, w->ln2_g, z.N, z.d, z.eps);
	if (c->ff_gated)
	{
		tfm_linear_forward(a->hpre, a->u3, w->ff1_w, NULL, z.N, z.d, 2 * z.f, PK(ff1));
		tfm_geglu_forward(a->hact, a->hpre, z.N, z.f);
	}
	else
	{
		tfm_linear_forward(a->hpre, a->u3, w->ff1_w, NULL, z.N, z.d, z.f, PK(ff1));
		tfm_activation_forward(a->hact, a->hpre, (size_t) z.N * z.f, c->activation);
	}
	tfm_linear_forward(ws->sub_out, a->hact, w->ff2_w, NULL, z.N, z.f, z.d, PK(ff2));
	tfm_copy(a->out, x, z.nd);
	tfm_add_into(a->out, ws->sub_out, z.nd);
}

void
tfm_t5_block_backward(const tfm_config *c, const tfm_block_w *w,
					  tfm_block_w *g, const tfm_block_acts *a,
					  tfm_workspace *ws, float *dout, float *dx,
					  float *dmem, const tfm_stack_pass *p, int layer)
{
	const tfm_block_sizes z = tfm_block_sizes_of(c, p);
	tfm_attn_shape sh;
	float	   *dcur = ws->g_y,		/* (N, d) the stream's gradient */
			   *du = ws->g_u,		/* (N, d) a norm's output's */
			   *dcat = ws->g_t,		/* (N, qd) an attention's output's */
			   *dh = ws->g_h,		/* (N, f) */
			   *dhg = ws->g_h + (size_t) z.N * z.f;	/* (N, 2f) gated: gate | up */
	const float *x_ff = p->mem ? a->r2 : a->r1;

	/* feed-forward: out = x + ff2(act(ff1(RMSNorm(x)))) */
	tfm_linear_backward_set(dh, g->ff2_w, NULL, dout, a->hact, w->ff2_w, z.N, z.f, z.d, PK(ff2));
	if (c->ff_gated)
	{
		tfm_geglu_backward(dhg, dh, a->hpre, z.N, z.f);
		tfm_linear_backward_set(du, g->ff1_w, NULL, dhg, a->u3, w->ff1_w, z.N, z.d, 2 * z.f,
								PK(ff1));
	}
	else
	{
		tfm_activation_backward_inplace(dh, a->hpre, (size_t) z.N * z.f, c->activation);
		tfm_linear_backward_set(du, g->ff1_w, NULL, dh, a->u3, w->ff1_w, z.N, z.d, z.f, PK(ff1));
	}
	tfm_copy(dcur, dout, z.nd);
	tfm_rmsnorm_backward(dcur, g->ln2_g, du, x_ff, w->ln2_g, a->ln2_rstd, z.N, z.d);

	/* cross-attention: r2 = r1 + cout(attn(cq(RMSNorm(r1)), ckv(mem))) */
	if (p->mem)
	{
		const int	Ns = p->B * p->Ts;
		float	   *dcq = ws->g_qkv;	/* (N, qd) */

		tfm_linear_backward_set(dcat, g->cout_w, NULL, dcur, a->ccat, w->cout_w, z.N, z.qd, z.d,
								PK(cout));
		tfm_zero(dcq, (size_t) z.N * z.qd);
		tfm_zero(ws->g_ckv, (size_t) Ns * 2 * z.qd);
		sh = t5_attn_shape(c, p, true);
		tfm_attention_backward(dcq, ws->g_ckv, ws->g_ckv + z.qd, dcat, a->cprobs, a->cq, a->ckv,
							   a->ckv + z.qd, &sh, ws->attn_scratch);
		tfm_linear_backward(dmem, g->ckv_w, NULL, ws->g_ckv, p->mem, w->ckv_w, Ns, z.d, 2 * z.qd,
							PK(ckv));
		tfm_linear_backward_set(du, g->cq_w, NULL, dcq, a->u2, w->cq_w, z.N, z.d, z.qd, PK(cq));
		tfm_rmsnorm_backward(dcur, g->lnx_g, du, a->r1, w->lnx_g, a->lnx_rstd, z.N, z.d);
	}

	/* self-attention: r1 = in + out(attn(qkv(RMSNorm(in)) + bias)) */
	tfm_linear_backward_set(dcat, g->attn_out_w, NULL, dcur, a->cat, w->attn_out_w, z.N, z.qd,
							z.d, PK(attn_out));
	tfm_zero(ws->g_qkv, (size_t) z.N * 3 * z.qd);
	sh = t5_attn_shape(c, p, false);
	sh.dscores = p->dbias ? p->dscores : NULL;
	tfm_attention_backward(ws->g_qkv, ws->g_qkv + z.qd, ws->g_qkv + 2 * z.qd, dcat, a->probs,
						   a->qkv, a->qkv + z.qd, a->qkv + 2 * z.qd, &sh, ws->attn_scratch);
	if (p->dbias)
	{
		/* every batch row's score gradients into the stack's bias gradient */
		size_t		n = (size_t) c->heads * p->T * p->T;

		for (int b = 0; b < p->B; b++)
			tfm_add_into(p->dbias, p->dscores + (size_t) b * n, n);
	}
	tfm_linear_backward_set(du, g->qkv_w, NULL, ws->g_qkv, a->u1, w->qkv_w, z.N, z.d, 3 * z.qd,
							PK(qkv));
	tfm_copy(dx, dcur, z.nd);
	tfm_rmsnorm_backward(dx, g->ln1_g, du, a->in, w->ln1_g, a->ln1_rstd, z.N, z.d);
}
