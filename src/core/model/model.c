/*
 * model.c — a model's config, its tensor layout (names, shapes, offsets),
 * allocation, initialisation and freeing (its workspace and packed copies
 * with it).  The forward and backward passes are in model_forward.c,
 * block.c and llama_block.c.
 *
 * The layout is built by one function, layout(), that walks the config in a
 * fixed order and, for each tensor, records its info and points the matching
 * field of a tfm_weights at base + offset.  The same walk serves parameters
 * and gradients, so the two can never disagree.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "tfm/model.h"
#include "tfm/rng.h"
#include "model_internal.h"
#include "../kernels/lowp/lowp_set.h"

/* parameter blocks from this size on are anonymous mappings (params_alloc) */
#define TFM_PARAMS_MAP_MIN ((size_t) 1 << 20)

void
tfm_config_defaults(tfm_config *cfg, tfm_task task)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->task = task;
	cfg->d_model = 128;
	cfg->heads = 8;
	cfg->d_ff = 0;				/* 0 = 4·d_model, resolved by the caller */
	cfg->pad_id = 0;
	cfg->tie = 1;
	switch (task)
	{
		case TFM_TASK_CLASSIFY:
			cfg->enc_layers = 4;
			cfg->max_len = 256;
			/* pre-LN (lr 1e-3) trains faster in short budgets (TRAINING-NOTES, bench/train_defaults.sh) */
			cfg->norm = TFM_NORM_PRE;
			cfg->positions = TFM_POS_LEARNED;
			cfg->activation = TFM_ACT_RELU;
			cfg->pooling = TFM_POOL_MEAN;
			cfg->dropout = 0.1f;
			cfg->attn_dropout = 0.1f;
			break;
		case TFM_TASK_LM:
			cfg->heads = 4;
			cfg->dec_layers = 4;
			cfg->max_len = 256;
			cfg->norm = TFM_NORM_PRE;
			cfg->positions = TFM_POS_LEARNED;
			cfg->activation = TFM_ACT_GELU;
			cfg->dropout = 0.0f;
			cfg->attn_dropout = 0.0f;
			break;
		case TFM_TASK_SEQ2SEQ:
			cfg->d_model = 256;
			cfg->enc_layers = 3;
			cfg->dec_layers = 3;
			cfg->max_len = 128;
			/* pre-LN: the paper's post-LN stalls with a short warmup (bench/seq2seq) */
			cfg->norm = TFM_NORM_PRE;
			cfg->positions = TFM_POS_SINUSOIDAL;
			cfg->activation = TFM_ACT_RELU;
			cfg->scale_embeddings = 1;
			cfg->dropout = 0.1f;
			cfg->attn_dropout = 0.1f;
			break;
	}
}

/*
 * A T5 model (arch t5): an encoder-decoder, pre-norm (RMSNorm), relative
 * positions, heads of head_size (d_kv) each, no dropout, one vocabulary;
 * the feed-forward is act(x·wi) (relu or a GELU) or, gated, GeGLU.
 */
static const char *
t5_config_check(const tfm_config *c)
{
	if (c->task != TFM_TASK_SEQ2SEQ || c->norm != TFM_NORM_PRE || c->positions != TFM_POS_RELATIVE)
		return "a t5 model is a pre-norm encoder-decoder with relative positions";
	if (c->head_size < 1 || c->heads * c->head_size > TFM_D_MODEL_MAX)
		return "a t5 model's head_size (d_kv) must be between 1 and " TFM_STR(TFM_D_MODEL_MAX) " / heads";
	if (c->rel_buckets < TFM_REL_BUCKETS_MIN || c->rel_buckets > TFM_REL_BUCKETS_MAX)
		return TFM_RANGE_TEXT("rel_buckets", TFM_REL_BUCKETS);
	if (c->rel_max_distance < TFM_REL_MAX_DISTANCE_MIN || c->rel_max_distance > TFM_REL_MAX_DISTANCE_MAX)
		return TFM_RANGE_TEXT("rel_max_distance", TFM_REL_MAX_DISTANCE);
	if (c->dropout != 0.0f || c->attn_dropout != 0.0f)
		return "a t5 model has no dropout";
	if (c->ff_gated != 0 && c->ff_gated != 1)
		return "ff_gated must be 0 or 1";
	if (c->ff_gated && c->activation != TFM_ACT_GELU_TANH)
		return "a gated t5 feed-forward is GeGLU (activation gelu_tanh)";
	if (c->tgt_vocab != 0 || c->kv_heads != 0 || c->qkv_bias || c->gated_act || c->post_norms ||
		c->attn_scale != 0.0f || c->attn_softcap != 0.0f || c->final_softcap != 0.0f)
		return "a t5 model has one vocabulary and none of the llama options";
	return NULL;
}

