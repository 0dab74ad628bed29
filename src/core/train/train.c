/*
 * train.c — the optimizer step (see train.h), at fp32 or mixed bf16
 * precision (the model's training copies, precision.h).
 */
#include <math.h>
#include <string.h>

#include "tfm/train.h"

void
tfm_train_defaults(const tfm_config *c, tfm_train_opts *o, int *batch, float *val_fraction)
{
	bool		pre = c->norm == TFM_NORM_PRE;

	memset(o, 0, sizeof(*o));
	switch (c->task)
	{
		case TFM_TASK_CLASSIFY:
			*batch = 32;
			/* an imported BERT-family encoder fine-tunes at BERT's usual 5e-5 */
			o->lr = c->emb_norm ? 5e-5f : pre ? 1e-3f : 5e-4f;
			o->schedule = TFM_SCHED_COSINE;
			o->beta1 = 0.9f;
			o->beta2 = 0.999f;
			*val_fraction = TFM_VAL_FRACTION_CLASSIFY;
			break;
		case TFM_TASK_LM:
			*batch = 64;
			o->lr = 2e-3f;
			o->schedule = TFM_SCHED_COSINE;
			o->beta1 = 0.9f;
			o->beta2 = 0.99f;
			*val_fraction = TFM_VAL_FRACTION_LM;
			break;
		case TFM_TASK_SEQ2SEQ:
		default:
			*batch = 64;
			/* the recipe of bench/seq2seq's BLEU 46.9 in 60 minutes: cosine to the budget's end */
			o->lr = 1.5e-3f;
			o->schedule = TFM_SCHED_COSINE;
			o->beta1 = 0.9f;
			o->beta2 = 0.98f;
			o->label_smoothing = 0.1f;
			*val_fraction = TFM_VAL_FRACTION_SEQ2SEQ;
			break;
	}
	o->weight_decay = TFM_WEIGHT_DECAY_DEFAULT;
	o->eps = 1e-8f;
	o->decoupled = true;
	o->clip = TFM_CLIP_DEFAULT;
	o->seed = TFM_SEED_DEFAULT;
	o->precision = TFM_PREC_FP32;
}

void
tfm_train_regularisation(int task, double passes, float *dropout, float *weight_decay)
{
	if (task == TFM_TASK_LM)
	{
		/*
		 * A language model predicts every token of every window: a pass
		 * teaches it far more than a pass over labels, and it memorises later
		 * (Moby-Dick, 4 layers d 128, 34 passes: dropout 0.1 with weight
		 * decay 0.01 reached 1.430 nats/char on held-out text where 0.2 with
		 * 0.1, the classifiers' ladder, reached 1.558 and was still falling;
		 * no dropout memorised by 47 passes, 1.603).
		 */
		*dropout = passes <= 2.0 ? 0.0f : passes <= 8.0 ? 0.05f : passes <= 128.0 ? 0.1f :
			passes <= 256.0 ? 0.15f : 0.2f;
		*weight_decay = passes <= 128.0 ? TFM_WEIGHT_DECAY_DEFAULT : passes <= 256.0 ? 0.05f : 0.1f;
		return;
	}
	*dropout = passes <= 2.0 ? 0.0f : passes <= 4.0 ? 0.05f : passes <= 16.0 ? 0.1f :
		passes <= 32.0 ? 0.15f : 0.2f;
	*weight_decay = passes <= 4.0 ? TFM_WEIGHT_DECAY_DEFAULT : passes <= 16.0 ? 0.05f : 0.1f;
}

