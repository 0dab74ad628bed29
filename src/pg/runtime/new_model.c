/*
 * new_model.c — a model made from a config (tfm_create_model): its size
 * and specials checked before any memory is taken, its row in tfm.models,
 * then its initial weights.
 */
#include "postgres.h"

#include "tfm/truncate.h"
#include "runtime/rows.h"
#include "runtime/runtime.h"
#include "runtime/new_model.h"
#include "runtime/cache/tokenizer_cache.h"
#include "storage/models/models.h"

/* a config's JSON object with one more member */
static char *
config_with(const char *json, const char *member)
{
	return psprintf("%.*s, %s}", (int) strlen(json) - 1, json, member);
}

int64
tfm_model_create_stored(TfmNewModel *nm, const tfm_config *c, uint64 seed)
{
	int64		n_params = tfm_config_params(c);
	TfmModelRow row;
	tfm_model  *m;

	tfm_check_max_parameters(n_params, nm->name);
	{
		TfmModelRow probe;
		TfmSpecials sp;

		memset(&probe, 0, sizeof(probe));
		strlcpy(probe.name, nm->name, sizeof(probe.name));
		probe.tokenizer = unconstify(char *, nm->tokenizer);
		probe.target_tokenizer = unconstify(char *, nm->target_tokenizer);
		probe.bos_id = probe.eos_id = -1;
		probe.cfg = *c;
		tfm_model_specials(&probe, &sp);
	}
	nm->config_json = tfm_config_json(c);
	if (nm->dropout_auto)
		nm->config_json = config_with(nm->config_json, "\"dropout_auto\": true");
	if (nm->truncation >= 0)
		nm->config_json = config_with(nm->config_json,
									  psprintf("\"truncation\": \"%s\"",
											   tfm_truncation_name(nm->truncation)));
	nm->parameters = n_params;
	memset(&row, 0, sizeof(row));
	row.bos_id = row.eos_id = -1;
	tfm_model_insert(nm, &row);
	strlcpy(row.name, nm->name, sizeof(row.name));
	row.cfg = *c;

	/* initial weights */
	m = tfm_model_new(c, nm->name, seed);
	tfm_catalog_save(&row, m, 0);
	return (int64) m->n_params;
}

/* a new model of config c for model name, guarded, initialised from seed */
tfm_model *
tfm_model_new_blank(const tfm_config *c, const char *name)
{
	tfm_model  *m;

	tfm_backend_ready();
	m = tfm_model_create(c);
	if (!m)
		tfm_raise_code(TFM_ENOMEM, "out of memory creating model \"%s\"", name);
	tfm_guard_model(m);
	m->poll = tfm_poll_interrupts;	/* a cancel or statement_timeout ends a long init */
	return m;
}

tfm_model *
tfm_model_new(const tfm_config *c, const char *name, uint64 seed)
{
	tfm_model  *m = tfm_model_new_blank(c, name);

	tfm_model_init(m, seed);
	return m;
}
