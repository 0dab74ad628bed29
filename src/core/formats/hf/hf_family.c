/*
 * hf_family.c — what every family of Hugging Face architectures builds
 * with (hf_family.h): the part of a tfm_config all set alike and the
 * entries of a checkpoint's table of tensors
 * (one tensor, a layer's, an nn.Linear's weight and bias, the output
 * projection).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hf_family.h"

void
hf_base_config(tfm_config *cfg, const tfm_hf_params *p, tfm_task task)
{
	tfm_config_defaults(cfg, task);
	cfg->vocab = p->vocab;
	cfg->d_model = p->d_model;
	cfg->heads = p->heads;
	cfg->d_ff = p->d_ff;
	cfg->max_len = p->max_len;
	cfg->tie = p->tie;
	cfg->scale_embeddings = 0;
	cfg->dropout = p->dropout;
	cfg->attn_dropout = p->attn_dropout;
	cfg->ln_eps = p->ln_eps;
	/* the stacks: a language model's decoder, a classifier's encoder, or both */
	cfg->enc_layers = task == TFM_TASK_LM ? 0 : p->layers;
	cfg->dec_layers = task == TFM_TASK_LM ? p->layers : task == TFM_TASK_SEQ2SEQ ? p->dec_layers : 0;
}

tfm_hf_entry *
hf_add(hf_builder *b, const char *name, bool prefixable, tfm_hf_use use, const char *target,
	   int ndim, int64_t d0, int64_t d1, int64_t d2, int64_t d3)
{
	tfm_hf_entry *e;

	if (b->failed)
		return NULL;
	if (b->map->n == b->cap)
	{
		int			cap = b->cap ? 2 * b->cap : 64;
		tfm_hf_entry *ne = realloc(b->map->entries, sizeof(tfm_hf_entry) * cap);

		if (!ne)
		{
			b->failed = true;
			return NULL;
		}
		b->map->entries = ne;
		b->cap = cap;
	}
	e = &b->map->entries[b->map->n++];
	memset(e, 0, sizeof(*e));
	snprintf(e->name, sizeof(e->name), "%s", name);
	snprintf(e->target, sizeof(e->target), "%s", target);
	e->prefixable = prefixable;
	e->required = use != TFM_HF_BUFFER && use != TFM_HF_TIED && use != TFM_HF_SHARED;
	e->use = use;
	e->ndim = ndim;
	e->dims[0] = d0;
	e->dims[1] = d1;
	e->dims[2] = d2;
	e->dims[3] = d3;
	return e;
}

void
hf_add_layer(hf_builder *b, const char *hfl, int i, const char *hf, const char *tfl, const char *tf,
			 tfm_hf_use use, int ndim, int64_t d0, int64_t d1, int64_t col0)
{
	char		n[96],
				t[48];
	tfm_hf_entry *e;

	snprintf(n, sizeof(n), "%s.%d.%s", hfl, i, hf);
	snprintf(t, sizeof(t), "%s.%d.%s", tfl, i, tf);
	e = hf_add(b, n, true, use, t, ndim, d0, d1, 0, 0);
	if (e)
		e->col0 = col0;
}

void
hf_add_linear(hf_builder *b, const char *hf, bool prefixable, const char *tf, int64_t out, int64_t in)
{
	char		n[96],
				t[48];

	snprintf(n, sizeof(n), "%s.weight", hf);
	snprintf(t, sizeof(t), "%s.w", tf);
	hf_add(b, n, prefixable, TFM_HF_TRANSPOSE, t, 2, out, in, 0, 0);
	snprintf(n, sizeof(n), "%s.bias", hf);
	snprintf(t, sizeof(t), "%s.b", tf);
	hf_add(b, n, prefixable, TFM_HF_COPY, t, 1, out, 0, 0, 0);
}

void
hf_add_lm_head(hf_builder *b, const tfm_config *c)
{
	if (c->tie)
		hf_add(b, "lm_head.weight", false, TFM_HF_TIED, "tok_emb", 2, c->vocab, c->d_model, 0, 0);
	else
		hf_add(b, "lm_head.weight", false, TFM_HF_TRANSPOSE, "out.w", 2, c->vocab, c->d_model, 0, 0);
}
