/*
 * test_checkpoint.c — activation checkpointing (m->checkpoint_activations)
 * gives the plain backward pass's gradients, bit for bit, for every block
 * the model code has: post-LN and pre-LN encoders (mean and CLS pooling, a
 * BERT-family one with embedding norm, token types and a dense layer before
 * the classifier), decoders (tied and untied heads), Llama (RMSNorm,
 * SwiGLU, rotary, grouped-query attention) and Qwen2 (q/k/v biases), and
 * seq2seq (cross-attention, a separate target vocabulary), each without and
 * with dropout (the recomputation replays the same masks); also through the
 * trainer (micro-batches of two shapes, bf16 mixed precision), with a
 * workspace that is smaller, and with an inference pass after it that keeps
 * attention weights (which the shared block cannot hold: the workspace is
 * laid out again).
 *
 * Bit for bit: the recomputed forward pass is the same arithmetic on the
 * same values (same products, same thread count, same dropout keys), so no
 * tolerance is needed; a difference would be a bug.
 */
#include "check.h"
#include "tfm/blas.h"
#include "tfm/model.h"
#include "tfm/train.h"
#include "../src/core/model/model_internal.h"

#define NB 3					/* batch rows */
#define NT 12					/* input length */
#define NTT 10					/* seq2seq target length */

typedef struct arch_case
{
	const char *name;
	int			task,
				norm,
				positions,
				pooling,
				activation,
				tie,
				arch,
				qkv_bias,
				bert,
				tgt_vocab;
} arch_case;

static const arch_case cases[] = {
	{"classify post-LN mean", TFM_TASK_CLASSIFY, TFM_NORM_POST, TFM_POS_LEARNED, TFM_POOL_MEAN, TFM_ACT_RELU},
	{"classify pre-LN cls sinusoidal", TFM_TASK_CLASSIFY, TFM_NORM_PRE, TFM_POS_SINUSOIDAL, TFM_POOL_CLS, TFM_ACT_GELU},
	{"classify bert", TFM_TASK_CLASSIFY, TFM_NORM_POST, TFM_POS_LEARNED, TFM_POOL_CLS, TFM_ACT_GELU, .bert = 1},
	{"lm pre-LN tied", TFM_TASK_LM, TFM_NORM_PRE, TFM_POS_LEARNED, 0, TFM_ACT_GELU, .tie = 1},
	{"lm post-LN untied", TFM_TASK_LM, TFM_NORM_POST, TFM_POS_SINUSOIDAL, 0, TFM_ACT_RELU, .tie = 0},
	{"llama", TFM_TASK_LM, TFM_NORM_PRE, TFM_POS_ROPE, 0, 0, .tie = 1, .arch = TFM_ARCH_LLAMA},
	{"qwen2 qkv bias", TFM_TASK_LM, TFM_NORM_PRE, TFM_POS_ROPE, 0, 0, .tie = 0, .arch = TFM_ARCH_LLAMA,
	.qkv_bias = 1},
	{"seq2seq post-LN", TFM_TASK_SEQ2SEQ, TFM_NORM_POST, TFM_POS_SINUSOIDAL, 0, TFM_ACT_RELU, .tie = 1},
	{"seq2seq pre-LN target vocab", TFM_TASK_SEQ2SEQ, TFM_NORM_PRE, TFM_POS_LEARNED, 0, TFM_ACT_GELU,
	.tie = 1, .tgt_vocab = 37},
};

static void
make_config(tfm_config *c, const arch_case *k, float dropout)
{
	tfm_config_defaults(c, k->task);
	c->vocab = 41;
	c->tgt_vocab = k->tgt_vocab;
	c->d_model = 16;
	c->heads = 4;
	c->d_ff = 24;
	c->max_len = 32;
	c->n_classes = 3;
	c->norm = k->norm;
	c->positions = k->positions;
	c->pooling = k->pooling;
	c->activation = k->activation;
	c->tie = k->tie;
	c->enc_layers = k->task == TFM_TASK_LM ? 0 : 3;
	c->dec_layers = k->task == TFM_TASK_CLASSIFY ? 0 : 3;
	c->dropout = dropout;
	c->attn_dropout = dropout;
	if (k->bert)
	{
		c->emb_norm = 1;
		c->type_vocab = 2;
		c->pos_offset = 2;
		c->max_len = 30;
		c->cls_pre = TFM_CLS_PRE_TANH;
	}
	if (k->arch == TFM_ARCH_LLAMA)
	{
		c->arch = TFM_ARCH_LLAMA;
		c->kv_heads = 2;
		c->pad_id = -1;
		c->rope_theta = 10000.0f;
		c->ln_eps = 1e-6f;
		c->qkv_bias = k->qkv_bias;
		c->dropout = c->attn_dropout = 0.0f;	/* a Llama has none */
	}
}

