/*
 * tfm/hf_config.h — a Hugging Face config.json's hyper-parameters in tfm's
 * units (plain C, no postgres.h): the architectures tfm imports, what the
 * SQL layer reads of a config.json (tfm_hf_params, filled by
 * src/pg/import/config.c strictly, refusing unknown model types and
 * options by name), and the one check of them that makes a tfm_config
 * (formats/hf/hf_config.c).  Architectures: GPT-2 (GPT2LMHeadModel), the
 * BERT family (bert, roberta, distilbert: base encoders and their
 * ...ForSequenceClassification, ...ForTokenClassification and
 * ...ForQuestionAnswering heads) as tfm classifiers, and Llama
 * (LlamaForCausalLM; also Qwen2ForCausalLM, a Llama with q/k/v biases,
 * MistralForCausalLM, whose sliding window the SQL layer checks,
 * Phi3ForCausalLM with its fused projections, GemmaForCausalLM and
 * Gemma2ForCausalLM), Marian (MarianMTModel, an encoder-decoder) and T5
 * (T5ForConditionalGeneration, also mT5) as a tfm encoder-decoder with T5's
 * blocks.  The checkpoint's tensors are tfm/hf_map.h's.
 */
#ifndef TFM_HF_CONFIG_H
#define TFM_HF_CONFIG_H

#include <stdbool.h>

#include "tfm/model.h"

typedef enum tfm_hf_arch
{
	TFM_HF_GPT2 = 1,
	TFM_HF_BERT = 2,
	TFM_HF_ROBERTA = 3,
	TFM_HF_DISTILBERT = 4,
	TFM_HF_LLAMA = 5,			/* LlamaForCausalLM (SmolLM, TinyLlama) */
	TFM_HF_PHI3 = 6,			/* Phi3ForCausalLM: Llama's with q/k/v and gate/up fused */
	TFM_HF_MARIAN = 7,			/* MarianMTModel: a post-LN encoder-decoder (opus-mt) */
	TFM_HF_T5 = 8				/* T5ForConditionalGeneration (T5, T5 v1.1, Flan-T5, mT5) */
} tfm_hf_arch;