/*
 * longrope (llama): rope_orig_max, an attention factor between 1 and
 * TFM_ROPE_ATTN_FACTOR_MAX, and r/2 short and long factors (r the rotated
 * width, at most 2·TFM_ROPE_FACTORS_MAX), each positive and at most
 * TFM_ROPE_FACTOR_MAX; another rope type has none of them
 */
static const char *
longrope_check(const tfm_config *c)
{
	int			half = tfm_config_rope_dim(c) / 2;

	if (c->rope_type != TFM_ROPE_LONGROPE)
	{
		for (int i = 0; i < TFM_ROPE_FACTORS_MAX; i++)
			if (c->rope_short[i] != 0.0f || c->rope_long[i] != 0.0f)
				return "rope factors need longrope";
		return c->rope_attn_factor != 0.0f ? "a rope attention factor needs longrope" : NULL;
	}
	if (half > TFM_ROPE_FACTORS_MAX)
		return "longrope rotates at most " TFM_STR(TFM_ROPE_FACTORS_MAX) " pairs of a head";
	if (c->rope_orig_max < 1 || c->rope_orig_max > TFM_ROPE_ORIG_MAX)
		return "rope_orig_max must be between 1 and " TFM_STR(TFM_ROPE_ORIG_MAX);
	if (!(c->rope_attn_factor >= 1.0f && c->rope_attn_factor <= (float) TFM_ROPE_ATTN_FACTOR_MAX))
		return "longrope's attention factor must be between 1 and " TFM_STR(TFM_ROPE_ATTN_FACTOR_MAX);
	for (int i = 0; i < TFM_ROPE_FACTORS_MAX; i++)
	{
		bool		used = i < half;

		if (used ? !(c->rope_short[i] > 0.0f && c->rope_short[i] <= (float) TFM_ROPE_FACTOR_MAX &&
					 c->rope_long[i] > 0.0f && c->rope_long[i] <= (float) TFM_ROPE_FACTOR_MAX)
			: (c->rope_short[i] != 0.0f || c->rope_long[i] != 0.0f))
			return "longrope needs one short and one long factor per rotated pair, each greater than 0 and at most "
				TFM_STR(TFM_ROPE_FACTOR_MAX);
	}
	return NULL;
}

float
tfm_config_out_scale(const tfm_config *c)
{
	return c->arch == TFM_ARCH_T5 && c->tie ? 1.0f / sqrtf((float) c->d_model) : 1.0f;
}

