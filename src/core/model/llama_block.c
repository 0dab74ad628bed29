/*
 * llama_block.c — one Llama decoder block, forward and backward, as
 * Hugging Face's LlamaDecoderLayer computes it:
 *
 *   u  = RMSNorm(x; ln1.g)
 *   q|k|v = u · attn.qkv.w           (d, h·s + 2·kv_dim), no bias; s = d/h or head_size
 *           (+ attn.qkv.b            with qkv_bias: Qwen2's q/k/v biases)
 *   (qk_norm, Qwen3: each q and k head RMSNorm'd, q_norm.g / k_norm.g)
 *   q, k rotated by their positions   (rope.c; frequencies rope_freqs.c, Gemma 3's
 *                                      local layers their own base; not in
 *                                      SmolLM3's NoPE layers, tfm_config_nope;
 *                                      Phi-4-mini: each head's first rope_dim
 *                                      values; longrope's factors chosen by
 *                                      the pass's sequence length)
 *   a  = causal attention, query head j reading key/value head j / (h/kv_heads)
 *   x  = x + a · attn.out.w
 *   u  = RMSNorm(x; ln2.g)
 *   g|p = u · ff1.w                   (d, 2f): gate | up
 *   x  = x + (silu(g) ⊙ p) · ff2.w
 *           (gelu_tanh(g) with gated_act: Gemma's GeGLU)
 *
 * Gemma 2 (post_norms) normalises both sub-layers' outputs before their
 * residual sums, x = x + RMSNorm(a · attn.out.w; post_attn.g) and
 * x = x + RMSNorm(h · ff2.w; post_ff.g), keeping the outputs before these
 * norms and their rstd in the activations llama blocks otherwise leave
 * unused (x1 and ln1_mean, r3 and ln2_mean); its attention scores are
 * scaled by attn_scale and soft-capped by attn_softcap (attention.c).
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

/*
 * Qwen3's q/k norms: every query head and every key head of the N rows of
 * q|k|v (row stride qw) RMS-normalised over its s values with q_norm.g or
 * k_norm.g, the values before kept in a->qk_pre (N, qd + kvd) and each
 * head's rstd in a->qk_rstd (N, h + kv)
 */
static void
qk_norm_forward(const tfm_config *c, const tfm_block_w *w, tfm_block_acts *a,
				const tfm_block_sizes *z)
{
	const int	nq = c->heads,
				nk = tfm_config_kv_heads(c);
	const size_t pw = (size_t) z->qd + z->kvd;

	for (int r = 0; r < z->N; r++)
	{
		float	   *row = a->qkv + (size_t) r * z->qw,
				   *pre = a->qk_pre + r * pw,
				   *rstd = a->qk_rstd + (size_t) r * (nq + nk);

		memcpy(pre, row, sizeof(float) * pw);
		tfm_rmsnorm_forward(row, rstd, pre, w->q_norm_g, nq, z->s, z->eps);
		tfm_rmsnorm_forward(row + z->qd, rstd + nq, pre + z->qd, w->k_norm_g, nk, z->s, z->eps);
	}
}

/* their backward: the gradients of the normalised queries and keys in
 * gqkv (row stride qw) made, in place, those of the values before */
static void
qk_norm_backward(const tfm_config *c, const tfm_block_w *w, tfm_block_w *g,
				 const tfm_block_acts *a, float *gqkv, const tfm_block_sizes *z)
{
	const int	nq = c->heads,
				nk = tfm_config_kv_heads(c);
	const size_t pw = (size_t) z->qd + z->kvd;
	float		tmp[TFM_D_MODEL_MAX];	/* h·s ≤ TFM_D_MODEL_MAX (tfm_config_check) */

	for (int r = 0; r < z->N; r++)
	{
		float	   *row = gqkv + (size_t) r * z->qw;
		const float *pre = a->qk_pre + r * pw,
				   *rstd = a->qk_rstd + (size_t) r * (nq + nk);

		memset(tmp, 0, sizeof(float) * z->qd);
		tfm_rmsnorm_backward(tmp, g->q_norm_g, row, pre, w->q_norm_g, rstd, nq, z->s);
		memcpy(row, tmp, sizeof(float) * z->qd);
		memset(tmp, 0, sizeof(float) * z->kvd);
		tfm_rmsnorm_backward(tmp, g->k_norm_g, row + z->qd, pre + z->qd, w->k_norm_g, rstd + nq,
							 nk, z->s);
		memcpy(row + z->qd, tmp, sizeof(float) * z->kvd);
	}
}

