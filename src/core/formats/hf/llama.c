/*
 * llama.c — the Llama family for the Hugging Face import: Llama
 * (LlamaForCausalLM: SmolLM, TinyLlama; Llama 3.1 and 3.2 with their
 * "llama3" rope_scaling), SmolLM3 (SmolLM3ForCausalLM: every
 * no_rope_layer_interval-th layer without rotary positions), Qwen3
 * (Qwen3ForCausalLM, q/k norms), Qwen2 (Qwen2ForCausalLM, a Llama
 * with q/k/v biases), Mistral (MistralForCausalLM, whose sliding window the
 * SQL layer checks), Phi-3 (Phi3ForCausalLM, TFM_HF_PHI3) and Gemma
 * (GemmaForCausalLM, Gemma2ForCausalLM, Gemma3ForCausalLM): the config.json keys, the
 * tfm_config (tfm's llama blocks, llama_block.c) and the tensors; every
 * name but lm_head.weight may carry the "model." prefix:
 *   embed_tokens.weight (V, d)                 -> tok_emb
 *   layers.N.input_layernorm.weight (d)        -> dec.N.ln1.g
 *   layers.N.self_attn.q_proj.weight (h·s, d)  -> dec.N.attn.qkv.w columns [0, h·s)
 *   layers.N.self_attn.k_proj.weight (kv·s, d) -> columns [h·s, h·s + kv·s)
 *   layers.N.self_attn.v_proj.weight (kv·s, d) -> columns [h·s + kv·s, h·s + 2·kv·s)
 *   layers.N.self_attn.o_proj.weight (d, h·s)  -> dec.N.attn.out.w, transposed
 *   (s: head_dim, d / h unless the config says otherwise)
 *   layers.N.post_attention_layernorm.weight   -> dec.N.ln2.g
 *   layers.N.mlp.gate_proj.weight (f, d)       -> dec.N.ff1.w columns [0, f)
 *   layers.N.mlp.up_proj.weight (f, d)         -> dec.N.ff1.w columns [f, 2f)
 *   layers.N.mlp.down_proj.weight (d, f)       -> dec.N.ff2.w, transposed
 *   norm.weight (d)                            -> dec.ln_f.g
 *   lm_head.weight (V, d)                      as for GPT-2 (gpt2.c)
 *   layers.N.self_attn.rotary_emb.inv_freq     buffer of older checkpoints
 *                                              (recomputed from rope_theta)
 * Qwen2 (Qwen2ForCausalLM, qkv_bias): the same, and
 *   layers.N.self_attn.q_proj.bias (h·s)       -> dec.N.attn.qkv.b [0, d)
 *   layers.N.self_attn.k_proj.bias (kv·s)      -> [d, d + kv·s)
 *   layers.N.self_attn.v_proj.bias (kv·s)      -> [d + kv·s, d + 2·kv·s)
 * Qwen3 (Qwen3ForCausalLM, qk_norm): Llama's names (no biases), head_dim
 * its own, and an RMSNorm over each query and key head before the rotation:
 *   layers.N.self_attn.q_norm.weight (s)       -> dec.N.attn.q_norm.g
 *   layers.N.self_attn.k_norm.weight (s)       -> dec.N.attn.k_norm.g
 * Mistral (MistralForCausalLM): Llama's names exactly.
 * Phi-3 (Phi3ForCausalLM, TFM_HF_PHI3; Phi-3.5 and Phi-4-mini with longrope,
 * Phi-4-mini rotating the first partial_rotary_factor of each head and tying
 * its head): Llama's, but q/k/v and gate/up fused, in tfm's own order:
 *   layers.N.self_attn.qkv_proj.weight (d + 2·kv·s, d) -> dec.N.attn.qkv.w, transposed
 *   layers.N.mlp.gate_up_proj.weight (2f, d)            -> dec.N.ff1.w, transposed
 * Gemma (GemmaForCausalLM, gemma): Llama's names; its RMSNorm computes
 * x·(1 + w), so every norm weight is stored plus 1 (input_layernorm,
 * post_attention_layernorm, norm); the head is tied.
 * Gemma 2 (Gemma2ForCausalLM, post_norms): Gemma's, but four norms a layer,
 * post_attention_layernorm now on the attention's output:
 *   layers.N.input_layernorm.weight            -> dec.N.ln1.g (plus 1)
 *   layers.N.post_attention_layernorm.weight   -> dec.N.post_attn.g (plus 1)
 *   layers.N.pre_feedforward_layernorm.weight  -> dec.N.ln2.g (plus 1)
 *   layers.N.post_feedforward_layernorm.weight -> dec.N.post_ff.g (plus 1)
 * Gemma 3 (Gemma3ForCausalLM, model_type gemma3_text): Gemma 2's, and Qwen3's
 * q/k norms, stored plus 1 as every Gemma norm:
 *   layers.N.self_attn.q_norm.weight (s)       -> dec.N.attn.q_norm.g (plus 1)
 *   layers.N.self_attn.k_norm.weight (s)       -> dec.N.attn.k_norm.g (plus 1)
 */