int
tfm_trainer_init(tfm_trainer *tr, tfm_model *m, const tfm_train_opts *o)
{
	int			r;

	memset(tr, 0, sizeof(*tr));
	tr->m = m;
	tr->o = *o;
	if (o->precision != TFM_PREC_FP32 && o->precision != TFM_PREC_BF16)
		return TFM_EUNSUPPORTED;
	if ((r = tfm_model_set_train_precision(m, o->precision)) != 0)
		return r;
	if ((r = tfm_adam_init(&tr->opt, m->n_floats, o->beta1, o->beta2, o->eps,
						   o->weight_decay, o->decoupled)) != 0)
		tfm_model_set_train_precision(m, TFM_PREC_FP32);
	else
		tfm_trainer_set_checkpointing(tr, o->checkpoint_activations);
	return r;
}

void
tfm_trainer_free(tfm_trainer *tr)
{
	tfm_adam_free(&tr->opt);
	if (tr->m)
	{
		tfm_model_set_train_precision(tr->m, TFM_PREC_FP32);
		tr->m->checkpoint_activations = false;
	}
}

void
tfm_trainer_set_checkpointing(tfm_trainer *tr, bool on)
{
	tr->o.checkpoint_activations = on;
	tr->m->checkpoint_activations = on;
}

int
tfm_batch_targets(const tfm_config *c, const tfm_batch *b)
{
	int			n = 0,
				T;

	if (c->task == TFM_TASK_CLASSIFY && c->token_head == TFM_TOKEN_HEAD_TAGS)
	{
		for (size_t i = 0; b->token_labels && i < (size_t) b->B * b->T; i++)
			n += b->token_labels[i] != TFM_LABEL_IGNORE;
		return n;
	}
	if (c->task == TFM_TASK_CLASSIFY)
		return b->B;
	T = c->task == TFM_TASK_LM ? b->T : b->Tt;
	for (size_t i = 0; i < (size_t) b->B * T; i++)
		n += b->target[i] != c->pad_id;
	return n;
}

tfm_step_status
tfm_trainer_step(tfm_trainer *tr, const tfm_batch *micro, int n,
				 double *loss_sum, int *count)
{
	tfm_model  *m = tr->m;
	int			total = 0;
	double		sum = 0.0;

	for (int i = 0; i < n; i++)
		total += tfm_batch_targets(&m->cfg, &micro[i]);
	*loss_sum = 0.0;
	*count = total;
	if (total == 0)
		return TFM_STEP_OK;

	tfm_model_zero_grad(m);
	/* the step changes the weights: fp32 panels packed for inference would go stale */
	tfm_model_drop_rows(m);
	/* bf16: this step's weights, rounded once for all its products */
	tfm_model_train_repack(m);
	for (int i = 0; i < n; i++)
	{
		int			c;
		double		s;
		uint64_t	key = tr->o.seed ^ ((uint64_t) (tr->opt.step + 1) * 0x9E3779B97F4A7C15ULL)
			^ ((uint64_t) i << 48);

		int			r = tfm_model_forward(m, &micro[i], true, key);

		if (r == TFM_EBADID)
			return TFM_STEP_BADID;
		if (r != 0)
			return TFM_STEP_NOMEM;
		s = tfm_model_loss_backward(m, &micro[i], tr->o.label_smoothing, true,
									1.0f / (float) total, &c);
		if (c < 0)
			return TFM_STEP_BADID;
		if (isnan(s) && m->grads == NULL)
			return TFM_STEP_NOMEM;
		sum += s;
	}
	*loss_sum = sum;
	tr->last_norm = tfm_grad_norm(m->grads, m->n_floats);
	if (!isfinite(sum) || !isfinite(tr->last_norm))
		return TFM_STEP_NONFINITE;
	if (tr->o.clip > 0.0f)
		tfm_clip_grad(m->grads, m->n_floats, tr->last_norm, tr->o.clip);
	tr->step++;
	tr->last_lr = tfm_lr_at(tr->o.schedule, tr->o.lr, tr->step, tr->o.warmup,
							tr->o.total_steps);
	tfm_adam_step(&tr->opt, m->params, m->grads, m->info, m->n_tensors, tr->last_lr);
	return TFM_STEP_OK;
}
