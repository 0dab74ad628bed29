/*
 * hf_config.c — a config.json's hyper-parameters (tfm_hf_params, filled by
 * the caller) checked against tfm/limits.h and made into a tfm_config by
 * the architecture's family (hf_arch_table.c): tfm_hf_config.  The checks
 * are one validator for every family, so the messages come in one order.
 */
#include <stdio.h>

#include "tfm/hf_config.h"

/* the message of the last refusal (valid until the next call) */
static char hf_msg[160];

static bool
out_of_range(int v, int lo, int hi, const char *key, int msg_lo, int msg_hi)
{
	if (v >= lo && v <= hi)
		return false;
	snprintf(hf_msg, sizeof(hf_msg), "%s must be between %d and %d", key, msg_lo, msg_hi);
	return true;
}

#define RANGE(v, key, L) out_of_range(v, L##_MIN, L##_MAX, key, L##_MIN, L##_MAX)

static const char *
refuse(const char *fmt, const char *a, const char *b)
{
	snprintf(hf_msg, sizeof(hf_msg), fmt, a, b);
	return hf_msg;
}

static const char *check_phi3_rope(const tfm_hf_params *p);

/*
 * The one validator of a config.json's hyper-parameters (in the order the
 * messages name them), against the limits of tfm/limits.h; the tfm_config
 * made from them is then checked by tfm_config_check like any other.
 */
const char *
tfm_hf_check_params(const tfm_hf_params *p, const hf_keys *k)
{
	bool		llama = p->arch == TFM_HF_LLAMA || p->arch == TFM_HF_PHI3;
	bool		marian = p->arch == TFM_HF_MARIAN;
	bool		t5 = p->arch == TFM_HF_T5;
	bool		bert = p->arch != TFM_HF_GPT2 && !llama && !marian && !t5;

	if (RANGE(p->d_model, k->d_model, TFM_D_MODEL) || RANGE(p->heads, k->heads, TFM_HEADS))
		return hf_msg;
	if (p->d_model % p->heads != 0 && !t5)	/* T5's heads are d_kv wide */
		return refuse("%s must divide %s", k->heads, k->d_model);
	if (t5)
	{
		if (p->head_dim < 1 || (int64_t) p->heads * p->head_dim > TFM_D_MODEL_MAX)
			return "d_kv · num_heads must be between 1 and " TFM_STR(TFM_D_MODEL_MAX);
		if (RANGE(p->dec_layers, "num_decoder_layers", TFM_LAYERS) ||
			RANGE(p->rel_buckets, "relative_attention_num_buckets", TFM_REL_BUCKETS) ||
			RANGE(p->rel_max_distance, "relative_attention_max_distance", TFM_REL_MAX_DISTANCE))
			return hf_msg;
	}
	if (llama)
	{
		if (p->kv_heads < 1 || p->kv_heads > p->heads || p->heads % p->kv_heads != 0)
			return "num_key_value_heads must divide num_attention_heads";
		if ((p->head_dim > 0 ? p->head_dim : p->d_model / p->heads) % 2 != 0)
			return "the head size (head_dim, or hidden_size / num_attention_heads) must be even";
		if (p->head_dim < 0 || (int64_t) p->heads * p->head_dim > TFM_D_MODEL_MAX)
			return "head_dim · num_attention_heads must be at most " TFM_STR(TFM_D_MODEL_MAX);
	}
	if (RANGE(p->layers, k->layers, TFM_LAYERS))
		return hf_msg;
	if (marian && RANGE(p->dec_layers, "decoder_layers", TFM_LAYERS))
		return hf_msg;
	if (bert && (p->pos_offset < TFM_POS_OFFSET_MIN || p->pos_offset > TFM_POS_OFFSET_MAX))
		return "pad_token_id is out of range for RoBERTa's position offset";
	if (bert && p->pos_offset)
	{
		/* RoBERTa's positions start at pad_token_id + 1 */
		if (p->max_len - p->pos_offset < TFM_LEN_MIN || p->max_len - p->pos_offset > TFM_LEN_MAX)
		{
			snprintf(hf_msg, sizeof(hf_msg), "%s must be between pad_token_id + %d and pad_token_id + %d",
					 k->max_len, TFM_LEN_MIN + 1, TFM_LEN_MAX + 1);
			return hf_msg;
		}
	}
	else if (RANGE(p->max_len, k->max_len, TFM_LEN))
		return hf_msg;
	if (RANGE(p->vocab, "vocab_size", TFM_VOCAB))
		return hf_msg;
	/* GPT-2's n_inner may be 0: 4·n_embd */
	if (out_of_range(p->d_ff, p->arch == TFM_HF_GPT2 ? 0 : TFM_D_FF_MIN, TFM_D_FF_MAX, k->d_ff,
					 TFM_D_FF_MIN, TFM_D_FF_MAX))
		return hf_msg;
	if (marian && (p->pad_id < 0 || p->pad_id >= p->vocab))
		return "pad_token_id must be below vocab_size";
	if (bert)
	{
		if (RANGE(p->type_vocab, "type_vocab_size", TFM_TYPE_VOCAB))
			return hf_msg;
		if (p->pad_id < 0 || p->pad_id >= p->vocab)
			return "pad_token_id must be below vocab_size";
		if (p->n_classes < TFM_CLASSES_MIN_IMPORTED || p->n_classes > TFM_CLASSES_MAX)
			return "id2label must name between " TFM_STR(TFM_CLASSES_MIN_IMPORTED) " and "
				TFM_STR(TFM_CLASSES_MAX) " labels";
	}
	if (!(p->ln_eps > 0.0f && p->ln_eps <= (float) TFM_LN_EPS_MAX))
		return refuse("%s must be greater than 0 and at most %s", k->ln_eps, TFM_STR(TFM_LN_EPS_MAX));
	if (llama)
	{
		if (!(p->rope_theta >= (float) TFM_ROPE_THETA_MIN && p->rope_theta <= (float) TFM_ROPE_THETA_MAX))
			return TFM_RANGE_TEXT("rope_theta", TFM_ROPE_THETA);
		if (p->rope_local_theta != 0.0f &&
			!(p->rope_local_theta >= (float) TFM_ROPE_THETA_MIN && p->rope_local_theta <= (float) TFM_ROPE_THETA_MAX))
			return TFM_RANGE_TEXT("rope_local_base_freq", TFM_ROPE_THETA);
		if (p->arch == TFM_HF_PHI3 || p->rope_partial != 0.0 || p->rope_dim != 0)
			return check_phi3_rope(p);
	}
	else if (!(p->dropout >= 0.0f && p->dropout < 1.0f) ||
			 !(p->attn_dropout >= 0.0f && p->attn_dropout < 1.0f))
		return "dropout probabilities must be at least 0 and less than 1";
	return NULL;
}

