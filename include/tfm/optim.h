/*
 * optim.h — Adam / AdamW over a model's flat parameter block, global-norm
 * gradient clipping and learning-rate schedules.
 *
 * Gradient accumulation over micro-batches needs nothing here: backward
 * passes accumulate into the gradients and the caller scales each
 * micro-batch's loss by 1 / (targets in the whole batch), then steps once.
 */
#ifndef TFM_OPTIM_H
#define TFM_OPTIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tfm/model.h"

typedef struct tfm_adam
{
	float		beta1,
				beta2,
				eps,
				weight_decay;
	bool		decoupled;		/* true: AdamW; false: Adam with L2 in the gradient */
	int64_t		step;			/* steps taken */
	size_t		n;
	float	   *m,
			   *v;				/* moments, laid out like the parameters */
} tfm_adam;

/* allocate zeroed moments; returns 0 or -1 (out of memory) */
int			tfm_adam_init(tfm_adam *opt, size_t n, float beta1, float beta2,
						  float eps, float weight_decay, bool decoupled);
void		tfm_adam_free(tfm_adam *opt);
/* one step at learning rate lr; decay only on tensors with info.decay */
void		tfm_adam_step(tfm_adam *opt, float *params, const float *grads,
						  const tfm_param_info *info, int n_tensors, float lr);

/* the global L2 norm of a gradient block (accumulated in double) */
double		tfm_grad_norm(const float *g, size_t n);
/* scale g so its norm is at most max_norm (as clip_grad_norm_) */
void		tfm_clip_grad(float *g, size_t n, double norm, float max_norm);

typedef enum tfm_schedule
{
	TFM_SCHED_CONSTANT = 0,		/* lr, after linear warmup */
	TFM_SCHED_LINEAR = 1,		/* warmup, then linear decay to 0 at total */
	TFM_SCHED_COSINE = 2,		/* warmup, then cosine decay to 0 at total */
	TFM_SCHED_INVSQRT = 3		/* warmup to lr, then lr·√(warmup/step) (the paper) */
} tfm_schedule;

/* learning rate for step (1-based) of total steps */
float		tfm_lr_at(tfm_schedule s, float lr, int64_t step, int64_t warmup,
					  int64_t total);

#endif							/* TFM_OPTIM_H */
