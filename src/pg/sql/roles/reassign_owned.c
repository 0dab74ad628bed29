/*
 * reassign_owned.c — what REASSIGN OWNED and DROP OWNED do for tfm's own objects,
 * which PostgreSQL's commands cannot see (owners and grantees are role OIDs
 * in tfm's catalog rows, not dependencies in pg_shdepend):
 *
 *   tfm_reassign_owned(old_role, new_role)  models, tokenizers and aliases
 *                                           of old_role now belong to new_role
 *   tfm_drop_owned(role)                    drops them, and removes every
 *                                           grant to role
 *
 * As for PostgreSQL's commands, the caller needs the privileges of the roles
 * named.  A role already dropped leaves its OID behind (tfm.orphaned lists
 * them); such a role is named by its OID, and only a superuser may act on
 * it.  Both return how many objects (and grants) they changed.
 */
#include "postgres.h"

#include "mb/pg_wchar.h"

#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/syscache.h"

#include "sql/args.h"
#include "runtime/cache/shared_weights.h"
#include "runtime/cache/model_cache.h"
#include "storage/roles/roles.h"

/* a role by name, or by the OID of one that no longer exists (superuser) */
static Oid
role_arg(FunctionCallInfo fcinfo, int n, const char *what, bool must_exist)
{
	char	   *s = tfm_text_arg(fcinfo, n, what);
	Oid			role;
	char	   *end;
	unsigned long v;

	/* a role's name has at most NAMEDATALEN - 1 bytes: no lookup, no error quoting more */
	if (strlen(s) >= NAMEDATALEN)
		ereport(ERROR,
				(errcode(ERRCODE_NAME_TOO_LONG),
				 errmsg("%s \"%.*s...\" is longer than a role name can be (%d bytes)", what,
						pg_mbcliplen(s, strlen(s), 32), s, NAMEDATALEN - 1)));
	role = get_role_oid(s, true);

	if (OidIsValid(role))
	{
		if (!has_privs_of_role(GetUserId(), role))
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("permission denied to act on the objects of role \"%s\"", s),
					 errdetail("Only roles with the privileges of role \"%s\" may.", s)));
		return role;
	}
	errno = 0;
	v = strtoul(s, &end, 10);
	if (must_exist || *s == '\0' || *end != '\0' || errno != 0 || v == 0 || v > PG_UINT32_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("role \"%s\" does not exist", s),
				 must_exist ? 0 :
				 errhint("A dropped role's objects are named by its OID, as tfm.orphaned shows it.")));
	role = (Oid) v;
	if (SearchSysCacheExists1(AUTHOID, ObjectIdGetDatum(role)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("role %u exists: name it by its name", role)));
	if (!superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("only a superuser may act on the objects of a dropped role")));
	return role;
}

PG_FUNCTION_INFO_V1(tfm_reassign_owned);
Datum
tfm_reassign_owned(PG_FUNCTION_ARGS)
{
	Oid			old_role = role_arg(fcinfo, 0, "old_role", false);
	Oid			new_role = role_arg(fcinfo, 1, "new_role", true);
	uint64		n = tfm_owned_reassign(old_role, new_role);

	PG_RETURN_INT64((int64) n);
}

PG_FUNCTION_INFO_V1(tfm_drop_owned);
Datum
tfm_drop_owned(PG_FUNCTION_ARGS)
{
	Oid			role = role_arg(fcinfo, 0, "role", false);
	int			n_models;
	int32	   *models;
	char	  **names;
	uint64		n = tfm_owned_drop(role, &n_models, &models, &names);

	for (int i = 0; i < n_models; i++)
	{
		tfm_cache_forget(names[i]);
		tfm_shared_forget(models[i]);
	}
	PG_RETURN_INT64((int64) n);
}
