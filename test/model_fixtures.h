/*
 * model_fixtures.h — the PyTorch fixture models the core's model tests share
 * (test/reference/torch_reference.py writes them): their file names, and
 * their configuration read into a tfm_config.  Include after check.h.
 */
#ifndef TFM_TEST_MODEL_FIXTURES_H
#define TFM_TEST_MODEL_FIXTURES_H

#include <string.h>

#include "tfm/model.h"

static const char *fixtures[] = {
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

#endif							/* TFM_TEST_MODEL_FIXTURES_H */
