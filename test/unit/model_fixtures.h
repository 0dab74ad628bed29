/*
 * model_fixtures.h — the PyTorch fixture models the core's model tests share
 * (test/reference/torch_reference.py writes them): their file names, and
 * their configuration read into a tfm_config; and a whole model's gradients
 * checked by finite differences.  Include after check.h.
 */
#ifndef TFM_TEST_MODEL_FIXTURES_H
#define TFM_TEST_MODEL_FIXTURES_H

#include <stdio.h>
#include <string.h>

#include "tfm/model.h"

static const char *fixtures[] __attribute__((unused)) = {
	"classify_post_mean.bin", "classify_pre_cls_gelu_sin.bin",
	"lm_pre_gelu.bin", "lm_post_relu_untied.bin",
	"seq2seq.bin", "seq2seq_pre_learned.bin",
};

static void
config_from_fixture(tfm_config *c, const fixture *fx)
{
	memset(c, 0, sizeof(*c));
#define F(field) c->field = fixture_int(fx, "config." #field)
	F(task); F(vocab); F(tgt_vocab); F(d_model); F(heads); F(enc_layers);
	F(dec_layers); F(d_ff); F(max_len); F(n_classes); F(norm); F(positions);
	F(activation); F(pooling); F(tie); F(scale_embeddings); F(pad_id);
#undef F
}

/*
 * Every gradient of a model on a batch against central finite differences
 * (check_fd, at most points elements a tensor): one training pass fills the
 * gradients, each loss a forward pass; what names the model in messages.
 */
typedef struct model_fd_ctx
{
	tfm_model  *m;
	const tfm_batch *b;
} model_fd_ctx;

static double
model_fd_loss(void *p)
{
	model_fd_ctx *c = p;
	int			count;

	tfm_model_forward(c->m, c->b, false, 0);
	return tfm_model_loss_backward(c->m, c->b, 0.0f, false, 1.0f, &count);
}

static void
check_model_fd(tfm_model *m, const tfm_batch *b, const char *what, size_t points, double h,
			   double atol, double rtol)
{
	model_fd_ctx c = {m, b};
	int			count;

	CHECK(tfm_model_forward(m, b, true, 0) == 0, "%s: forward", what);
	tfm_model_zero_grad(m);
	tfm_model_loss_backward(m, b, 0.0f, true, 1.0f, &count);
	for (int i = 0; i < m->n_tensors; i++)
	{
		char		name[128];

		snprintf(name, sizeof(name), "%s %s", what, m->info[i].name);
		check_fd(name, model_fd_loss, &c, m->params + m->info[i].offset,
				 m->grads + m->info[i].offset, m->info[i].size, points, h, atol, rtol);
	}
}

#endif							/* TFM_TEST_MODEL_FIXTURES_H */