const char *
tfm_config_check(const tfm_config *c)
{
	if (c->task < TFM_TASK_CLASSIFY || c->task > TFM_TASK_SEQ2SEQ)
		return "unknown task";
	if (c->d_model < TFM_D_MODEL_MIN || c->d_model > TFM_D_MODEL_MAX)
		return TFM_RANGE_TEXT("d_model", TFM_D_MODEL);
	if (c->heads < TFM_HEADS_MIN || c->heads > TFM_HEADS_MAX)
		return TFM_RANGE_TEXT("heads", TFM_HEADS);
	if (c->d_model % c->heads != 0 && c->arch != TFM_ARCH_T5)	/* T5's heads are d_kv wide */
		return "heads must divide d_model";
	if (c->d_ff < TFM_D_FF_MIN || c->d_ff > TFM_D_FF_MAX)
		return TFM_RANGE_TEXT("d_ff", TFM_D_FF);
	if (c->max_len < TFM_LEN_MIN || c->max_len > TFM_LEN_MAX)
		return TFM_RANGE_TEXT("max_len", TFM_LEN);
	if (c->vocab < TFM_VOCAB_MIN || c->vocab > TFM_VOCAB_MAX)
		return TFM_RANGE_TEXT("the vocabulary size", TFM_VOCAB);
	if (c->tgt_vocab < 0 || c->tgt_vocab > TFM_VOCAB_MAX)
		return TFM_RANGE_TEXT("the target vocabulary size", TFM_VOCAB);
	if (c->pad_id < -1 || c->pad_id >= c->vocab)
		return "pad_id must be a token of the vocabulary (or -1 for none)";
	if (c->enc_layers < 0 || c->enc_layers > TFM_LAYERS_MAX ||
		c->dec_layers < 0 || c->dec_layers > TFM_LAYERS_MAX)
		return TFM_RANGE_TEXT("layers", TFM_LAYERS);
	if (!(c->dropout >= 0.0f && c->dropout < 1.0f) ||
		!(c->attn_dropout >= 0.0f && c->attn_dropout < 1.0f))
		return "dropout must be at least 0 and less than 1";
	if (c->norm != TFM_NORM_POST && c->norm != TFM_NORM_PRE)
		return "norm must be post or pre";
	if (c->positions != TFM_POS_LEARNED && c->positions != TFM_POS_SINUSOIDAL &&
		c->positions != TFM_POS_ROPE && c->positions != TFM_POS_RELATIVE)
		return "positions must be learned, sinusoidal, rope or relative";
	if (c->activation != TFM_ACT_RELU && c->activation != TFM_ACT_GELU &&
		c->activation != TFM_ACT_GELU_TANH && c->activation != TFM_ACT_SILU)
		return "activation must be relu, gelu, gelu_tanh or silu";
	if (!(c->ln_eps >= 0.0f && c->ln_eps <= (float) TFM_LN_EPS_MAX))
		return "the layer norm epsilon must be between 0 and " TFM_STR(TFM_LN_EPS_MAX);
	if (c->arch != TFM_ARCH_TFM && c->arch != TFM_ARCH_LLAMA && c->arch != TFM_ARCH_T5)
		return "unknown block architecture";
	if (c->arch == TFM_ARCH_T5)
	{
		const char *bad = t5_config_check(c);

		if (bad)
			return bad;
	}
	else if (c->rel_buckets || c->rel_max_distance || c->ff_gated || c->positions == TFM_POS_RELATIVE)
		return "relative positions and a gated feed-forward need the t5 architecture";
	if (c->kv_heads < 0 || c->kv_heads > c->heads ||
		(c->kv_heads > 0 && c->heads % c->kv_heads != 0))
		return "kv_heads must divide heads";
	if (c->arch == TFM_ARCH_T5)
		;						/* checked above */
	else if (c->arch == TFM_ARCH_LLAMA)
	{
		if (c->task != TFM_TASK_LM || c->norm != TFM_NORM_PRE || c->positions != TFM_POS_ROPE)
			return "a llama model is a pre-norm language model with rotary positions";
		if (c->head_size < 0 || c->heads * c->head_size > TFM_D_MODEL_MAX)
			return "head_size must be between 0 and " TFM_STR(TFM_D_MODEL_MAX) " / heads";
		if (tfm_config_head_size(c) % 2 != 0 || tfm_config_head_size(c) < 2)
			return "rotary positions need an even head size";
		if (!(c->rope_theta >= (float) TFM_ROPE_THETA_MIN && c->rope_theta <= (float) TFM_ROPE_THETA_MAX))
			return TFM_RANGE_TEXT("rope_theta", TFM_ROPE_THETA);
		if (c->dropout != 0.0f || c->attn_dropout != 0.0f)
			return "a llama model has no dropout";
		if (c->qkv_bias != 0 && c->qkv_bias != 1)
			return "qkv_bias must be 0 or 1";
		if (c->gated_act != TFM_GATED_SILU && c->gated_act != TFM_GATED_GELU_TANH)
			return "gated_act must be silu or gelu_tanh";
		if (c->post_norms != 0 && c->post_norms != 1)
			return "post_norms must be 0 or 1";
		if (!(c->attn_scale >= 0.0f && c->attn_scale <= 1.0f) ||
			!(c->attn_softcap >= 0.0f && c->attn_softcap <= (float) TFM_SOFTCAP_MAX) ||
			!(c->final_softcap >= 0.0f && c->final_softcap <= (float) TFM_SOFTCAP_MAX))
			return "attn_scale must be between 0 and 1, the soft caps between 0 and "
				TFM_STR(TFM_SOFTCAP_MAX);
		if (c->rope_type != TFM_ROPE_DEFAULT && c->rope_type != TFM_ROPE_LLAMA3 &&
			c->rope_type != TFM_ROPE_LINEAR && c->rope_type != TFM_ROPE_LONGROPE)
			return "unknown rope type";
		if (c->rope_dim < 0 || c->rope_dim % 2 != 0 || c->rope_dim > tfm_config_head_size(c))
			return "rope_dim must be 0 or an even number up to the head size";
		{
			const char *lr = longrope_check(c);

			if (lr)
				return lr;
		}
		if (c->rope_type == TFM_ROPE_LINEAR &&
			!(c->rope_factor >= 1.0f && c->rope_factor <= (float) TFM_ROPE_FACTOR_MAX))
			return "linear rope scaling needs a factor between 1 and " TFM_STR(TFM_ROPE_FACTOR_MAX);
		if (c->rope_local_theta != 0.0f &&
			!(c->rope_local_theta >= (float) TFM_ROPE_THETA_MIN &&
			  c->rope_local_theta <= (float) TFM_ROPE_THETA_MAX))
			return "rope_local_theta must be 0 or between " TFM_STR(TFM_ROPE_THETA_MIN) " and "
				TFM_STR(TFM_ROPE_THETA_MAX);
		if (c->qk_norm != 0 && c->qk_norm != 1)
			return "qk_norm must be 0 or 1";
		if (c->attn_window < 0 || c->attn_window > TFM_LEN_MAX || c->window_pattern < 0 ||
			c->window_pattern > TFM_LAYERS_MAX)
			return "attn_window must be between 0 and " TFM_STR(TFM_LEN_MAX) ", window_pattern between 0 and "
				TFM_STR(TFM_LAYERS_MAX);
		if (c->nope_interval < 0 || c->nope_interval > TFM_LAYERS_MAX)
			return "nope_interval must be between 0 and " TFM_STR(TFM_LAYERS_MAX);
		if (c->rope_type == TFM_ROPE_LLAMA3 &&
			(!(c->rope_factor >= 1.0f && c->rope_factor <= (float) TFM_ROPE_FACTOR_MAX) ||
			 !(c->rope_low_freq > 0.0f && c->rope_high_freq > c->rope_low_freq &&
			   c->rope_high_freq <= (float) TFM_ROPE_FACTOR_MAX) ||
			 c->rope_orig_max < 1 || c->rope_orig_max > TFM_ROPE_ORIG_MAX))
			return "llama3 rope scaling needs a factor between 1 and " TFM_STR(TFM_ROPE_FACTOR_MAX)
				", 0 < low_freq_factor < high_freq_factor and original_max_position_embeddings between 1 and "
				TFM_STR(TFM_ROPE_ORIG_MAX);
	}
	else if (c->qkv_bias || c->gated_act || c->post_norms || c->attn_scale != 0.0f ||
			 c->attn_softcap != 0.0f || c->final_softcap != 0.0f || c->head_size != 0)
		return "qkv_bias, gated_act, post_norms, attn_scale, the soft caps and head_size need the llama architecture";
	else if (c->rope_type || c->rope_factor != 0.0f || c->rope_low_freq != 0.0f ||
			 c->rope_high_freq != 0.0f || c->rope_orig_max || c->qk_norm || c->nope_interval ||
			 c->attn_window || c->window_pattern || c->rope_local_theta != 0.0f ||
			 c->rope_dim || c->rope_attn_factor != 0.0f)
		return "rope scaling and q/k norms need the llama architecture";
	else if (c->positions == TFM_POS_ROPE || c->kv_heads > 0)
		return "rotary positions and kv_heads need the llama architecture";
	if (c->type_vocab < TFM_TYPE_VOCAB_MIN || c->type_vocab > TFM_TYPE_VOCAB_MAX)
		return TFM_RANGE_TEXT("type_vocab", TFM_TYPE_VOCAB);
	if (c->pos_offset < TFM_POS_OFFSET_MIN || c->pos_offset > TFM_POS_OFFSET_MAX)
		return TFM_RANGE_TEXT("pos_offset", TFM_POS_OFFSET);
	if (c->emb_norm != 0 && c->emb_norm != 1)
		return "emb_norm must be 0 or 1";
	if (c->cls_pre < TFM_CLS_PRE_NONE || c->cls_pre > TFM_CLS_PRE_RELU)
		return "cls_pre must be none, tanh or relu";
	if (c->token_head < TFM_TOKEN_HEAD_NONE || c->token_head > TFM_TOKEN_HEAD_SPANS)
		return "token_head must be none, tags or spans";
	if (c->token_head != TFM_TOKEN_HEAD_NONE &&
		(c->task != TFM_TASK_CLASSIFY || c->cls_pre != TFM_CLS_PRE_NONE))
		return "a head on every token is a classifier's without a pre-classifier layer";
	if (c->token_head == TFM_TOKEN_HEAD_SPANS && c->n_classes != 2)
		return "a span head has two logits a token, the start's and the end's";
	if (c->task != TFM_TASK_CLASSIFY &&
		(c->type_vocab || c->emb_norm || c->pos_offset || c->cls_pre))
		return "token types, the embedding norm, a position offset and a pre-classifier layer apply to classifiers only";
	if (c->pos_offset > 0 && c->positions != TFM_POS_LEARNED)
		return "a position offset needs learned positions";
	if ((c->sinus_halves != 0 && c->sinus_halves != 1) || (c->out_bias != 0 && c->out_bias != 1))
		return "sinus_halves and out_bias must be 0 or 1";
	if (c->sinus_halves && c->positions != TFM_POS_SINUSOIDAL)
		return "sinus_halves needs sinusoidal positions";
	if (c->out_bias && c->task == TFM_TASK_CLASSIFY)
		return "out_bias applies to lm and seq2seq models only";
	switch (c->task)
	{
		case TFM_TASK_CLASSIFY:
			if (c->enc_layers < 1 || c->dec_layers != 0)
				return "a classifier has " TFM_STR(TFM_LAYERS_MIN) " to " TFM_STR(TFM_LAYERS_MAX) " encoder layers and no decoder";
			if (c->n_classes < (c->emb_norm ? TFM_CLASSES_MIN_IMPORTED : TFM_CLASSES_MIN) ||
				c->n_classes > TFM_CLASSES_MAX)
				return "a classifier needs between " TFM_STR(TFM_CLASSES_MIN) " and " TFM_STR(TFM_CLASSES_MAX) " labels";
			if (c->pooling != TFM_POOL_MEAN && c->pooling != TFM_POOL_CLS)
				return "pooling must be mean or cls";
			break;
		case TFM_TASK_LM:
			if (c->dec_layers < 1 || c->enc_layers != 0)
				return "a language model has " TFM_STR(TFM_LAYERS_MIN) " to " TFM_STR(TFM_LAYERS_MAX) " decoder layers and no encoder";
			break;
		case TFM_TASK_SEQ2SEQ:
			if (c->enc_layers < 1 || c->dec_layers < 1)
				return "an encoder-decoder needs at least one encoder and one decoder layer";
			break;
	}
	{
		tfm_param_info *info;
		size_t		n;
		int			k = tfm_config_tensors(c, &info, &n);
		bool		too_big = false;

		for (int i = 0; i < k; i++)
			if (info[i].size > TFM_TENSOR_MAX)
				too_big = true;
		free(info);
		if (n > TFM_PARAMS_MAX)
			return "the model would have more than 16 billion parameters";
		if (too_big)
			return "a tensor would have more than 1 billion values";
	}
	return NULL;
}

