/*
 * hf_import.c — the Hugging Face import's two entry points that look an
 * architecture up in the table (hf_arch_table.c) and hand over to its
 * family: tfm_hf_config (the checks of hf_config.c, then the family's
 * config) and tfm_hf_map_create (the family's table of tensors, checked and
 * loaded by hf_map.c).  See tfm/hf_import.h.
 */
#include <stdbool.h>
#include <stdlib.h>

#include "tfm/hf_import.h"
#include "hf_arch_table.h"

const char *
tfm_hf_config(tfm_config *cfg, const tfm_hf_params *p)
{
	const hf_arch_row *row = hf_arch_find(p->arch);
	const char *bad;

	if (!row)
		return "unknown architecture";
	if ((bad = tfm_hf_check_params(p, row->family->keys)) != NULL)
		return bad;
	row->family->config(cfg, p);
	return tfm_config_check(cfg);
}

tfm_hf_map *
tfm_hf_map_create(tfm_hf_arch arch, const tfm_config *cfg)
{
	hf_builder	b = {0};
	const hf_arch_row *row;

	b.map = calloc(1, sizeof(tfm_hf_map));
	if (!b.map)
		return NULL;
	b.map->arch = arch;
	if ((row = hf_arch_find(arch)) != NULL)
	{
		b.map->prefix = row->prefix;
		row->family->entries(&b, cfg);
	}
	b.map->seen = calloc(b.map->n + 1, sizeof(bool));
	if (b.failed || !b.map->seen)
	{
		tfm_hf_map_free(b.map);
		return NULL;
	}
	return b.map;
}