/* ids of a batch: some rows end in padding (where the model has a pad id) */
static void
fill(int32_t *ids, int B, int T, int V, int pad, int seed)
{
	for (int b = 0; b < B; b++)
		for (int t = 0; t < T; t++)
		{
			int			i = b * T + t;

			ids[i] = 4 + (int32_t) (((unsigned) (i + seed * 7) * 2654435761u) % (unsigned) (V - 4));
			if (pad >= 0 && b == 1 && t >= T - 3)
				ids[i] = pad;
		}
}

typedef struct batch_buf
{
	int32_t		in[NB * NT],
				din[NB * NTT],
				tgt[NB * NT + NB * NTT],
				lab[NB];
	tfm_batch	b;
} batch_buf;

static void
make_batch(batch_buf *bb, const tfm_config *c, int B, int T, int Tt, int seed)
{
	int			Vt = c->tgt_vocab > 0 ? c->tgt_vocab : c->vocab;

	fill(bb->in, B, T, c->vocab, c->pad_id, seed);
	fill(bb->din, B, Tt, Vt, c->pad_id, seed + 1);
	fill(bb->tgt, B, c->task == TFM_TASK_LM ? T : Tt, c->task == TFM_TASK_LM ? c->vocab : Vt,
		 c->pad_id, seed + 2);
	for (int i = 0; i < B; i++)
		bb->lab[i] = (i + seed) % c->n_classes;
	memset(&bb->b, 0, sizeof(bb->b));
	bb->b.B = B;
	bb->b.T = T;
	bb->b.input = bb->in;
	if (c->task == TFM_TASK_SEQ2SEQ)
	{
		bb->b.Tt = Tt;
		bb->b.dec_input = bb->din;
	}
	bb->b.target = bb->tgt;
	bb->b.labels = bb->lab;
}

static tfm_model *
new_model(const tfm_config *c, bool ckpt)
{
	tfm_model  *m = tfm_model_create(c);

	if (m)
	{
		tfm_model_init(m, 11);
		m->checkpoint_activations = ckpt;
	}
	return m;
}

/* forward, loss and backward of one training pass; the loss */
static double
pass(tfm_model *m, const tfm_batch *b, uint64_t key)
{
	int			count;

	if (tfm_model_alloc_grads(m) != 0 || tfm_model_forward(m, b, true, key) != 0)
		return NAN;
	tfm_model_zero_grad(m);
	return tfm_model_loss_backward(m, b, 0.1f, true, 0.25f, &count);
}

static bool
same_floats(const float *a, const float *b, size_t n, size_t *first)
{
	for (size_t i = 0; i < n; i++)
		if (memcmp(&a[i], &b[i], sizeof(float)) != 0)
		{
			*first = i;
			return false;
		}
	return true;
}

/* the gradients of one pass, and the workspace: plain vs checkpointed */
static void
check_pass(const arch_case *k, float dropout)
{
	tfm_config	c;
	tfm_model  *plain,
			   *ck;
	batch_buf	bb;
	double		l1,
				l2;
	size_t		first = 0;
	char		what[128];

	make_config(&c, k, dropout);
	snprintf(what, sizeof(what), "%s dropout %.2f", k->name, c.dropout);
	CHECK(tfm_config_check(&c) == NULL, "%s: config: %s", what, tfm_config_check(&c));
	plain = new_model(&c, false);
	ck = new_model(&c, true);
	make_batch(&bb, &c, NB, NT, NTT, 1);
	l1 = pass(plain, &bb.b, 99);
	l2 = pass(ck, &bb.b, 99);
	CHECK(isfinite(l1) && memcmp(&l1, &l2, sizeof(double)) == 0, "%s: loss %.17g vs %.17g",
		  what, l1, l2);
	CHECK(same_floats(plain->grads, ck->grads, plain->n_floats, &first),
		  "%s: gradient [%zu] %.9g vs %.9g", what, first, plain->grads[first], ck->grads[first]);
	CHECK(ck->ws->checkpoint && !plain->ws->checkpoint, "%s: layouts", what);
	/* one block's activations instead of three */
	CHECK(ck->ws->floats < plain->ws->floats, "%s: workspace %zu floats, plain %zu", what,
		  ck->ws->floats, plain->ws->floats);
	/* the estimate the SQL layer checks shrinks the same way */
	CHECK(tfm_model_workspace_bytes(&c, NB, NT, NTT, TFM_WS_TRAINING | TFM_WS_CHECKPOINT, 2) <
		  tfm_model_workspace_bytes(&c, NB, NT, NTT, TFM_WS_TRAINING, 2),
		  "%s: estimate", what);

	/* a second pass of another shape, then one of the first shape again */
	make_batch(&bb, &c, 2, NT - 4, NTT - 3, 5);
	l1 = pass(plain, &bb.b, 7);
	l2 = pass(ck, &bb.b, 7);
	CHECK(memcmp(&l1, &l2, sizeof(double)) == 0 &&
		  same_floats(plain->grads, ck->grads, plain->n_floats, &first),
		  "%s: second shape", what);

	/*
	 * An inference pass that keeps attention weights after checkpointed
	 * training: every layer's own, as the plain workspace has them
	 */
	make_batch(&bb, &c, NB, NT, NTT, 3);
	bb.b.keep_attention = true;
	CHECK(tfm_model_forward(plain, &bb.b, false, 0) == 0 &&
		  tfm_model_forward(ck, &bb.b, false, 0) == 0, "%s: inference", what);
	CHECK(!ck->ws->checkpoint, "%s: attention weights need every layer's", what);
	{
		bool		dec = c.task != TFM_TASK_CLASSIFY;
		size_t		n = (size_t) NB * c.heads * (dec && c.task == TFM_TASK_SEQ2SEQ ? NTT : NT) *
			(dec && c.task == TFM_TASK_SEQ2SEQ ? NTT : NT);

		for (int l = 0; l < 3; l++)
			CHECK(same_floats(tfm_model_attention(plain, l, dec, false),
							  tfm_model_attention(ck, l, dec, false), n, &first),
				  "%s: attention of layer %d", what, l);
	}
	tfm_model_free(plain);
	tfm_model_free(ck);
}