typedef struct layout_state
{
	tfm_param_info *info;		/* NULL: only count */
	int			n;
	size_t		off;
	float	   *base;			/* NULL: no pointers */
} layout_state;

static void
add(layout_state *st, const char *name, int d0, int d1, float **slot)
{
	size_t		size = (size_t) d0 * (d1 > 0 ? (size_t) d1 : 1);

	if (st->info)
	{
		tfm_param_info *p = &st->info[st->n];

		snprintf(p->name, sizeof(p->name), "%s", name);
		p->ndim = d1 > 0 ? 2 : 1;
		p->dims[0] = d0;
		p->dims[1] = d1 > 0 ? d1 : 0;
		p->offset = st->off;
		p->size = size;
		p->decay = d1 > 0;
	}
	if (st->base && slot)
		*slot = st->base + st->off;
	st->n++;
	/* keep every tensor 64-byte aligned */
	st->off += (size + 15) & ~(size_t) 15;
}

static void
add_block(layout_state *st, const char *prefix, int i, const tfm_config *c,
		  bool cross, tfm_block_w *bw)
{
	char		nm[48];
	int			d = c->d_model,
				f = c->d_ff;
	tfm_block_w dummy;

	if (!bw)
		bw = &dummy;
#define ADD(suffix, d0, d1, field) \
	do { snprintf(nm, sizeof(nm), "%s.%d.%s", prefix, i, suffix); \
		 add(st, nm, d0, d1, &bw->field); } while (0)
	if (c->arch == TFM_ARCH_T5)
	{
		/* t5_block.c: RMSNorm gains, heads of head_size (d_kv), no biases */
		int			qd = tfm_config_q_dim(c);

		ADD("attn.qkv.w", d, 3 * qd, qkv_w);
		ADD("attn.out.w", qd, d, attn_out_w);
		ADD("ln1.g", d, 0, ln1_g);
		if (cross)
		{
			ADD("cross.q.w", d, qd, cq_w);
			ADD("cross.kv.w", d, 2 * qd, ckv_w);
			ADD("cross.out.w", qd, d, cout_w);
			ADD("lnx.g", d, 0, lnx_g);
		}
		ADD("ff1.w", d, tfm_config_ff1_width(c), ff1_w);
		ADD("ff2.w", f, d, ff2_w);
		ADD("ln2.g", d, 0, ln2_g);
		return;
	}
	if (c->arch == TFM_ARCH_LLAMA)
	{
		/* llama_block.c: fused Q|K|V and gate|up, RMSNorm gains, no biases (but Qwen2's q|k|v) */
		ADD("attn.qkv.w", d, tfm_config_qkv_width(c), qkv_w);
		if (c->qkv_bias)		/* Qwen2 */
			ADD("attn.qkv.b", tfm_config_qkv_width(c), 0, qkv_b);
		ADD("attn.out.w", tfm_config_q_dim(c), d, attn_out_w);
		ADD("ln1.g", d, 0, ln1_g);
		ADD("ff1.w", d, 2 * f, ff1_w);
		ADD("ff2.w", f, d, ff2_w);
		ADD("ln2.g", d, 0, ln2_g);
		if (c->post_norms)		/* Gemma 2 */
		{
			ADD("post_attn.g", d, 0, post_attn_g);
			ADD("post_ff.g", d, 0, post_ff_g);
		}
		if (c->qk_norm)			/* Qwen3 */
		{
			ADD("attn.q_norm.g", tfm_config_head_size(c), 0, q_norm_g);
			ADD("attn.k_norm.g", tfm_config_head_size(c), 0, k_norm_g);
		}
		return;
	}
	ADD("attn.qkv.w", d, 3 * d, qkv_w);
	ADD("attn.qkv.b", 3 * d, 0, qkv_b);
	ADD("attn.out.w", d, d, attn_out_w);
	ADD("attn.out.b", d, 0, attn_out_b);
	ADD("ln1.g", d, 0, ln1_g);
	ADD("ln1.b", d, 0, ln1_b);
	if (cross)
	{
		ADD("cross.q.w", d, d, cq_w);
		ADD("cross.q.b", d, 0, cq_b);
		ADD("cross.kv.w", d, 2 * d, ckv_w);
		ADD("cross.kv.b", 2 * d, 0, ckv_b);
		ADD("cross.out.w", d, d, cout_w);
		ADD("cross.out.b", d, 0, cout_b);
		ADD("lnx.g", d, 0, lnx_g);
		ADD("lnx.b", d, 0, lnx_b);
	}
	ADD("ff1.w", d, f, ff1_w);
	ADD("ff1.b", f, 0, ff1_b);
	ADD("ff2.w", f, d, ff2_w);
	ADD("ff2.b", d, 0, ff2_b);
	ADD("ln2.g", d, 0, ln2_g);
	ADD("ln2.b", d, 0, ln2_b);
#undef ADD
}