#include <string.h>

#include "hf_family.h"

static const hf_keys llama_keys = {"hidden_size", "num_attention_heads", "num_hidden_layers",
"max_position_embeddings", "intermediate_size", "rms_norm_eps"};

static void
llama_config(tfm_config *cfg, const tfm_hf_params *p)
{
	hf_base_config(cfg, p, TFM_TASK_LM);
	cfg->arch = TFM_ARCH_LLAMA;
	cfg->kv_heads = p->kv_heads == p->heads ? 0 : p->kv_heads;
	cfg->norm = TFM_NORM_PRE;
	cfg->positions = TFM_POS_ROPE;
	cfg->rope_theta = p->rope_theta;
	cfg->qkv_bias = p->qkv_bias;
	/* a head_dim other than d / heads (Gemma 7B's and Gemma 2's) */
	cfg->head_size = p->head_dim > 0 && p->head_dim * p->heads != p->d_model ? p->head_dim : 0;
	/* Gemma: GeGLU, and embeddings times √d (HF's normalizer, a float of the embedding's dtype) */
	cfg->gated_act = p->gemma ? TFM_GATED_GELU_TANH : TFM_GATED_SILU;
	cfg->scale_embeddings = p->gemma;
	/* Gemma 2: norms on both sub-layers' outputs, its attention's scale and the soft caps */
	cfg->post_norms = p->gemma2;
	cfg->attn_scale = p->gemma2 ? p->attn_scale : 0.0f;
	cfg->attn_softcap = p->gemma2 ? p->attn_softcap : 0.0f;
	cfg->final_softcap = p->gemma2 ? p->final_softcap : 0.0f;
	/* Llama 3.1's rope scaling */
	cfg->rope_type = p->rope_type;
	cfg->rope_factor = p->rope_factor;
	cfg->rope_low_freq = p->rope_low_freq;
	cfg->rope_high_freq = p->rope_high_freq;
	cfg->rope_orig_max = p->rope_orig_max;
	cfg->qk_norm = p->qk_norm;	/* Qwen3 */
	cfg->nope_interval = p->nope_interval;	/* SmolLM3 */
	cfg->attn_window = p->attn_window;	/* Mistral, Phi-3, Gemma 2 */
	cfg->window_pattern = p->window_pattern;
	cfg->rope_local_theta = p->rope_local_theta;	/* Gemma 3's local layers */
	/* Phi-4-mini's partial rotation, Phi-3.5's longrope (checked by hf_config.c) */
	cfg->rope_dim = hf_rope_dim(p);
	if (p->rope_type == TFM_ROPE_LONGROPE)
	{
		cfg->rope_attn_factor = p->rope_attn_factor;
		memcpy(cfg->rope_short, p->rope_short, sizeof(float) * p->rope_n_short);
		memcpy(cfg->rope_long, p->rope_long, sizeof(float) * p->rope_n_long);
	}
	cfg->pad_id = -1;			/* ids are the checkpoint's; nothing is padding */
	cfg->dropout = 0.0f;
	cfg->attn_dropout = 0.0f;
}

/* Qwen2's q/k/v biases of layer i into thirds of the fused attn.qkv.b */
static void
qwen2_bias_entries(hf_builder *b, const tfm_config *c, int i)
{
	static const char *const proj[3] = {"self_attn.q_proj.bias", "self_attn.k_proj.bias",
	"self_attn.v_proj.bias"};
	int64_t		qd = tfm_config_q_dim(c),
				kvd = tfm_config_kv_dim(c),
				col[3] = {0, qd, qd + kvd};

	for (int k = 0; k < 3; k++)
		hf_add_layer(b, "layers", i, proj[k], "dec", "attn.qkv.b", TFM_HF_SLICE, 1,
				  k == 0 ? qd : kvd, 0, col[k]);
}

