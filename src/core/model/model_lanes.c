/*
 * model_lanes.c — several varlen inference passes of a classifier at once,
 * each on a thread of its own with a workspace of its own (a lane).  A
 * batch of many texts at two threads or more then runs whole passes side
 * by side instead of splitting each product's columns, and its attention,
 * norms and activations, between the threads of one pass.  A pass's bits
 * do not depend on the threads it runs on, so each gives what it gives
 * alone.
 */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "tfm/blas.h"
#include "tfm/layers.h"
#include "tfm/lowp.h"
#include "tfm/status_codes.h"
#include "model_internal.h"

/*
 * The passes i ≡ t (mod team) on a copy of base (the weights shared, read
 * only) with workspace *ws: the lowest status
 */
static int
run_lane(const tfm_model *base, tfm_workspace **ws, int t, int team, const tfm_batch *b, int n,
		 float *const *logits, float *const *pooled, const volatile int *stop, int *status)
{
	const int	C = base->cfg.n_classes,
				d = base->cfg.d_model;
	tfm_model	lane = *base;
	int			rc = 0;

	/* no host code on these threads: they read stop, the caller polls */
	lane.poll = NULL;
	lane.stop = stop;
	lane.ws = *ws;
	/* the host's bound on a workspace kept between calls, shared by the lanes */
	lane.ws_limit = base->ws_limit / (size_t) team;
	for (int i = t; i < n; i += team)
	{
		int			r = stop && *stop ? TFM_ECANCELED : tfm_model_forward(&lane, &b[i], false, 0);

		if (status)
			status[i] = r;
		if (r != 0)
		{
			rc = r < rc ? r : rc;
			continue;
		}
		if (logits && logits[i])
			memcpy(logits[i], lane.logits, sizeof(float) * (size_t) b[i].B * C);
		if (pooled && pooled[i])
			memcpy(pooled[i], lane.pooled, sizeof(float) * (size_t) b[i].B * d);
	}
	*ws = lane.ws;
	return rc;
}

int
tfm_model_forward_lanes(tfm_model *m, const tfm_batch *b, int n, float *const *logits,
						float *const *pooled, const volatile int *stop, int *status)
{
	int			threads = tfm_get_threads(),
				rc = 0;

	if (n < 1 || m->cfg.task != TFM_TASK_CLASSIFY)
		return -1;
	for (int i = 0; i < n; i++)
		if (!b[i].lens)
			return -1;
	if (threads > 1 && n > 1 && !m->lanes &&
		!(m->lanes = calloc(TFM_MAX_THREADS, sizeof(tfm_workspace *))))
		threads = 1;
	if (threads == 1 || n == 1)
		rc = run_lane(m, &m->ws, 0, 1, b, n, logits, pooled, stop, status);
	else
	{
		/* read once here, never while a lane writes its workspace back */
		const tfm_model base = *m;
		tfm_workspace **ws = m->lanes;

		/* the kernels' choices made here, not raced for by the lanes */
		(void) tfm_gemm_rows_kernel();
		(void) tfm_attn_kernels();
		(void) tfm_lowp_bf16_kernel();
		ws[0] = m->ws;

		/*
		 * The whole team, lanes past the passes idle: a smaller team would
		 * end the pool's other threads, and the next whole one start new
		 * threads with the caller's signal mask (kernels/blas/sgemm_rows.c).
		 * Not a region of one thread either: the products' teams inside
		 * one would be nested ones, started afresh on every call.
		 */
#pragma omp parallel num_threads(threads) reduction(min:rc)
		{
			int			t = omp_get_thread_num();

			rc = run_lane(&base, &ws[t], t, omp_get_num_threads(), b, n, logits, pooled, stop,
						  status);
		}
		m->ws = ws[0];
		ws[0] = NULL;
	}
	/* the outputs are the caller's: none of the lanes' is the model's last */
	m->logits = m->pooled = m->hidden = NULL;
	return rc;
}

size_t
tfm_model_held_bytes(const tfm_model *m)
{
	size_t		bytes = m->ws ? m->ws->floats * sizeof(float) : 0;

	for (int t = 1; m->lanes && t < TFM_MAX_THREADS; t++)
		if (m->lanes[t])
			bytes += m->lanes[t]->floats * sizeof(float);
	return bytes;
}