/* walk the config; w may be NULL (count only) */
static void
layout(const tfm_config *c, layout_state *st, tfm_weights *w)
{
	int			d = c->d_model;
	tfm_weights dummy;
	bool		pre = c->norm == TFM_NORM_PRE;
	bool		learned = c->positions == TFM_POS_LEARNED;

	if (!w)
	{
		memset(&dummy, 0, sizeof(dummy));
		w = &dummy;
	}
	add(st, "tok_emb", c->vocab, d, &w->tok_emb);
	if (c->task == TFM_TASK_SEQ2SEQ && c->tgt_vocab > 0)
		add(st, "tgt_emb", c->tgt_vocab, d, &w->tgt_emb);
	if (learned)
		add(st, "pos_emb", c->pos_offset + c->max_len, d, &w->pos_emb);
	if (c->type_vocab > 0)
		add(st, "type_emb", c->type_vocab, d, &w->type_emb);
	if (c->emb_norm)
	{
		add(st, "emb_ln.g", d, 0, &w->emb_ln_g);
		add(st, "emb_ln.b", d, 0, &w->emb_ln_b);
	}
	if (learned && c->task == TFM_TASK_SEQ2SEQ)
		add(st, "dec_pos_emb", c->max_len, d, &w->dec_pos_emb);
	if (c->arch == TFM_ARCH_T5)
		add(st, "enc.rel_bias", c->rel_buckets, c->heads, &w->enc_rel_bias);
	for (int i = 0; i < c->enc_layers; i++)
		add_block(st, "enc", i, c, false, w->enc ? &w->enc[i] : NULL);
	if (pre && c->enc_layers > 0)
	{
		add(st, "enc.ln_f.g", d, 0, &w->enc_lnf_g);
		if (c->arch == TFM_ARCH_TFM)	/* RMSNorm: no bias */
			add(st, "enc.ln_f.b", d, 0, &w->enc_lnf_b);
	}
	if (c->arch == TFM_ARCH_T5)
		add(st, "dec.rel_bias", c->rel_buckets, c->heads, &w->dec_rel_bias);
	for (int i = 0; i < c->dec_layers; i++)
		add_block(st, "dec", i, c, c->task == TFM_TASK_SEQ2SEQ,
				  w->dec ? &w->dec[i] : NULL);
	if (pre && c->dec_layers > 0)
	{
		add(st, "dec.ln_f.g", d, 0, &w->dec_lnf_g);
		if (c->arch == TFM_ARCH_TFM)	/* RMSNorm: no bias */
			add(st, "dec.ln_f.b", d, 0, &w->dec_lnf_b);
	}
	if (c->task != TFM_TASK_CLASSIFY && !c->tie)
		add(st, "out.w", d, c->task == TFM_TASK_SEQ2SEQ && c->tgt_vocab > 0 ?
			c->tgt_vocab : c->vocab, &w->out_w);
	if (c->task == TFM_TASK_CLASSIFY && c->cls_pre != TFM_CLS_PRE_NONE)
	{
		add(st, "cls.pre.w", d, d, &w->cls_pre_w);
		add(st, "cls.pre.b", d, 0, &w->cls_pre_b);
	}
	if (c->task == TFM_TASK_CLASSIFY)
	{
		add(st, "cls.w", d, c->n_classes, &w->cls_w);
		add(st, "cls.b", c->n_classes, 0, &w->cls_b);
	}
	if (c->out_bias)			/* Marian's final_logits_bias */
		add(st, "out.b", c->task == TFM_TASK_SEQ2SEQ && c->tgt_vocab > 0 ?
			c->tgt_vocab : c->vocab, 0, &w->out_b);
}

