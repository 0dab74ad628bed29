/*
 * deploy.c — deployments as named aliases that belong to someone.
 *
 *   tfm_deploy(model, alias DEFAULT 'default')   point an alias at a model
 *   tfm_rollback(alias)                           back to the model before
 *   tfm_undeploy(alias)                           drop the alias
 *
 * An alias (tfm.aliases) names a model wherever a model name is taken
 * (tfm_catalog_lookup resolves it); tfm_classify(text) resolves 'default'.
 * Using a model through an alias needs use on the model itself.  Whoever
 * creates an alias owns it; replacing, rolling back or dropping it needs
 * its owner's rights (or a train grant on it: tfm_grant(alias, role,
 * 'train', 'alias')), and so does creating the alias 'default', which
 * belongs to the database: only its owner (or a superuser) may create it.
 * Aliases and models share one namespace.  Every change is a row of
 * tfm.alias_history whose previous column names the entry it replaced, so
 * rollback walks back one deployment at a time.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"

#include "sql/args.h"

typedef struct TfmAlias
{
	int32		id;
	int32		model_id;
	int64		history_id;		/* the current entry; 0 if none */
	TfmAcl		acl;
} TfmAlias;

/* the alias row, locked for update; false if there is none */
static bool
alias_lock(const char *alias, TfmAlias *a)
{
	Oid			types[1] = {TEXTOID};
	Datum		args[1] = {CStringGetTextDatum(alias)};
	MemoryContext cxt = CurrentMemoryContext;
	TfmAsOwner	as;
	bool		found,
				isnull;

	tfm_spi_connect_owner(&as);
	if (SPI_execute_with_args("SELECT id, model_id, coalesce(history_id, 0), owner, "
							  "'{}'::regrole[], acl_train FROM tfm.aliases WHERE name = $1 FOR UPDATE",
							  1, types, args, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "cannot read tfm.aliases");
	found = SPI_processed > 0;
	if (found)
	{
		HeapTuple	tup = SPI_tuptable->vals[0];
		TupleDesc	td = SPI_tuptable->tupdesc;

		a->id = DatumGetInt32(SPI_getbinval(tup, td, 1, &isnull));
		a->model_id = DatumGetInt32(SPI_getbinval(tup, td, 2, &isnull));
		a->history_id = DatumGetInt64(SPI_getbinval(tup, td, 3, &isnull));
		tfm_acl_from_tuple(&a->acl, tup, td, 4, cxt);
	}
	tfm_spi_finish_owner(&as);
	return found;
}

/* the database's owner (and superusers) may act on any alias */
static bool
is_database_owner(void)
{
	return pg_database_ownercheck(MyDatabaseId, GetUserId());
}

static void
check_alias_rights(const char *alias, const TfmAlias *a, const char *action)
{
	if (tfm_acl_allows(&a->acl, TFM_PRIV_TRAIN, GetUserId()) || is_database_owner())
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("permission denied to %s alias \"%s\"", action, alias),
			 errdetail("Only its owner, roles granted train on it, and the database's owner may change an alias."),
			 errhint("The owner can grant it with tfm_grant('%s', role, 'train', 'alias').", alias)));
}

static char *
alias_arg(FunctionCallInfo fcinfo, int n)
{
	char	   *alias = tfm_text_arg(fcinfo, n, "alias");

	tfm_check_new_name("alias", alias);
	return alias;
}

/* a row of tfm.alias_history; returns its id */
static int64
record(const char *alias, int32 model_id, int64 previous, const char *action)
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

/* point the alias at a model: an UPDATE of the locked row or a new alias */
static void
point(const char *alias, bool exists, int32 model_id, int64 history_id)
{
	Oid			types[3] = {TEXTOID, INT4OID, INT8OID};
	Datum		args[3] = {CStringGetTextDatum(alias), Int32GetDatum(model_id), Int64GetDatum(history_id)};
	TfmAsOwner	as;
	Oid			who = GetUserId();
	int			rc;

	tfm_spi_connect_owner(&as);
	if (exists)
		rc = SPI_execute_with_args("UPDATE tfm.aliases SET model_id = $2, history_id = $3, "
								   "deployed_at = now() WHERE name = $1",
								   3, types, args, NULL, false, 0);
	else
		rc = SPI_execute_with_args(psprintf("INSERT INTO tfm.aliases (name, model_id, history_id, owner) "
											"VALUES ($1, $2, $3, %u::oid::regrole)", who),
								   3, types, args, NULL, false, 0);
	if (rc != (exists ? SPI_OK_UPDATE : SPI_OK_INSERT))
		elog(ERROR, "cannot write tfm.aliases");
	tfm_spi_finish_owner(&as);
}