#undef RANGE

int
hf_rope_dim(const tfm_hf_params *p)
{
	int			s = p->head_dim > 0 ? p->head_dim : p->d_model / p->heads,
				r;

	if (p->rope_dim > 0)
		return p->rope_dim == s ? 0 : p->rope_dim;
	if (!(p->rope_partial > 0.0 && p->rope_partial < 1.0))
		return 0;
	r = (int) (s * p->rope_partial);	/* transformers' int(head_dim * partial_rotary_factor) */
	return r == s ? 0 : r;
}

/*
 * Phi-3's rope: an even rotated width of at least 2, and (longrope) one short
 * and one long factor per rotated pair, as transformers' rope validation asks
 */
static const char *
check_phi3_rope(const tfm_hf_params *p)
{
	int			s = p->head_dim > 0 ? p->head_dim : p->d_model / p->heads,
				r = hf_rope_dim(p) > 0 ? hf_rope_dim(p) : s;

	if (r < 2 || r % 2 != 0 || r > s)
	{
		snprintf(hf_msg, sizeof(hf_msg), "partial_rotary_factor %g of a head of %d rotates %d values; tfm needs an even number",
				 p->rope_partial, s, r);
		return hf_msg;
	}
	if (p->rope_type == TFM_ROPE_LONGROPE &&
		(p->rope_n_short != r / 2 || p->rope_n_long != r / 2))
	{
		snprintf(hf_msg, sizeof(hf_msg), "rope_scaling short_factor and long_factor must have %d values (the rotated width %d / 2), not %d and %d",
				 r / 2, r, p->rope_n_short, p->rope_n_long);
		return hf_msg;
	}
	if (p->rope_type == TFM_ROPE_LONGROPE && r / 2 > TFM_ROPE_FACTORS_MAX)
		return "longrope rotates at most " TFM_STR(TFM_ROPE_FACTORS_MAX) " pairs of a head";
	return NULL;
}
