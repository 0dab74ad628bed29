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

#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"

#include "base/pg_compat.h"
#include "sql/args.h"
#include "runtime/cache/model_cache.h"
#include "storage/models/models.h"

/* the database's owner (and superusers) may act on any alias */
static bool
is_database_owner(void)
{
	return object_ownercheck(DatabaseRelationId, MyDatabaseId, GetUserId());
}

static void
check_alias_rights(const char *alias, const TfmAliasRow *a, const char *action)
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

/* an alias that must exist, locked, with the rights for what (after the writable check for action) */
static void
lock_existing_alias(const char *alias, const char *action, const char *what, TfmAliasRow *a)
{
	tfm_check_writable(action, alias);
	if (!tfm_alias_lock(alias, a))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("alias \"%s\" does not exist", alias)));
	check_alias_rights(alias, a, what);
	tfm_check_local("alias", a->id, action, alias);
}

PG_FUNCTION_INFO_V1(tfm_deploy);
Datum
tfm_deploy(PG_FUNCTION_ARGS)
{
	char	   *name = tfm_text_arg(fcinfo, 0, "model");
	char	   *alias = alias_arg(fcinfo, 1);
	TfmModelRow row;
	TfmAliasRow a;
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
	exists = tfm_alias_lock(alias, &a);
	if (exists)
	{
		check_alias_rights(alias, &a, "replace");
		tfm_check_local("alias", a.id, "replace", alias);
	}
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
	h = tfm_alias_history_add(alias, row.id, exists ? a.history_id : 0, "deploy");
	tfm_alias_point(alias, exists, row.id, h);
	PG_RETURN_TEXT_P(cstring_to_text(psprintf("alias \"%s\" deploys model \"%s\"", alias, row.name)));
}

PG_FUNCTION_INFO_V1(tfm_rollback);
Datum
tfm_rollback(PG_FUNCTION_ARGS)
{
	char	   *alias = alias_arg(fcinfo, 0);
	TfmAliasRow a;
	bool		model_gone;
	int32		model_id = 0;
	int64		before = 0,
				h;
	char	   *model;

	lock_existing_alias(alias, "roll back", "roll back", &a);
	/* the entry the current one replaced */
	if (!tfm_alias_history_previous(a.history_id, &model_id, &before, &model, &model_gone))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("alias \"%s\" has no earlier deployment to roll back to", alias)));
	if (model_gone)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("model \"%s\", which alias \"%s\" deployed before, was dropped", model, alias)));
	{
		TfmModelRow row;

		tfm_catalog_lookup(model, &row, false);
		tfm_check_model_privilege(&row, TFM_PRIV_USE);
	}
	h = tfm_alias_history_add(alias, model_id, before, "rollback");
	tfm_alias_point(alias, true, model_id, h);
	PG_RETURN_TEXT_P(cstring_to_text(psprintf("alias \"%s\" deploys model \"%s\" again", alias, model)));
}

PG_FUNCTION_INFO_V1(tfm_undeploy);
Datum
tfm_undeploy(PG_FUNCTION_ARGS)
{
	char	   *alias = alias_arg(fcinfo, 0);
	TfmAliasRow a;

	lock_existing_alias(alias, "undeploy", "drop", &a);
	tfm_alias_delete(alias);
	PG_RETURN_VOID();
}
