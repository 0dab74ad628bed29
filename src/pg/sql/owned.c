/*
 * owned.c — what REASSIGN OWNED and DROP OWNED do for tfm's own objects,
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

#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/syscache.h"

#include "sql/args.h"

/* a role by name, or by the OID of one that no longer exists (superuser) */
static Oid
role_arg(FunctionCallInfo fcinfo, int n, const char *what, bool must_exist)
{
	char	   *s = tfm_text_arg(fcinfo, n, what);
	Oid			role = get_role_oid(s, true);
	char	   *end;
	unsigned long v;

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

static uint64
run(const char *sql, Oid a, Oid b)
{
	Oid			types[2] = {OIDOID, OIDOID};
	Datum		args[2] = {ObjectIdGetDatum(a), ObjectIdGetDatum(b)};
	int			rc = SPI_execute_with_args(sql, 2, types, args, NULL, false, 0);

	if (rc < 0)
		elog(ERROR, "tfm: catalog statement failed: %s", sql);
	return SPI_processed;
}

PG_FUNCTION_INFO_V1(tfm_reassign_owned);
Datum
tfm_reassign_owned(PG_FUNCTION_ARGS)
{
	Oid			old_role = role_arg(fcinfo, 0, "old_role", false);
	Oid			new_role = role_arg(fcinfo, 1, "new_role", true);
	TfmAsOwner	as;
	uint64		n = 0;

	tfm_spi_connect_owner(&as);
	n += run("UPDATE tfm.models SET owner = $2::regrole WHERE owner = $1::regrole", old_role, new_role);
	n += run("UPDATE tfm.tokenizers SET owner = $2::regrole WHERE owner = $1::regrole", old_role, new_role);
	n += run("UPDATE tfm.aliases SET owner = $2::regrole WHERE owner = $1::regrole", old_role, new_role);
	tfm_spi_finish_owner(&as);
	PG_RETURN_INT64((int64) n);
}

PG_FUNCTION_INFO_V1(tfm_drop_owned);
Datum
tfm_drop_owned(PG_FUNCTION_ARGS)
{
	Oid			role = role_arg(fcinfo, 0, "role", false);
	TfmAsOwner	as;
	uint64		n = 0;
	int			n_models;
	int32	   *models;
	char	  **names;
	MemoryContext cxt = CurrentMemoryContext;

	tfm_spi_connect_owner(&as);
	n += run("DELETE FROM tfm.aliases WHERE owner = $1::regrole", role, InvalidOid);
	/* models: their tensors, history, checkpoints and aliases go with them */
	run("SELECT id, name FROM tfm.models WHERE owner = $1::regrole", role, InvalidOid);
	n_models = (int) SPI_processed;
	models = MemoryContextAlloc(cxt, sizeof(int32) * Max(n_models, 1));
	names = MemoryContextAlloc(cxt, sizeof(char *) * Max(n_models, 1));
	for (int i = 0; i < n_models; i++)
	{
		bool		isnull;

		models[i] = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
		names[i] = MemoryContextStrdup(cxt, SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2));
	}
	n += run("DELETE FROM tfm.models WHERE owner = $1::regrole", role, InvalidOid);
	/* tokenizers that other roles' models still use stay, with a notice */
	run("SELECT t.name FROM tfm.tokenizers t WHERE t.owner = $1::regrole AND EXISTS "
		"(SELECT FROM tfm.models m WHERE t.name IN (m.tokenizer, m.target_tokenizer)) ORDER BY 1",
		role, InvalidOid);
	for (uint64 i = 0; i < SPI_processed; i++)
		ereport(NOTICE,
				(errmsg("tokenizer \"%s\" is kept: models of other roles use it",
						SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1)),
				 errhint("Reassign it with tfm_reassign_owned.")));
	n += run("DELETE FROM tfm.tokenizers t WHERE t.owner = $1::regrole AND NOT EXISTS "
			 "(SELECT FROM tfm.models m WHERE t.name IN (m.tokenizer, m.target_tokenizer))",
			 role, InvalidOid);
	/* grants to the role */
	n += run("UPDATE tfm.models SET acl_use = array_remove(acl_use, $1::regrole), "
			 "acl_train = array_remove(acl_train, $1::regrole) "
			 "WHERE $1::regrole = ANY (acl_use || acl_train)", role, InvalidOid);
	n += run("UPDATE tfm.tokenizers SET acl_use = array_remove(acl_use, $1::regrole), "
			 "acl_train = array_remove(acl_train, $1::regrole) "
			 "WHERE $1::regrole = ANY (acl_use || acl_train)", role, InvalidOid);
	n += run("UPDATE tfm.aliases SET acl_train = array_remove(acl_train, $1::regrole) "
			 "WHERE $1::regrole = ANY (acl_train)", role, InvalidOid);
	tfm_spi_finish_owner(&as);
	for (int i = 0; i < n_models; i++)
	{
		tfm_cache_forget(names[i]);
		tfm_shared_forget(models[i]);
	}
	PG_RETURN_INT64((int64) n);
}
