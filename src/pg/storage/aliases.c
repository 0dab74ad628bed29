/*
 * aliases.c — the checks on names that models and deployment aliases
 * share (one namespace): does a row of this name exist in tfm.models or
 * tfm.aliases, and is a new model's name valid and not taken by an alias.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"

#include "storage/storage.h"

/* is there a row of this name in a catalog table (tfm.models, tfm.aliases)? */
bool
tfm_catalog_has(const char *table, const char *name)
{
	Oid			types[1] = {TEXTOID};
	Datum		args[1] = {CStringGetTextDatum(name)};
	TfmAsOwner	as;
	bool		found;

	tfm_spi_connect_owner(&as);
	/* read-only: tfm_classify(text) may ask from a parallel worker */
	if (SPI_execute_with_args(psprintf("SELECT 1 FROM %s WHERE name = $1", table), 1, types, args,
							  NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "cannot read %s", table);
	found = SPI_processed > 0;
	tfm_spi_finish_owner(&as);
	return found;
}

void
tfm_check_not_alias(const char *name)
{
	if (tfm_catalog_has("tfm.aliases", name))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("\"%s\" is already the name of a deployment alias", name),
				 errdetail("Models and aliases share one namespace."),
				 errhint("Choose another name, or drop the alias with tfm_undeploy('%s').", name)));
}

/* a new model's name: valid, and not an alias's */
void
tfm_check_new_model_name(const char *name)
{
	tfm_check_new_name("model", name);
	tfm_check_not_alias(name);
}
