/*
 * schedule.c — learning-rate schedules: constant, linear warmup followed by
 * linear or cosine decay to zero at the last step, and the original paper's
 * inverse square root (written so that it peaks at lr after warmup:
 * lr·min(step/warmup, √(warmup/step)), which is d^-0.5·min(step^-0.5,
 * step·warmup^-1.5) with lr = (d·warmup)^-0.5).
 */
#include <math.h>

#include "tfm/optim.h"

float
tfm_lr_at(tfm_schedule s, float lr, int64_t step, int64_t warmup, int64_t total)
{
	double		progress;

	if (step < 1)
		step = 1;
	if (warmup > 0 && step <= warmup && s != TFM_SCHED_INVSQRT)
		return (float) (lr * (double) step / (double) warmup);
	switch (s)
	{
		case TFM_SCHED_CONSTANT:
			return lr;
		case TFM_SCHED_INVSQRT:
			if (warmup <= 0)
				return (float) (lr / sqrt((double) step));
			if (step <= warmup)
				return (float) (lr * (double) step / (double) warmup);
			return (float) (lr * sqrt((double) warmup / (double) step));
		case TFM_SCHED_LINEAR:
		case TFM_SCHED_COSINE:
			if (total <= warmup)
				return lr;
			progress = (double) (step - warmup) / (double) (total - warmup);
			if (progress > 1.0)
				progress = 1.0;
			if (s == TFM_SCHED_LINEAR)
				return (float) (lr * (1.0 - progress));
			return (float) (lr * 0.5 * (1.0 + cos(M_PI * progress)));
	}
	return lr;
}