PG_FUNCTION_INFO_V1(tfm_deploy);
Datum
tfm_deploy(PG_FUNCTION_ARGS)
{
	char	   *name = tfm_text_arg(fcinfo, 0, "model");
	char	   *alias = alias_arg(fcinfo, 1);
	TfmModelRow row;
	TfmAlias		a;
	bool		exists;
	int64		h;

	tfm_check_writable("deploy", name);
	tfm_catalog_lookup(name, &row, false);
	/* callers of the alias need use on the model too; deploying needs no more */
	tfm_check_model_privilege(&row, TFM_PRIV_USE);
	if (tfm_catalog_has("tfm.models", alias))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("\"%s\" is the name of a model, so it cannot be an alias", alias),
				 errdetail("Models and aliases share one namespace.")));
	exists = alias_lock(alias, &a);
	if (exists)
		check_alias_rights(alias, &a, "replace");
	else if (strcmp(alias, TFM_DEFAULT_ALIAS) == 0 && !is_database_owner())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("only the database's owner may create the alias \"%s\"", TFM_DEFAULT_ALIAS),
				 errdetail("tfm_classify(text) of every role answers with the model deployed as \"%s\".",
						   TFM_DEFAULT_ALIAS),
				 errhint("Deploy under an alias of your own: tfm_deploy('%s', 'my_alias').", name)));
	if (exists && a.model_id == row.id)
		PG_RETURN_TEXT_P(cstring_to_text(psprintf("alias \"%s\" already deploys model \"%s\"",
												  alias, row.name)));
	h = record(alias, row.id, exists ? a.history_id : 0, "deploy");
	point(alias, exists, row.id, h);
	PG_RETURN_TEXT_P(cstring_to_text(psprintf("alias \"%s\" deploys model \"%s\"", alias, row.name)));
}

PG_FUNCTION_INFO_V1(tfm_rollback);
Datum
tfm_rollback(PG_FUNCTION_ARGS)
{
	char	   *alias = alias_arg(fcinfo, 0);
	Oid			types[1] = {INT8OID};
	Datum		args[1];
	TfmAsOwner	as;
	TfmAlias		a;
	bool		isnull;
	bool		model_gone;
	int32		model_id = 0;
	int64		before = 0,
				h;
	char	   *model;
	MemoryContext cxt = CurrentMemoryContext;

	tfm_check_writable("roll back", alias);
	if (!alias_lock(alias, &a))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("alias \"%s\" does not exist", alias)));
	check_alias_rights(alias, &a, "roll back");
	/* the entry the current one replaced */
	args[0] = Int64GetDatum(a.history_id);
	tfm_spi_connect_owner(&as);
	if (SPI_execute_with_args("SELECT p.model_id, coalesce(p.previous, 0), "
							  "coalesce(m.name, p.model), m.id IS NULL "
							  "FROM tfm.alias_history c JOIN tfm.alias_history p ON p.id = c.previous "
							  "LEFT JOIN tfm.models m ON m.id = p.model_id WHERE c.id = $1",
							  1, types, args, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "cannot read tfm.alias_history");
	if (SPI_processed == 0)
	{
		tfm_spi_finish_owner(&as);
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("alias \"%s\" has no earlier deployment to roll back to", alias)));
	}
	{
		HeapTuple	tup = SPI_tuptable->vals[0];
		TupleDesc	td = SPI_tuptable->tupdesc;
		Datum		d = SPI_getbinval(tup, td, 1, &isnull);

		model_id = isnull ? 0 : DatumGetInt32(d);
		before = DatumGetInt64(SPI_getbinval(tup, td, 2, &isnull));
		model = MemoryContextStrdup(cxt, TextDatumGetCString(SPI_getbinval(tup, td, 3, &isnull)));
		model_gone = DatumGetBool(SPI_getbinval(tup, td, 4, &isnull));
	}
	tfm_spi_finish_owner(&as);
	if (model_gone)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("model \"%s\", which alias \"%s\" deployed before, was dropped", model, alias)));
	{
		TfmModelRow row;

		tfm_catalog_lookup(model, &row, false);
		tfm_check_model_privilege(&row, TFM_PRIV_USE);
	}
	h = record(alias, model_id, before, "rollback");
	point(alias, true, model_id, h);
	PG_RETURN_TEXT_P(cstring_to_text(psprintf("alias \"%s\" deploys model \"%s\" again", alias, model)));
}

PG_FUNCTION_INFO_V1(tfm_undeploy);
Datum
tfm_undeploy(PG_FUNCTION_ARGS)
{
	char	   *alias = alias_arg(fcinfo, 0);
	Oid			types[1] = {TEXTOID};
	Datum		args[1] = {CStringGetTextDatum(alias)};
	TfmAsOwner	as;
	TfmAlias		a;

	tfm_check_writable("undeploy", alias);
	if (!alias_lock(alias, &a))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("alias \"%s\" does not exist", alias)));
	check_alias_rights(alias, &a, "drop");
	tfm_spi_connect_owner(&as);
	if (SPI_execute_with_args("DELETE FROM tfm.aliases WHERE name = $1", 1, types, args,
							  NULL, false, 0) != SPI_OK_DELETE)
		elog(ERROR, "cannot delete from tfm.aliases");
	tfm_spi_finish_owner(&as);
	PG_RETURN_VOID();
}