/* the sequence's length longrope decides by: the decoder's, or the pass's last position + 1 */
static int
pass_rope_len(const tfm_config *c, const tfm_stack_pass *p)
{
	int			n = p->T;

	if (c->rope_type != TFM_ROPE_LONGROPE)
		return 0;
	if (p->rope_len > 0)
		return p->rope_len;
	if (p->pos)
		for (size_t i = 0; i < (size_t) p->B * p->T; i++)
			if (p->pos[i] + 1 > n)
				n = p->pos[i] + 1;
	return n;
}

/* q and k of the N rows rotated (inverse: the backward's transpose) */
static void
llama_rope(const tfm_config *c, float *qkv, const tfm_block_sizes *z, const tfm_stack_pass *p,
		   int layer, int inverse)
{
	float		inv[TFM_ROPE_MAX_HALF];

	if (tfm_config_nope(c, layer))
		return;
	tfm_config_rope_freqs(inv, c, layer, pass_rope_len(c, p));
	/* queries and keys are adjacent heads: rotate them in one sweep */
	tfm_rope_apply_part(qkv, z->N, c->heads + tfm_config_kv_heads(c), z->s, tfm_config_rope_dim(c),
						z->qw, p->pos, p->T, inv, tfm_config_rope_scale(c), inverse);
}

static tfm_attn_shape
llama_attn_shape(const tfm_config *c, const tfm_stack_pass *p, int layer)
{
	tfm_attn_shape sh;
	int			w = tfm_config_qkv_width(c);

	memset(&sh, 0, sizeof(sh));
	sh.B = p->B;
	sh.Tq = p->T;
	sh.Tk = p->T;
	sh.h = c->heads;
	sh.kvh = tfm_config_kv_heads(c);
	sh.s = tfm_config_head_size(c);
	sh.rsq = sh.rsk = sh.rsv = w;
	sh.rso = tfm_config_q_dim(c);
	sh.causal = p->causal;
	sh.lowp = p->packed != NULL;
	sh.scale = c->attn_scale;	/* Gemma 2; 0 = 1/√s */
	sh.softcap = c->attn_softcap;
	sh.window = tfm_config_window(c, layer);	/* Mistral's, Gemma 2's local layers */
	return sh;
}

void
tfm_llama_block_forward(const tfm_config *c, const tfm_block_w *w,
						tfm_block_acts *a, tfm_workspace *ws,
						const float *in, const tfm_stack_pass *p, int layer)
{
	const tfm_block_sizes z = tfm_block_sizes_of(c, p);
	tfm_attn_shape sh = llama_attn_shape(c, p, layer);

	a->in = in;
	tfm_rmsnorm_forward(a->u1, a->ln1_rstd, in, w->ln1_g, z.N, z.d, z.eps);
	tfm_linear_forward(a->qkv, a->u1, w->qkv_w, w->qkv_b, z.N, z.d, z.qw, PK(qkv));
	if (c->qk_norm)
		qk_norm_forward(c, w, a, &z);
	llama_rope(c, a->qkv, &z, p, layer, 0);
	tfm_block_self_attention(a, ws, p, layer, &sh, z.qd, z.kvd, z.qw);
	tfm_linear_forward(c->post_norms ? a->x1 : ws->sub_out, a->cat, w->attn_out_w, NULL, z.N,
					   z.qd, z.d, PK(attn_out));
	if (c->post_norms)
		tfm_rmsnorm_forward(ws->sub_out, a->ln1_mean, a->x1, w->post_attn_g, z.N, z.d, z.eps);
	tfm_copy(a->r1, in, z.nd);
	tfm_add_into(a->r1, ws->sub_out, z.nd);

	tfm_rmsnorm_forward(a->u3, a->ln2_rstd, a->r1, w->ln2_g, z.N, z.d, z.eps);
	tfm_linear_forward(a->hpre, a->u3, w->ff1_w, NULL, z.N, z.d, 2 * z.f, PK(ff1));
	if (c->gated_act == TFM_GATED_GELU_TANH)
		tfm_geglu_forward(a->hact, a->hpre, z.N, z.f);
	else
		tfm_swiglu_forward(a->hact, a->hpre, z.N, z.f);
	tfm_linear_forward(c->post_norms ? a->r3 : ws->sub_out, a->hact, w->ff2_w, NULL, z.N, z.f,
					   z.d, PK(ff2));
	if (c->post_norms)
		tfm_rmsnorm_forward(ws->sub_out, a->ln2_mean, a->r3, w->post_ff_g, z.N, z.d, z.eps);
	tfm_copy(a->out, a->r1, z.nd);
	tfm_add_into(a->out, ws->sub_out, z.nd);
}

