/*
 * grant.c — tfm_grant, tfm_revoke and tfm_rename_model: the owner's
 * rights over a model, tokenizer or deployment alias (see storage/access.c for the
 * rules, deploy.c for aliases).
 *
 *   tfm_grant(object, grantee, privilege DEFAULT 'use', object_type DEFAULT NULL)
 *   tfm_revoke(object, grantee, privilege DEFAULT 'use', object_type DEFAULT NULL)
 *
 * object names a model, else a tokenizer, else an alias (object_type
 * 'model', 'tokenizer' or 'alias' says which when names are shared; an
 * alias takes only train);
 * grantee is a role name or PUBLIC.  Revoking use also revokes train (train
 * implies use); revoking what was never granted is an error.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"

#include "sql/args.h"
#include "runtime/cache/model_cache.h"
#include "storage/models/models.h"
#include "storage/roles/roles.h"

static TfmPriv
priv_arg(FunctionCallInfo fcinfo, int n)
{
	char	   *p = tfm_text_arg(fcinfo, n, "privilege");
	bool		use = pg_strcasecmp(p, "use") == 0;

	if (!use && pg_strcasecmp(p, "train") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unrecognized privilege \"%s\"", p),
				 errhint("The privileges are use and train.")));
	return use ? TFM_PRIV_USE : TFM_PRIV_TRAIN;
}

/* a role name or PUBLIC (InvalidOid) */
static Oid
grantee_arg(FunctionCallInfo fcinfo, int n)
{
	char	   *g = tfm_text_arg(fcinfo, n, "grantee");

	if (pg_strcasecmp(g, "public") == 0)
		return InvalidOid;
	return get_role_oid(g, false);	/* 42704 role "x" does not exist */
}

static void
change(FunctionCallInfo fcinfo, bool grant)
{
	char	   *name = tfm_text_arg(fcinfo, 0, "object");
	Oid			grantee = grantee_arg(fcinfo, 1);
	TfmPriv		priv = priv_arg(fcinfo, 2);
	const char *type = PG_ARGISNULL(3) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(3));
	TfmObject	o;
	uint64		changed;

	tfm_object_lookup(name, type, &o, false);
	tfm_check_object_owner(&o, name);
	tfm_check_local(o.kind, o.id, "change the grants of", name);
	if (strcmp(o.kind, "alias") == 0 && priv == TFM_PRIV_USE)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_GRANT_OPERATION),
				 errmsg("an alias takes only the train privilege (to redeploy or roll it back)"),
				 errdetail("Using a model through an alias needs use on the model itself.")));
	changed = tfm_object_acl_change(&o, grantee, priv, grant);
	if (!grant && changed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_GRANT_OPERATION),
				 errmsg("%s was never granted %s on %s \"%s\"",
						grantee == InvalidOid ? "PUBLIC" : GetUserNameFromId(grantee, false),
						tfm_priv_name(priv), o.kind, name)));
	if (strcmp(o.kind, "model") == 0)
		tfm_cache_forget(name);
}

PG_FUNCTION_INFO_V1(tfm_grant);
Datum
tfm_grant(PG_FUNCTION_ARGS)
{
	change(fcinfo, true);
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(tfm_revoke);
Datum
tfm_revoke(PG_FUNCTION_ARGS)
{
	change(fcinfo, false);
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(tfm_rename_model);
Datum
tfm_rename_model(PG_FUNCTION_ARGS)
{
	TfmObject	o;
	char	   *name = tfm_text_arg(fcinfo, 0, "name");
	char	   *new_name = tfm_text_arg(fcinfo, 1, "new_name");

	tfm_check_model_from("rename", name, new_name);
	tfm_object_lookup(name, "model", &o, false);
	tfm_check_object_owner(&o, name);
	tfm_check_local(o.kind, o.id, "rename", name);
	tfm_model_rename(name, new_name);
	tfm_cache_forget(name);
	PG_RETURN_VOID();
}