/* what a config.json says, in the units tfm needs (filled by the caller) */
typedef struct tfm_hf_params
{
	tfm_hf_arch arch;
	int			vocab;			/* vocab_size */
	int			d_model;		/* n_embd */
	int			layers;			/* n_layer */
	int			heads;			/* n_head */
	int			max_len;		/* n_positions */
	int			d_ff;			/* n_inner, 0 = 4·n_embd */
	float		ln_eps;			/* layer_norm_epsilon */
	bool		tie;			/* tie_word_embeddings */
	float		dropout;		/* resid_pdrop (training only) */
	float		attn_dropout;	/* attn_pdrop */
	/* BERT family (max_len is max_position_embeddings, d_ff intermediate_size) */
	int			type_vocab;		/* type_vocab_size (DistilBERT: 0) */
	int			pad_id;			/* pad_token_id */
	int			pos_offset;		/* RoBERTa: pad_token_id + 1; else 0 */
	int			n_classes;		/* labels of the head (id2label) */
	bool		head;			/* the checkpoint has its classification head */
	int			token_head;		/* tfm_token_head: ...ForTokenClassification's classifier
								 * or ...ForQuestionAnswering's qa_outputs (head false) */
	/* Llama: layers, heads, d_model, d_ff (intermediate_size), max_len
	 * (max_position_embeddings), ln_eps (rms_norm_eps) as above, and */
	int			kv_heads;		/* num_key_value_heads */
	float		rope_theta;
	bool		qkv_bias;		/* Qwen2 (model_type qwen2): q/k/v_proj have biases */
	int			head_dim;		/* a head's width; 0 = d_model / heads */
	bool		gemma;			/* Gemma: GeGLU, embeddings ·√d, RMSNorm gains 1 + w */
	bool		gemma2;			/* Gemma 2 (with gemma): four norms a layer, and */
	float		attn_scale;		/* query_pre_attn_scalar^-½ */
	float		attn_softcap;	/* attn_logit_softcapping, 0 = none */
	float		final_softcap;	/* final_logit_softcapping, 0 = none */
	/* rope_scaling {"rope_type": "llama3", ...} (Llama 3.1, 3.2), {"rope_type": "linear"}
	 * (Gemma 3's global layers); rope_type 0 = none */
	int			rope_type;		/* tfm_rope_type */
	float		rope_factor;	/* factor */
	float		rope_low_freq;	/* low_freq_factor */
	float		rope_high_freq; /* high_freq_factor */
	int			rope_orig_max;	/* original_max_position_embeddings */
	bool		qk_norm;		/* Qwen3 (model_type qwen3): q_norm / k_norm on every head */
	int			nope_interval;	/* SmolLM3: no_rope_layer_interval (0 = none) */
	int			attn_window;	/* sliding_window where it binds (Mistral, Phi-3, Gemma 2); 0 none */
	int			window_pattern; /* 0: every layer; Gemma 2: 2 (its even layers); Gemma 3: 6 */
	float		rope_local_theta;	/* Gemma 3: rope_local_base_freq of the windowed layers */
	/* Phi-4-mini: partial_rotary_factor (0 or 1 = whole heads): each head rotates its
	 * first int(head size · this) values */
	double		rope_partial;
	int			rope_dim;		/* GGUF: phi3.rope.dimension_count (0: from rope_partial) */
	/* Phi-3.5, Phi-4-mini: rope_scaling {"type": "longrope"} (rope_type TFM_ROPE_LONGROPE,
	 * rope_orig_max the top-level original_max_position_embeddings) and */
	float		rope_attn_factor;	/* attention_factor, or √(1 + ln(max/orig)/ln(orig)) */
	int			rope_n_short,	/* short_factor's and long_factor's lengths as given */
				rope_n_long;
	float		rope_short[TFM_ROPE_FACTORS_MAX];
	float		rope_long[TFM_ROPE_FACTORS_MAX];
	bool		gguf_neox;		/* a GGUF file whose q/k rows are Hugging Face's (qwen3),
								 * not permuted for ggml's paired rope (llama) */
	/* the encoder-decoders: layers is the encoder's, and */
	int			dec_layers;		/* Marian decoder_layers, T5 num_decoder_layers */
	int			activation;		/* tfm_activation of Marian's activation_function, T5's
								 * feed_forward_proj: relu (T5), gelu, gelu_tanh (gated) */
	/* Marian: heads and d_ff the encoder's (the decoder's must be equal), pad_id
	 * pad_token_id, and */
	bool		scale_embedding;	/* embeddings times √d_model */
	/* T5: head_dim is d_kv, d_ff, ln_eps (layer_norm_epsilon), tie as above,
	 * max_len (n_positions) only bounds inputs */
	int			rel_buckets;	/* relative_attention_num_buckets */
	int			rel_max_distance;	/* relative_attention_max_distance */
	bool		ff_gated;		/* feed_forward_proj "gated-gelu" */
} tfm_hf_params;

/* the config.json names of the hyper-parameters every architecture checks */
typedef struct hf_keys
{
	const char *d_model,
			   *heads,
			   *layers,
			   *max_len,
			   *d_ff,
			   *ln_eps;
} hf_keys;

/*
 * NULL, or a message (lower case, no period; valid until the next call):
 * the one check of a config.json's hyper-parameters against tfm/limits.h,
 * with the names of the architecture's keys k (tfm_hf_config, hf_import.c,
 * calls it before the family makes its tfm_config)
 */
const char *tfm_hf_check_params(const tfm_hf_params *p, const hf_keys *k);

/* the rotated width of a head: int(head size · partial_rotary_factor), 0 for whole heads */
int			hf_rope_dim(const tfm_hf_params *p);

#endif							/* TFM_HF_CONFIG_H */