void
tfm_llama_block_backward(const tfm_config *c, const tfm_block_w *w,
						 tfm_block_w *g, const tfm_block_acts *a,
						 tfm_workspace *ws, float *dout, float *dx,
						 float *dmem, const tfm_stack_pass *p, int layer)
{
	tfm_attn_shape sh = llama_attn_shape(c, p, layer);
	const tfm_block_sizes z = tfm_block_sizes_of(c, p);
	float	   *dr1 = ws->g_y,
			   *du = ws->g_u,
			   *dcat = ws->g_t,
			   *dh = ws->g_h,
			   *dhg = ws->g_h + (size_t) z.N * z.f;

	(void) dmem;				/* no cross-attention */
	/* feed-forward: out = r1 + [post_ff](ff2(swiglu(ff1(u3)))) */
	if (c->post_norms)
	{
		/* dcat is free until the attention's part: the gradient of ff2's output */
		tfm_zero(dcat, z.nd);
		tfm_rmsnorm_backward(dcat, g->post_ff_g, dout, a->r3, w->post_ff_g, a->ln2_mean, z.N, z.d);
	}
	tfm_linear_backward_set(dh, g->ff2_w, NULL, c->post_norms ? dcat : dout, a->hact, w->ff2_w,
							z.N, z.f, z.d, PK(ff2));
	if (c->gated_act == TFM_GATED_GELU_TANH)
		tfm_geglu_backward(dhg, dh, a->hpre, z.N, z.f);
	else
		tfm_swiglu_backward(dhg, dh, a->hpre, z.N, z.f);
	tfm_linear_backward_set(du, g->ff1_w, NULL, dhg, a->u3, w->ff1_w, z.N, z.d, 2 * z.f, PK(ff1));
	tfm_copy(dr1, dout, z.nd);
	tfm_rmsnorm_backward(dr1, g->ln2_g, du, a->r1, w->ln2_g, a->ln2_rstd, z.N, z.d);

	/* attention: r1 = in + [post_attn](out(attn(rope(qkv(u1))))) */
	if (c->post_norms)
	{
		/* du is free until the q|k|v product's: the gradient of attn.out's output */
		tfm_zero(du, z.nd);
		tfm_rmsnorm_backward(du, g->post_attn_g, dr1, a->x1, w->post_attn_g, a->ln1_mean, z.N, z.d);
	}
	tfm_linear_backward_set(dcat, g->attn_out_w, NULL, c->post_norms ? du : dr1, a->cat,
							w->attn_out_w, z.N, z.qd, z.d, PK(attn_out));
	tfm_zero(ws->g_qkv, (size_t) z.N * z.qw);
	tfm_attention_backward(ws->g_qkv, ws->g_qkv + z.qd, ws->g_qkv + z.qd + z.kvd, dcat, a->probs,
						   a->qkv, a->qkv + z.qd, a->qkv + z.qd + z.kvd, &sh, ws->attn_scratch);
	llama_rope(c, ws->g_qkv, &z, p, layer, 1);
	if (c->qk_norm)
		qk_norm_backward(c, w, g, a, ws->g_qkv, &z);
	tfm_linear_backward_set(du, g->qkv_w, g->qkv_b, ws->g_qkv, a->u1, w->qkv_w, z.N, z.d, z.qw,
							PK(qkv));
	tfm_copy(dx, dr1, z.nd);
	tfm_rmsnorm_backward(dx, g->ln1_g, du, a->in, w->ln1_g, a->ln1_rstd, z.N, z.d);
}