/* three optimizer steps of two micro-batches each: the same weights */
static void
check_trainer(const arch_case *k, float dropout, tfm_precision prec)
{
	tfm_config	c;
	tfm_model  *m[2];
	tfm_trainer tr[2];
	tfm_train_opts o;
	batch_buf	bb[2];
	int			batch;
	float		valf;
	double		loss[2];
	int			count[2];
	size_t		first = 0;
	char		what[160];

	make_config(&c, k, dropout);
	snprintf(what, sizeof(what), "trainer %s dropout %.2f%s", k->name, c.dropout,
			 prec == TFM_PREC_BF16 ? " bf16" : "");
	tfm_train_defaults(&c, &o, &batch, &valf);
	o.warmup = 1;
	o.total_steps = 10;
	o.precision = prec;
	for (int i = 0; i < 2; i++)
	{
		m[i] = new_model(&c, false);
		o.checkpoint_activations = i == 1;
		CHECK(tfm_trainer_init(&tr[i], m[i], &o) == 0, "%s: init", what);
	}
	CHECK(m[1]->checkpoint_activations && !m[0]->checkpoint_activations,
		  "%s: the option reaches the model", what);
	for (int step = 0; step < 3; step++)
	{
		make_batch(&bb[0], &c, NB, NT, NTT, 10 + step);
		make_batch(&bb[1], &c, 2, NT - 5, NTT - 2, 20 + step);
		{
			tfm_batch	micro[2] = {bb[0].b, bb[1].b};

			for (int i = 0; i < 2; i++)
				CHECK(tfm_trainer_step(&tr[i], micro, 2, &loss[i], &count[i]) == TFM_STEP_OK,
					  "%s: step %d", what, step);
		}
		CHECK(memcmp(&loss[0], &loss[1], sizeof(double)) == 0 && count[0] == count[1],
			  "%s: step %d loss %.17g vs %.17g", what, step, loss[0], loss[1]);
	}
	CHECK(same_floats(m[0]->params, m[1]->params, m[0]->n_floats, &first),
		  "%s: weight [%zu] %.9g vs %.9g", what, first, m[0]->params[first], m[1]->params[first]);
	for (int i = 0; i < 2; i++)
	{
		tfm_trainer_free(&tr[i]);
		CHECK(!m[i]->checkpoint_activations, "%s: the option ends with the trainer", what);
		tfm_model_free(m[i]);
	}
}

int
main(void)
{
	char		err[256];

	if (tfm_blas_init(getenv("TFM_BLIS_ARCH"), err, sizeof(err)) != 0)
	{
		fprintf(stderr, "blas: %s\n", err);
		return 1;
	}
	tfm_set_threads(2);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		check_pass(&cases[i], 0.0f);
		if (cases[i].arch != TFM_ARCH_LLAMA)
			check_pass(&cases[i], 0.2f);
		check_trainer(&cases[i], cases[i].arch == TFM_ARCH_LLAMA ? 0.0f : 0.1f, TFM_PREC_FP32);
	}
	check_trainer(&cases[3], 0.1f, TFM_PREC_BF16);
	check_trainer(&cases[7], 0.1f, TFM_PREC_BF16);
	return check_summary("test_checkpoint");
}
