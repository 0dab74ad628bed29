/*
 * test_train_plan.c — a training run's defaults (tfm_train_defaults): the
 * held-out share per task, and the regularisation the planned passes call
 * for (tfm_train_regularisation, per task): none up to 2 passes, then rising, at the
 * documented steps (doc/reference.md, tfm_train); and the recipe per task
 * (README, Training): pre-LN everywhere, cosine everywhere, peak lr, label
 * smoothing (seq2seq only) and batch rows.
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
test_recipe(void)
{
	static const tfm_task tasks[3] = {TFM_TASK_CLASSIFY, TFM_TASK_LM, TFM_TASK_SEQ2SEQ};
	static const float lr[3] = {1e-3f, 2e-3f, 1.5e-3f};
	static const float smoothing[3] = {0.0f, 0.0f, 0.1f};
	static const int batch_rows[3] = {32, 64, 64};

	for (int i = 0; i < 3; i++)
	{
		tfm_config	c;
		tfm_train_opts o;
		int			batch = -1;
		float		vf;

		tfm_config_defaults(&c, tasks[i]);
		CHECK(c.norm == TFM_NORM_PRE, "task %d: norm %d, want pre", i, c.norm);
		tfm_train_defaults(&c, &o, &batch, &vf);
		CHECK(o.schedule == TFM_SCHED_COSINE, "task %d: schedule %d, want cosine", i, (int) o.schedule);
		CHECK(o.lr == lr[i], "task %d: lr %g, want %g", i, o.lr, lr[i]);
		CHECK(o.label_smoothing == smoothing[i], "task %d: label smoothing %g, want %g", i,
			  o.label_smoothing, smoothing[i]);
		CHECK(batch == batch_rows[i], "task %d: batch %d, want %d", i, batch, batch_rows[i]);
		/* a post-LN classifier (one made before 0.4, or asked for) keeps lr 5e-4 */
		if (tasks[i] == TFM_TASK_CLASSIFY)
		{
			c.norm = TFM_NORM_POST;
			tfm_train_defaults(&c, &o, &batch, &vf);
			CHECK(o.lr == 5e-4f, "post-LN classifier: lr %g, want 5e-4", o.lr);
		}
	}
	CHECK(TFM_BATCH_TOKENS_SEQ2SEQ == 8192, "seq2seq batch tokens %d", TFM_BATCH_TOKENS_SEQ2SEQ);
}

static void
test_regularisation(void)
{
	/* passes, dropout, weight decay: at and just past each step */
	static const double passes[] = {0.2, 1, 2, 2.01, 4, 4.5, 16, 16.5, 32, 33, 1000};
	static const float dropout[] = {0, 0, 0, 0.05f, 0.05f, 0.1f, 0.1f, 0.15f, 0.15f, 0.2f, 0.2f};
	static const float wd[] = {0.01f, 0.01f, 0.01f, 0.01f, 0.01f, 0.05f, 0.05f, 0.1f, 0.1f, 0.1f, 0.1f};
	/* classifiers and seq2seq models; a language model below */
	static const int tasks[] = {TFM_TASK_CLASSIFY, TFM_TASK_SEQ2SEQ};

	for (size_t i = 0; i < sizeof(passes) / sizeof(passes[0]); i++)
	{
		float		d = -1.0f,
					w = -1.0f;

		for (size_t t = 0; t < 2; t++)
		{
			int			task = tasks[t];

			tfm_train_regularisation(task, passes[i], &d, &w);
			CHECK(d == dropout[i] && w == wd[i], "task %d, %g passes: dropout %g weight decay %g, want %g %g",
				  task, passes[i], d, w, dropout[i], wd[i]);
		}
	}
	/* a language model: the same steps later */
	{
		static const double lm_passes[] = {2, 2.01, 8, 8.5, 34, 68, 128, 129, 256, 257};
		static const float lm_dropout[] = {0, 0.05f, 0.05f, 0.1f, 0.1f, 0.1f, 0.1f, 0.15f, 0.15f, 0.2f};
		static const float lm_wd[] = {0.01f, 0.01f, 0.01f, 0.01f, 0.01f, 0.01f, 0.01f, 0.05f, 0.05f, 0.1f};

		for (size_t i = 0; i < sizeof(lm_passes) / sizeof(lm_passes[0]); i++)
		{
			float		d = -1.0f,
						w = -1.0f;

			tfm_train_regularisation(TFM_TASK_LM, lm_passes[i], &d, &w);
			CHECK(d == lm_dropout[i] && w == lm_wd[i], "lm, %g passes: dropout %g weight decay %g, want %g %g",
				  lm_passes[i], d, w, lm_dropout[i], lm_wd[i]);
		}
	}
}

int
main(void)
{
	test_val_fraction();
	test_recipe();
	test_regularisation();
	return check_summary("test_train_plan");
}
