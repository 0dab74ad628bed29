/*
 * optim.c — Adam and AdamW (torch.optim semantics, bias-corrected), and
 * global-norm clipping (torch.nn.utils.clip_grad_norm_ semantics).
 */
#include <math.h>
#include <stdlib.h>

#include "tfm/blas.h"
#include "tfm/optim.h"

int
tfm_adam_init(tfm_adam *opt, size_t n, float beta1, float beta2,
			  float eps, float weight_decay, bool decoupled)
{
	*opt = (tfm_adam) {
		.beta1 = beta1, .beta2 = beta2, .eps = eps, .weight_decay = weight_decay,
		.decoupled = decoupled, .n = n,
	};
	opt->m = calloc(n ? n : 1, sizeof(float));
	opt->v = calloc(n ? n : 1, sizeof(float));
	if (!opt->m || !opt->v)
	{
		tfm_adam_free(opt);
		return -1;
	}
	return 0;
}

void
tfm_adam_free(tfm_adam *opt)
{
	free(opt->m);
	free(opt->v);
	opt->m = opt->v = NULL;
}

void
tfm_adam_step(tfm_adam *opt, float *params, const float *grads,
			  const tfm_param_info *info, int n_tensors, float lr)
{
	const float b1 = opt->beta1,
				b2 = opt->beta2;
	double		bc1,
				bc2;
	float		step_size,
				inv_sqrt_bc2;

	opt->step++;
	bc1 = 1.0 - pow(b1, (double) opt->step);
	bc2 = 1.0 - pow(b2, (double) opt->step);
	step_size = (float) (lr / bc1);
	inv_sqrt_bc2 = (float) (1.0 / sqrt(bc2));

	for (int t = 0; t < n_tensors; t++)
	{
		const tfm_param_info *p = &info[t];
		float	   *x = params + p->offset;
		const float *g = grads + p->offset;
		float	   *m = opt->m + p->offset;
		float	   *v = opt->v + p->offset;
		float		wd = p->decay ? opt->weight_decay : 0.0f;
		bool		decoupled = opt->decoupled;
		size_t		n = p->size;

#pragma omp parallel for num_threads(tfm_get_threads()) if(n >= 262144) schedule(static)
		for (size_t i = 0; i < n; i++)
		{
			float		gi = g[i];
			float		denom;

			if (decoupled)
				x[i] *= 1.0f - lr * wd;
			else
				gi += wd * x[i];
			m[i] = b1 * m[i] + (1.0f - b1) * gi;
			v[i] = b2 * v[i] + (1.0f - b2) * gi * gi;
			denom = sqrtf(v[i]) * inv_sqrt_bc2 + opt->eps;
			x[i] -= step_size * m[i] / denom;
		}
	}
}

double
tfm_grad_norm(const float *g, size_t n)
{
	double		s = 0.0;

	for (size_t i = 0; i < n; i++)
		s += (double) g[i] * g[i];
	return sqrt(s);
}

void
tfm_clip_grad(float *g, size_t n, double norm, float max_norm)
{
	double		coef = max_norm / (norm + 1e-6);

	if (coef >= 1.0)
		return;
	for (size_t i = 0; i < n; i++)
		g[i] = (float) (g[i] * coef);
}
