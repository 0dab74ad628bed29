/*
 * hf_load.h — a Hugging Face safetensors buffer loaded into a new tfm
 * model through tfm/hf_map.h's table, as the SQL import walks it, for
 * the unit tests of the mappings (test_hf_import, test_hf_marian,
 * test_hf_bert).
 */
#ifndef TFM_TEST_HF_LOAD_H
#define TFM_TEST_HF_LOAD_H

#include <stdio.h>
#include <string.h>

#include "tfm/hf_map.h"
#include "tfm/hf_import.h"
#include "tfm/model.h"

/*
 * The model the params make (initialised with seed 1, so what the file
 * lacks, a new classifier head, has values), its tensors from buf (len
 * bytes); tensors whose name contains skip (if not NULL) are left out.
 * NULL and err set on failure.
 */
static tfm_model *
hf_load(const uint8_t *buf, size_t len, const tfm_hf_params *p, const char *skip, char *err,
		size_t errlen)
{
	tfm_config	c;
	tfm_model  *m;
	tfm_hf_map *map;
	tfm_st_file *f;
	tfm_status	se;
	const char *bad = tfm_hf_config(&c, p);

	if (bad)
	{
		snprintf(err, errlen, "%s", bad);
		return NULL;
	}
	if (tfm_st_parse(&f, buf, len, &se) != TFM_OK)
	{
		snprintf(err, errlen, "%s", se.msg);
		return NULL;
	}
	m = tfm_model_create(&c);
	tfm_model_init(m, 1);
	map = tfm_hf_map_create(p->arch, &c);
	for (size_t i = 0; i < f->n_tensors; i++)
	{
		const tfm_st_tensor *t = &f->tensors[i];
		tfm_hf_entry *e;

		if (skip && strstr(t->name, skip))
			continue;
		e = tfm_hf_match(map, t->name, t->name_len);
		if (!e)
		{
			snprintf(err, errlen, "unexpected tensor \"%s\"", t->name);
			goto fail;
		}
		if (tfm_hf_load_tensor(m, map, e, t, buf + f->data_start + t->begin, err, errlen) != 0)
			goto fail;
	}
	if (tfm_hf_finish(m, map, err, errlen) != 0)
		goto fail;
	tfm_hf_map_free(map);
	tfm_st_free(f);
	return m;
fail:
	tfm_hf_map_free(map);
	tfm_st_free(f);
	tfm_model_free(m);
	return NULL;
}

#endif							/* TFM_TEST_HF_LOAD_H */