int
tfm_config_tensors(const tfm_config *cfg, tfm_param_info **info, size_t *n_floats)
{
	layout_state st = {0};

	layout(cfg, &st, NULL);
	st.info = calloc(st.n > 0 ? st.n : 1, sizeof(tfm_param_info));
	st.n = 0;
	st.off = 0;
	layout(cfg, &st, NULL);
	*info = st.info;
	*n_floats = st.off;
	return st.n;
}

/* point a tfm_weights at a block laid out like the parameters */
void
tfm_point_weights(const tfm_config *cfg, tfm_weights *w, float *base)
{
	layout_state st = {0};
	tfm_block_w *enc = w->enc,
			   *dec = w->dec;

	memset(w, 0, sizeof(*w));
	w->enc = enc;
	w->dec = dec;
	st.base = base;
	layout(cfg, &st, w);
}

/*
 * The parameter block: a large one as an anonymous mapping, zero and taking
 * no memory until written, so that the values a model never makes (the
 * tensors left to their kept blocks: tfm_model_leave_absent) cost nothing
 */
static float *
params_alloc(tfm_model *m, size_t bytes)
{
	if (bytes >= TFM_PARAMS_MAP_MIN)
	{
		void	   *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED)
			return NULL;
		m->params_mapped = bytes;
		return p;
	}
	return aligned_alloc(64, bytes);
}