/*
 * The Llama family's tensors; gemma (GeGLU): norm gains stored plus 1;
 * fused (Phi-3): one q|k|v and one gate|up matrix
 */
static void
llama_entries(hf_builder *b, const tfm_config *c)
{
	bool		fused = b->map->arch == TFM_HF_PHI3,
				gemma = c->gated_act == TFM_GATED_GELU_TANH;
	int64_t		d = c->d_model,
				f = c->d_ff,
				V = c->vocab,
				s = tfm_config_head_size(c),
				qd = tfm_config_q_dim(c),
				kvd = tfm_config_kv_dim(c);
	tfm_hf_use	norm = gemma ? TFM_HF_COPY_PLUS1 : TFM_HF_COPY;

	hf_add(b, "embed_tokens.weight", true, TFM_HF_COPY, "tok_emb", 2, V, d, 0, 0);
	for (int i = 0; i < c->dec_layers; i++)
	{
#define L(hf, tf, use, nd, a, bb, c0) hf_add_layer(b, "layers", i, hf, "dec", tf, use, nd, a, bb, c0)
		L("input_layernorm.weight", "ln1.g", norm, 1, d, 0, 0);
		if (fused)
			L("self_attn.qkv_proj.weight", "attn.qkv.w", TFM_HF_TRANSPOSE_COLS, 2, qd + 2 * kvd, d, 0);
		else
		{
			L("self_attn.q_proj.weight", "attn.qkv.w", TFM_HF_TRANSPOSE_COLS, 2, qd, d, 0);
			L("self_attn.k_proj.weight", "attn.qkv.w", TFM_HF_TRANSPOSE_COLS, 2, kvd, d, qd);
			L("self_attn.v_proj.weight", "attn.qkv.w", TFM_HF_TRANSPOSE_COLS, 2, kvd, d, qd + kvd);
		}
		L("self_attn.o_proj.weight", "attn.out.w", TFM_HF_TRANSPOSE, 2, d, qd, 0);
		if (c->qk_norm)			/* Qwen3, Gemma 3 (plus 1) */
		{
			L("self_attn.q_norm.weight", "attn.q_norm.g", norm, 1, s, 0, 0);
			L("self_attn.k_norm.weight", "attn.k_norm.g", norm, 1, s, 0, 0);
		}
		if (c->post_norms)		/* Gemma 2 */
		{
			L("post_attention_layernorm.weight", "post_attn.g", norm, 1, d, 0, 0);
			L("pre_feedforward_layernorm.weight", "ln2.g", norm, 1, d, 0, 0);
			L("post_feedforward_layernorm.weight", "post_ff.g", norm, 1, d, 0, 0);
		}
		else
			L("post_attention_layernorm.weight", "ln2.g", norm, 1, d, 0, 0);
		if (fused)
			L("mlp.gate_up_proj.weight", "ff1.w", TFM_HF_TRANSPOSE_COLS, 2, 2 * f, d, 0);
		else
		{
			L("mlp.gate_proj.weight", "ff1.w", TFM_HF_TRANSPOSE_COLS, 2, f, d, 0);
			L("mlp.up_proj.weight", "ff1.w", TFM_HF_TRANSPOSE_COLS, 2, f, d, f);
		}
		L("mlp.down_proj.weight", "ff2.w", TFM_HF_TRANSPOSE, 2, d, f, 0);
		L("self_attn.rotary_emb.inv_freq", "", TFM_HF_BUFFER, 1, s / 2, 0, 0);
#undef L
		if (c->qkv_bias)
			qwen2_bias_entries(b, c, i);
	}
	if (c->rope_type == TFM_ROPE_LONGROPE)
	{
		/* a GGUF file's longrope factors (the config holds them): checked, not stored */
		hf_add(b, "rope_factors_long.weight", false, TFM_HF_BUFFER, "", 1, tfm_config_rope_dim(c) / 2, 0, 0, 0);
		hf_add(b, "rope_factors_short.weight", false, TFM_HF_BUFFER, "", 1, tfm_config_rope_dim(c) / 2, 0, 0, 0);
	}
	hf_add(b, "norm.weight", true, norm, "dec.ln_f.g", 1, d, 0, 0, 0);
	hf_add_lm_head(b, c);
}

const hf_family hf_llama = {&llama_keys, llama_config, llama_entries};
