/*
 * gguf_keep.h — a GGUF file imported into a new model as the SQL import
 * does it (tfm_gguf_check, tfm_gguf_load per tensor, tfm_hf_finish), with
 * the blocks tfm_gguf_kept_place places kept as runtime/cache/gguf_kept.c
 * keeps them, for test_gguf.c and test_gguf_kept.c.
 */
#ifndef TFM_TEST_GGUF_KEEP_H
#define TFM_TEST_GGUF_KEEP_H

#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "tfm/gguf.h"
#include "tfm/gguf_quants.h"
#include "tfm/hf_config.h"
#include "tfm/hf_map.h"
#include "tfm/hf_import.h"
#include "tfm/precision.h"

/*
 * The blocks of f (in buf) that tfm_gguf_kept_place places in m given
 * to it, as src/pg/runtime/gguf_kept.c does (q and k rows back in Hugging
 * Face's order): the columns kept
 */
static long
keep_blocks(tfm_model *m, tfm_hf_map *map, const tfm_hf_params *p, const tfm_gguf_file *f,
			const uint8_t *buf)
{
	tfm_int4_kept *k = calloc(f->n_tensors + 1, sizeof(tfm_int4_kept));
	int			n = 0,
				heads;

	for (uint64_t i = 0; i < f->n_tensors; i++)
		/* and, for lookups only, the rows of a table no matrix runs (rows_only) */
		if (tfm_gguf_kept_place(&k[n], &heads, m, map, p, &f->tensors[i]) ||
			((heads = 0) == 0 && tfm_gguf_rows_place(&k[n], m, map, p, &f->tensors[i])))
		{
			const tfm_gguf_tensor *t = &f->tensors[i];
			uint8_t    *b = malloc(t->bytes);

			if (heads)
				tfm_gguf_unpermute_rows(b, buf + f->data_start + t->offset, t->ne[1],
										t->bytes / t->ne[1], heads);
			else
				memcpy(b, buf + f->data_start + t->offset, t->bytes);
			k[n++].blocks = b;
		}
	CHECK(tfm_model_keep_int4(m, k, n) == 0, "tfm_model_keep_int4");
	for (int i = 0; i < n; i++)
		free((void *) k[i].blocks);
	free(k);
	return tfm_model_int4_kept_columns(m);
}

/* a GGUF file imported as a llama: the model, or NULL with st's message */
static tfm_model *
import_gguf_keep(const uint8_t *buf, size_t len, tfm_hf_params *p, tfm_status *st, bool keep)
{
	tfm_gguf_file *f;
	tfm_config	c;
	tfm_model  *m = NULL;
	tfm_hf_map *map = NULL;
	int64_t		capped;
	const char *bad;
	char		err[512];

	if (tfm_gguf_parse(&f, buf, len, len, st) != 0)
		return NULL;
	if (tfm_gguf_params(p, &capped, f, st) != 0)
		goto out;
	if ((bad = tfm_hf_config(&c, p)) != NULL)
	{
		tfm_status_set(st, TFM_EBADFILE, "%s", bad);
		goto out;
	}
	map = tfm_hf_map_create(p->arch, &c);
	if (tfm_gguf_check(map, p, f, st) != 0)
		goto out;
	m = tfm_model_create(&c);
	for (uint64_t i = 0; i < f->n_tensors; i++)
		if (tfm_gguf_load(m, map, p, &f->tensors[i],
								buf + f->data_start + f->tensors[i].offset, st) != 0)
			goto fail;
	if (tfm_hf_finish(m, map, err, sizeof(err)) != 0)
	{
		tfm_status_set(st, TFM_EBADFILE, "%s", err);
		goto fail;
	}
	if (keep)
		keep_blocks(m, map, p, f, buf);
	goto out;
fail:
	tfm_model_free(m);
	m = NULL;
out:
	tfm_hf_map_free(map);
	tfm_gguf_free(f);
	return m;
}

/* the layers' float32 matrices (not the embedding table) scaled: what the
 * kept blocks run must not move with them */
static void
scale_matrices(tfm_model *m, float by)
{
	for (int i = 0; i < m->n_tensors; i++)
		if (m->info[i].ndim == 2 && strncmp(m->info[i].name, "dec.", 4) == 0)
			for (size_t j = 0; j < m->info[i].size; j++)
				m->params[m->info[i].offset + j] *= by;
}

#endif							/* TFM_TEST_GGUF_KEEP_H */