static tfm_model *
model_create(const tfm_config *cfg, float *params, void (*release) (float *, void *), void *arg)
{
	tfm_model  *m = calloc(1, sizeof(tfm_model));

	if (!m)
		return NULL;
	m->cfg = *cfg;
	m->n_tensors = tfm_config_tensors(cfg, &m->info, &m->n_floats);
	for (int i = 0; i < m->n_tensors; i++)
		m->n_params += m->info[i].size;
	/* 16 floats of slack: BLIS's small-matrix kernels may read past a view */
	if (params == NULL)
		m->params = params_alloc(m, (((m->n_floats + 16) * sizeof(float)) + 63) & ~(size_t) 63);
	m->w.enc = calloc(cfg->enc_layers + 1, sizeof(tfm_block_w));
	m->w.dec = calloc(cfg->dec_layers + 1, sizeof(tfm_block_w));
	m->g.enc = calloc(cfg->enc_layers + 1, sizeof(tfm_block_w));
	m->g.dec = calloc(cfg->dec_layers + 1, sizeof(tfm_block_w));
	if (!m->info || (params == NULL && !m->params) || !m->w.enc || !m->w.dec || !m->g.enc || !m->g.dec)
	{
		tfm_model_free(m);
		return NULL;
	}
	if (params == NULL && !m->params_mapped)
		memset(m->params, 0, m->n_floats * sizeof(float));
	else if (params != NULL)
	{
		m->params = params;
		m->release_params = release;
		m->release_arg = arg;
	}
	tfm_point_weights(cfg, &m->w, m->params);
	return m;
}

tfm_model *
tfm_model_create(const tfm_config *cfg)
{
	return model_create(cfg, NULL, NULL, NULL);
}

tfm_model *
tfm_model_create_borrowed(const tfm_config *cfg, float *params,
						  void (*release) (float *params, void *arg), void *arg)
{
	return model_create(cfg, params, release, arg);
}

void
tfm_workspace_free(tfm_workspace *ws)
{
	if (!ws)
		return;
	free(ws->arena);
	free(ws->enc);
	free(ws->dec);
	free(ws->sinus);
	free(ws);
}

/* (here, beside the workspace's own free: model.c calls nothing above it) */
void
tfm_model_free_lanes(tfm_model *m)
{
	if (!m->lanes)
		return;
	for (int t = 1; t < TFM_MAX_THREADS; t++)
		tfm_workspace_free(m->lanes[t]);
	free(m->lanes);
	m->lanes = NULL;
}

void
tfm_model_free(tfm_model *m)
{
	if (!m)
		return;
	tfm_workspace_free(m->ws);
	tfm_model_free_lanes(m);
	tfm_lowp_set_free(m->lowp);
	tfm_lowp_set_free(m->lowp_train);
	tfm_lowp_set_free(m->rows32);
	free(m->int4_kept);
	free(m->info);
	free(m->absent);
	if (m->release_params)
		m->release_params(m->params, m->release_arg);
	else if (m->params_mapped)
		munmap(m->params, m->params_mapped);
	else
		free(m->params);
	free(m->grads);
	free(m->w.enc);
	free(m->w.dec);
	free(m->g.enc);
	free(m->g.dec);
	free(m);
}

