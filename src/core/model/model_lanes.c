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
#include "tfm/status_codes.h"
#include "model_internal.h"

/* lane t's workspace: the model's own for lane 0 */
static tfm_workspace **
lane_ws(tfm_model *m, int t)
{
	return t == 0 ? &m->ws : &m->lanes[t];
}

/* the passes i ≡ t (mod team) on lane t; the lowest status */
static int
run_lane(tfm_model *m, int t, int team, const tfm_batch *b, int n, float *const *logits,
		 float *const *pooled, const volatile int *stop)
{
	const int	C = m->cfg.n_classes,
				d = m->cfg.d_model;
	tfm_model	lane = *m;		/* the weights shared, read only */
	int			rc = 0;

	/* no host code on these threads: they read stop, the caller polls */
	lane.poll = NULL;
	lane.stop = stop;
	lane.ws = *lane_ws(m, t);
	/* the host's bound on a workspace kept between calls, shared by the lanes */
	lane.ws_limit = m->ws_limit / (size_t) team;
	for (int i = t; i < n; i += team)
	{
		int			r = stop && *stop ? TFM_ECANCELED : tfm_model_forward(&lane, &b[i], false, 0);

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
	*lane_ws(m, t) = lane.ws;
	return rc;
}

int
tfm_model_forward_lanes(tfm_model *m, const tfm_batch *b, int n, float *const *logits,
						float *const *pooled, const volatile int *stop)
{
	int			lanes = tfm_get_threads(),
				rc = 0;

	if (n < 1 || m->cfg.task != TFM_TASK_CLASSIFY)
		return -1;
	for (int i = 0; i < n; i++)
		if (!b[i].lens)
			return -1;
	if (lanes > n)
		lanes = n;
	if (lanes > 1 && !m->lanes && !(m->lanes = calloc(TFM_MAX_THREADS, sizeof(tfm_workspace *))))
		lanes = 1;
	if (lanes == 1)
		rc = run_lane(m, 0, 1, b, n, logits, pooled, stop);
	else
	{
		/*
		 * (not a region of one thread: the teams of the products inside
		 * one would be nested ones, started afresh on every call)
		 */
#pragma omp parallel num_threads(lanes) reduction(min:rc)
		rc = run_lane(m, omp_get_thread_num(), omp_get_num_threads(), b, n, logits, pooled,
					  stop);
	}
	/* the outputs are the caller's: none of the lanes' is the model's last */
	m->logits = m->pooled = m->hidden = NULL;
	return rc;
}

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
