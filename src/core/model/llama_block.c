/*
 * llama_block.c — one Llama decoder block, forward and backward, as
 * Hugging Face's LlamaDecoderLayer computes it:
 *
 *   u  = RMSNorm(x; ln1.g)
 *   q|k|v = u · attn.qkv.w           (d, d + 2·kv_dim), no bias
 *           (+ attn.qkv.b            with qkv_bias: Qwen2's q/k/v biases)
 *   q, k rotated by their positions   (rope.c)
 *   a  = causal attention, query head j reading key/value head j / (h/kv_heads)
 *   x  = x + a · attn.out.w
 *   u  = RMSNorm(x; ln2.g)
 *   g|p = u · ff1.w                   (d, 2f): gate | up
 *   x  = x + (silu(g) ⊙ p) · ff2.w
 *           (gelu_tanh(g) with gated_act: Gemma's GeGLU)
 *
 * No dropout (a Llama config must have none), no other biases.  While decoding
 * (p->kv) the step's rotated keys and its values are appended to the cache
 * (rows of kv_dim floats) and the queries attend over everything cached.
 * Backward runs the same steps in reverse; the rotation's backward is the
 * inverse rotation of the gradients of q and k, in place.
 */
#include <string.h>

#include "tfm/layers.h"
#include "tfm/layers_llama.h"
#include "model_internal.h"

/* the pass's packed copy of block `layer`'s matrix w->x_w, or NULL (fp32) */
#define PK(x) (p->packed ? p->packed[layer].x : NULL)

static tfm_attn_shape
llama_attn_shape(const tfm_config *c, const tfm_stack_pass *p)
{
	tfm_attn_shape sh;
	int			w = tfm_config_qkv_width(c);

	memset(&sh, 0, sizeof(sh));
	sh.B = p->B;
	sh.Tq = p->T;
	sh.Tk = p->T;
	sh.h = c->heads;
	sh.kvh = tfm_config_kv_heads(c);
	sh.s = c->d_model / c->heads;
	sh.rsq = sh.rsk = sh.rsv = w;
	sh.rso = c->d_model;
	sh.causal = p->causal;
	sh.lowp = p->packed != NULL;
	return sh;
}

void
tfm_llama_block_forward(const tfm_config *c, const tfm_block_w *w,
						tfm_block_acts *a, tfm_workspace *ws,
						const float *in, const tfm_stack_pass *p, int layer)
{
	const tfm_block_sizes z = tfm_block_sizes_of(c, p);
	tfm_attn_shape sh = llama_attn_shape(c, p);

	a->in = in;
	tfm_rmsnorm_forward(a->u1, a->ln1_rstd, in, w->ln1_g, z.N, z.d, z.eps);
	tfm_linear_forward(a->qkv, a->u1, w->qkv_w, w->qkv_b, z.N, z.d, z.qw, PK(qkv));
	/* queries and keys are adjacent heads: rotate them in one sweep */
	tfm_rope_apply(a->qkv, z.N, c->heads + tfm_config_kv_heads(c), z.s, z.qw, p->pos, p->T,
				   c->rope_theta, 0);
	tfm_block_self_attention(a, ws, p, layer, &sh, z.d, z.kvd, z.qw);
	tfm_linear_forward(ws->sub_out, a->cat, w->attn_out_w, NULL, z.N, z.d, z.d, PK(attn_out));
	tfm_copy(a->r1, in, z.nd);
	tfm_add_into(a->r1, ws->sub_out, z.nd);

	tfm_rmsnorm_forward(a->u3, a->ln2_rstd, a->r1, w->ln2_g, z.N, z.d, z.eps);
	tfm_linear_forward(a->hpre, a->u3, w->ff1_w, NULL, z.N, z.d, 2 * z.f, PK(ff1));
	if (c->gated_act == TFM_GATED_GELU_TANH)
		tfm_geglu_forward(a->hact, a->hpre, z.N, z.f);
	else
		tfm_swiglu_forward(a->hact, a->hpre, z.N, z.f);
	tfm_linear_forward(ws->sub_out, a->hact, w->ff2_w, NULL, z.N, z.f, z.d, PK(ff2));
	tfm_copy(a->out, a->r1, z.nd);
	tfm_add_into(a->out, ws->sub_out, z.nd);
}

void
tfm_llama_block_backward(const tfm_config *c, const tfm_block_w *w,
						 tfm_block_w *g, const tfm_block_acts *a,
						 tfm_workspace *ws, float *dout, float *dx,
						 float *dmem, const tfm_stack_pass *p, int layer)
{
	tfm_attn_shape sh = llama_attn_shape(c, p);
	const tfm_block_sizes z = tfm_block_sizes_of(c, p);
	float	   *dr1 = ws->g_y,
			   *du = ws->g_u,
			   *dcat = ws->g_t,
			   *dh = ws->g_h,
			   *dhg = ws->g_h + (size_t) z.N * z.f;

	(void) layer;
	(void) dmem;				/* no cross-attention */
	/* feed-forward: out = r1 + ff2(swiglu(ff1(u3))) */
	tfm_linear_backward_set(dh, g->ff2_w, NULL, dout, a->hact, w->ff2_w, z.N, z.f, z.d, PK(ff2));
	if (c->gated_act == TFM_GATED_GELU_TANH)
		tfm_geglu_backward(dhg, dh, a->hpre, z.N, z.f);
	else
		tfm_swiglu_backward(dhg, dh, a->hpre, z.N, z.f);
	tfm_linear_backward_set(du, g->ff1_w, NULL, dhg, a->u3, w->ff1_w, z.N, z.d, 2 * z.f, PK(ff1));
	tfm_copy(dr1, dout, z.nd);
	tfm_rmsnorm_backward(dr1, g->ln2_g, du, a->r1, w->ln2_g, a->ln2_rstd, z.N, z.d);

	/* attention: r1 = in + out(attn(rope(qkv(u1)))) */
	tfm_linear_backward_set(dcat, g->attn_out_w, NULL, dr1, a->cat, w->attn_out_w, z.N, z.d,
							z.d, PK(attn_out));
	tfm_zero(ws->g_qkv, (size_t) z.N * z.qw);
	tfm_attention_backward(ws->g_qkv, ws->g_qkv + z.d, ws->g_qkv + z.d + z.kvd, dcat, a->probs,
						   a->qkv, a->qkv + z.d, a->qkv + z.d + z.kvd, &sh, ws->attn_scratch);
	tfm_rope_apply(ws->g_qkv, z.N, c->heads + tfm_config_kv_heads(c), z.s, z.qw, p->pos, p->T,
				   c->rope_theta, 1);
	tfm_linear_backward_set(du, g->qkv_w, g->qkv_b, ws->g_qkv, a->u1, w->qkv_w, z.N, z.d, z.qw,
							PK(qkv));
	tfm_copy(dx, dr1, z.nd);
	tfm_rmsnorm_backward(dx, g->ln1_g, du, a->in, w->ln1_g, a->ln1_rstd, z.N, z.d);
}