const tfm_param_info *
tfm_model_find(const tfm_model *m, const char *name)
{
	for (int i = 0; i < m->n_tensors; i++)
		if (strcmp(m->info[i].name, name) == 0)
			return &m->info[i];
	return NULL;
}

static bool
ends_with(const char *s, const char *suffix)
{
	size_t		n = strlen(s),
				k = strlen(suffix);

	return n >= k && strcmp(s + n - k, suffix) == 0;
}

/*
 * Initial weights: norm gains 1 and biases 0; embeddings N(0, 1/d) (so
 * that embeddings scaled by √d have unit variance); every other matrix
 * Glorot-normal, N(0, 2/(in + out)), as nn.Transformer's xavier init; in
 * pre-LN stacks the projections that write into the residual stream are
 * scaled down by √(2·layers) (GPT-2), so the stream's variance does not
 * grow with depth.
 */
void
tfm_model_init(tfm_model *m, uint64_t seed)
{
	tfm_model_init_some(m, seed, NULL);
}

/*
 * Only the tensors which[i] names (NULL: all) take their initial values,
 * the same as tfm_model_init gives them: the random draws of the others
 * are made and dropped, so that each tensor's values do not depend on
 * which others are written.  With none named nothing is drawn.
 */
void
tfm_model_init_some(tfm_model *m, uint64_t seed, const bool *which)
{
	tfm_rng		rng;
	const tfm_config *c = &m->cfg;
	int			layers = c->enc_layers + c->dec_layers,
				last = -1;

	for (int i = 0; i < m->n_tensors; i++)
		if (!which || which[i])
			last = i;
	tfm_rng_seed(&rng, seed);
	for (int i = 0; i <= last; i++)
	{
		const tfm_param_info *p = &m->info[i];
		float	   *x = m->params + p->offset;
		float		std;

		if (m->poll)
			m->poll(m->poll_arg);

		if (which && !which[i])
		{
			/* a matrix's draws made all the same (norms and biases draw none) */
			if (!ends_with(p->name, ".g") && p->ndim != 1)
				for (size_t j = 0; j < p->size; j++)
				{
					if (m->poll && (j & ((1u << 20) - 1)) == (1u << 20) - 1)
						m->poll(m->poll_arg);
					(void) tfm_rng_normal(&rng);
				}
			continue;
		}
		if (ends_with(p->name, ".g"))
		{
			for (size_t j = 0; j < p->size; j++)
				x[j] = 1.0f;
			continue;
		}
		if (p->ndim == 1)
		{
			memset(x, 0, p->size * sizeof(float));
			continue;
		}
		if (strcmp(p->name, "tok_emb") == 0 || strcmp(p->name, "tgt_emb") == 0 ||
			strcmp(p->name, "pos_emb") == 0 || strcmp(p->name, "dec_pos_emb") == 0 ||
			strcmp(p->name, "type_emb") == 0)
			std = 1.0f / sqrtf((float) c->d_model);
		else
			std = sqrtf(2.0f / (float) (p->dims[0] + p->dims[1]));
		if (c->norm == TFM_NORM_PRE &&
			(ends_with(p->name, "attn.out.w") || ends_with(p->name, "cross.out.w") ||
			 ends_with(p->name, "ff2.w")))
			std /= sqrtf(2.0f * (float) (layers > 0 ? layers : 1));
		for (size_t j = 0; j < p->size; j++)
		{
			/* a host may end a long initialisation here (every 2^20 values) */
			if (m->poll && (j & ((1u << 20) - 1)) == (1u << 20) - 1)
				m->poll(m->poll_arg);
			x[j] = std * tfm_rng_normal(&rng);
		}
	}
}

void
tfm_model_trim(tfm_model *m)
{
	free(m->grads);
	m->grads = NULL;
	tfm_workspace_free(m->ws);
	m->ws = NULL;
	tfm_model_free_lanes(m);
	m->logits = m->pooled = m->hidden = m->memory = NULL;
}

void
tfm_model_zero_grad(tfm_model *m)
{
	if (m->grads)
		memset(m->grads, 0, m->n_floats * sizeof(float));
}

int
tfm_model_alloc_grads(tfm_model *m)
{
	if (m->grads)
		return 0;
	m->grads = aligned_alloc(64, (((m->n_floats + 16) * sizeof(float)) + 63) & ~(size_t) 63);
	if (!m->grads)
		return -1;
	memset(m->grads, 0, m->n_floats * sizeof(float));
	tfm_point_weights(&m->cfg, &m->g, m->grads);
	return 0;
}
