/*
 * test_train_plan.c — a training run's defaults (tfm_train_defaults): the
 * held-out share per task, and the regularisation the planned passes call
 * for (tfm_train_regularisation): none up to 2 passes, then rising, at the
 * documented steps (doc/reference.md, tfm_train).
 */
#include "check.h"
#include "tfm/train.h"

static void
test_val_fraction(void)
{
	static const tfm_task tasks[3] = {TFM_TASK_CLASSIFY, TFM_TASK_LM, TFM_TASK_SEQ2SEQ};
	static const float want[3] = {0.1f, 0.05f, 0.05f};

	for (int i = 0; i < 3; i++)
	{
		tfm_config	c;
		tfm_train_opts o;
		int			batch;
		float		vf = -1.0f;

		tfm_config_defaults(&c, tasks[i]);
		tfm_train_defaults(&c, &o, &batch, &vf);
		CHECK(vf == want[i], "task %d: val_fraction %g, want %g", i, vf, want[i]);
		CHECK(o.weight_decay == TFM_WEIGHT_DECAY_DEFAULT, "task %d: weight decay %g", i, o.weight_decay);
	}
}

static void
test_regularisation(void)
{
	/* passes, dropout, weight decay: at and just past each step */
	static const double passes[] = {0.2, 1, 2, 2.01, 4, 4.5, 16, 16.5, 32, 33, 1000};
	static const float dropout[] = {0, 0, 0, 0.05f, 0.05f, 0.1f, 0.1f, 0.15f, 0.15f, 0.2f, 0.2f};
	static const float wd[] = {0.01f, 0.01f, 0.01f, 0.01f, 0.01f, 0.05f, 0.05f, 0.1f, 0.1f, 0.1f, 0.1f};

	for (size_t i = 0; i < sizeof(passes) / sizeof(passes[0]); i++)
	{
		float		d = -1.0f,
					w = -1.0f;

		tfm_train_regularisation(passes[i], &d, &w);
		CHECK(d == dropout[i] && w == wd[i], "%g passes: dropout %g weight decay %g, want %g %g",
			  passes[i], d, w, dropout[i], wd[i]);
	}
}

int
main(void)
{
	test_val_fraction();
	test_regularisation();
	return check_summary("test_train_plan");
}
