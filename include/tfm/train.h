/*
 * train.h — one optimizer step of a model over a batch given as one or more
 * micro-batches: forward, loss, backward (accumulated), global-norm
 * clipping, the learning-rate schedule and an Adam/AdamW update.  The data
 * pipeline (rows → batches) belongs to the caller.
 */
#ifndef TFM_TRAIN_H
#define TFM_TRAIN_H

#include "tfm/model.h"
#include "tfm/optim.h"
#include "tfm/precision.h"

typedef struct tfm_train_opts
{
	float		lr;				/* peak learning rate */
	tfm_schedule schedule;
	int64_t		warmup;			/* steps */
	int64_t		total_steps;	/* for decaying schedules; may be revised */
	float		clip;			/* global norm; 0 = no clipping */
	float		label_smoothing;
	float		beta1,
				beta2,
				eps,
				weight_decay;
	bool		decoupled;		/* AdamW (true) or Adam */
	uint64_t	seed;			/* dropout masks */
	/*
	 * The linear layers' and output head's products: TFM_PREC_FP32 (0), or
	 * TFM_PREC_BF16: bf16 operands, fp32 sums, weights rounded once per step
	 * from the fp32 master copy; gradients and Adam stay fp32 (precision.h)
	 */
	tfm_precision precision;
	/*
	 * Recompute each block's activations in the backward pass instead of
	 * keeping every layer's (m->checkpoint_activations, model.h): the same
	 * gradients for less memory and about one more forward pass
	 */
	bool		checkpoint_activations;
} tfm_train_opts;

typedef struct tfm_trainer
{
	tfm_model  *m;
	tfm_adam	opt;
	tfm_train_opts o;
	int64_t		step;			/* steps taken in this run */
	double		last_norm;		/* gradient norm before clipping */
	float		last_lr;
} tfm_trainer;

typedef enum tfm_step_status
{
	TFM_STEP_OK = 0,
	TFM_STEP_NONFINITE = 1,		/* loss or gradient not finite: nothing changed */
	TFM_STEP_NOMEM = 2,
	TFM_STEP_BADID = 3			/* an input or target id outside the vocabulary: nothing changed */
} tfm_step_status;

/*
 * The defaults of a training run of a model of config c (tfm/limits.h for
 * the limits): *o entirely (warmup 0, fp32), and the batch size (rows) and
 * the validation fraction of its task.
 */
void		tfm_train_defaults(const tfm_config *c, tfm_train_opts *o, int *batch,
							   float *val_fraction);

/*
 * Regularisation from the planned passes over the training data (epochs,
 * or the steps a max_steps or time_limit budget allows over the steps of
 * one epoch), for a model of task (TFM_TASK_*).  Classifiers and seq2seq:
 * none up to 2 passes, then dropout 0.05 (up to 4), 0.1 (16), 0.15 (32),
 * 0.2 beyond; weight decay TFM_WEIGHT_DECAY_DEFAULT up to 4 passes, 0.05 up
 * to 16, 0.1 beyond (TRAINING-NOTES: a small corpus seen many times needs
 * dropout 0.1-0.2).  Language models: none up to 2 passes, 0.05 up to 8,
 * 0.1 up to 128, 0.15 up to 256, 0.2 beyond; weight decay the default up
 * to 128, 0.05 up to 256, 0.1 beyond.  For models created without an
 * explicit dropout and runs without an explicit weight_decay.
 */
void		tfm_train_regularisation(int task, double passes, float *dropout,
									 float *weight_decay);

/* 0, TFM_ENOMEM, or TFM_EUNSUPPORTED for a precision training does not have (int8) */
int			tfm_trainer_init(tfm_trainer *tr, tfm_model *m, const tfm_train_opts *o);
void		tfm_trainer_free(tfm_trainer *tr);
/* activation checkpointing on or off from the next step (the same gradients either way) */
void		tfm_trainer_set_checkpointing(tfm_trainer *tr, bool on);

/* targets a batch's loss counts (labels, scores or spans; a token head's labelled tokens; non-pad targets) */
int			tfm_batch_targets(const tfm_config *c, const tfm_batch *b);

/*
 * One step over n micro-batches (gradient accumulation: the loss is the
 * mean over all their targets).  *loss_sum / *count receive the summed loss
 * and the targets counted.  A non-finite loss or gradient leaves the
 * parameters untouched and returns TFM_STEP_NONFINITE.
 */
tfm_step_status tfm_trainer_step(tfm_trainer *tr, const tfm_batch *micro, int n,
								 double *loss_sum, int *count);

#endif							/* TFM_TRAIN_H */
