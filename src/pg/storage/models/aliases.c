/*
 * aliases.c — deployment aliases' rows (tfm.aliases, tfm.alias_history:
 * sql/models/deploy.c says what they mean), and the checks on names that models
 * and aliases share (one namespace): does a row of this name exist in
 * tfm.models or tfm.aliases, and is a new model's name valid and not taken
 * by an alias.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"

#include "storage/storage.h"
#include "storage/models/models.h"

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

void
tfm_check_model_from(const char *action, const char *name, const char *new_name)
{
	tfm_check_new_model_name(new_name);
	tfm_check_writable(action, name);
}

bool
tfm_alias_lock(const char *alias, TfmAliasRow *a)
{
	TfmOwnerRow r;
	bool		isnull;

	if (tfm_owner_row_read(&r, "SELECT id, model_id, coalesce(history_id, 0), owner, "
						   "'{}'::regrole[], acl_train FROM tfm.aliases WHERE name = $1 FOR UPDATE",
						   1, (Oid[]) {TEXTOID}, (Datum[]) {CStringGetTextDatum(alias)}, false,
						   "cannot read tfm.aliases"))
	{
		a->id = DatumGetInt32(tfm_owner_row_col(&r, 1, &isnull));
		a->model_id = DatumGetInt32(tfm_owner_row_col(&r, 2, &isnull));
		a->history_id = DatumGetInt64(tfm_owner_row_col(&r, 3, &isnull));
		tfm_acl_from_tuple(&a->acl, r.tup, r.td, 4, r.cxt);
	}
	tfm_owner_row_end(&r);
	return r.tup != NULL;
}

int64
tfm_alias_history_add(const char *alias, int32 model_id, int64 previous, const char *action)
{
	Oid			types[4] = {TEXTOID, INT4OID, INT8OID, TEXTOID};
	Datum		args[4] = {CStringGetTextDatum(alias), Int32GetDatum(model_id),
	Int64GetDatum(previous), CStringGetTextDatum(action)};
	char		nulls[5] = "    ";
	TfmAsOwner	as;
	bool		isnull;
	int64		id;
	Oid			who = GetUserId();

	if (previous == 0)
		nulls[2] = 'n';
	tfm_spi_connect_owner(&as);
	if (SPI_execute_with_args(psprintf("INSERT INTO tfm.alias_history (alias, model_id, model, previous, action, by_role) "
									   "SELECT $1, $2, m.name, $3, $4, %u::oid::regrole FROM tfm.models m WHERE m.id = $2 "
									   "RETURNING id", who),
							  4, types, args, nulls, false, 1) != SPI_OK_INSERT_RETURNING ||
		SPI_processed != 1)
		elog(ERROR, "cannot write tfm.alias_history");
	id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	tfm_spi_finish_owner(&as);
	return id;
}

bool
tfm_alias_history_previous(int64 history_id, int32 *model_id, int64 *previous,
						   char **model, bool *model_gone)
{
	TfmOwnerRow r;
	bool		isnull;

	if (tfm_owner_row_read(&r, "SELECT p.model_id, coalesce(p.previous, 0), "
						   "coalesce(m.name, p.model), m.id IS NULL "
						   "FROM tfm.alias_history c JOIN tfm.alias_history p ON p.id = c.previous "
						   "LEFT JOIN tfm.models m ON m.id = p.model_id WHERE c.id = $1",
						   1, (Oid[]) {INT8OID}, (Datum[]) {Int64GetDatum(history_id)}, false,
						   "cannot read tfm.alias_history"))
	{
		Datum		d = tfm_owner_row_col(&r, 1, &isnull);

		*model_id = isnull ? 0 : DatumGetInt32(d);
		*previous = DatumGetInt64(tfm_owner_row_col(&r, 2, &isnull));
		*model = MemoryContextStrdup(r.cxt, TextDatumGetCString(tfm_owner_row_col(&r, 3, &isnull)));
		*model_gone = DatumGetBool(tfm_owner_row_col(&r, 4, &isnull));
	}
	tfm_owner_row_end(&r);
	return r.tup != NULL;
}

void
tfm_alias_point(const char *alias, bool exists, int32 model_id, int64 history_id)
{
	Oid			types[3] = {TEXTOID, INT4OID, INT8OID};
	Datum		args[3] = {CStringGetTextDatum(alias), Int32GetDatum(model_id), Int64GetDatum(history_id)};

	if (exists)
		tfm_spi_exec_owner("UPDATE tfm.aliases SET model_id = $2, history_id = $3, "
						   "deployed_at = now() WHERE name = $1",
						   3, types, args, NULL, false, 0, SPI_OK_UPDATE,
						   "cannot write tfm.aliases");
	else
		tfm_spi_exec_owner(psprintf("INSERT INTO tfm.aliases (name, model_id, history_id, owner) "
						   "VALUES ($1, $2, $3, %u::oid::regrole)", GetUserId()),
						   3, types, args, NULL, false, 0, SPI_OK_INSERT,
						   "cannot write tfm.aliases");
}

void
tfm_alias_delete(const char *alias)
{
	Oid			types[1] = {TEXTOID};
	Datum		args[1] = {CStringGetTextDatum(alias)};

	tfm_spi_exec_owner("DELETE FROM tfm.aliases WHERE name = $1", 1, types, args,
					   NULL, false, 0, SPI_OK_DELETE, "cannot delete from tfm.aliases");
}
