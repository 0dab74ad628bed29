/*
 * grants.c — the rows behind tfm_grant and tfm_revoke (sql/roles/grant.c): a
 * model, tokenizer or alias by name with its owner and grants, the checks
 * that the current user owns one, and the updates of its acl_use and
 * acl_train.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"

#include "storage/roles/roles.h"

bool
tfm_object_find(const char *name, const char *type, TfmObject *o)
{
	static const char *tables[3] = {"tfm.models", "tfm.tokenizers", "tfm.aliases"};
	static const char *kinds[3] = {"model", "tokenizer", "alias"};
	/* an alias has no use grants: using it takes use on its model */
	static const char *columns[3] = {"acl_use", "acl_use", "'{}'::regrole[]"};
	Oid			types[1] = {TEXTOID};
	Datum		args[1] = {CStringGetTextDatum(name)};
	MemoryContext cxt = CurrentMemoryContext;
	bool		found = false;
	TfmAsOwner	as;

	tfm_spi_connect_owner(&as);
	for (int k = 0; k < 3 && !found; k++)
	{
		bool		isnull;

		if (type && strcmp(type, kinds[k]) != 0)
			continue;
		if (tfm_spi_exec(psprintf("SELECT id, owner, %s, acl_train FROM %s WHERE name = $1",
						 columns[k], tables[k]),
						 1, types, args, NULL, false, 1, SPI_OK_SELECT,
						 psprintf("cannot read %s", tables[k])) == 1)
		{
			o->table = tables[k];
			o->kind = kinds[k];
			o->id = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
			tfm_acl_from_tuple(&o->acl, SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, cxt);
			found = true;
		}
	}
	tfm_spi_finish_owner(&as);
	return found;
}

uint64
tfm_object_acl_change(const TfmObject *o, Oid grantee, TfmPriv priv, bool grant)
{
	Oid			types[2] = {INT4OID, OIDOID};
	Datum		args[2] = {Int32GetDatum(o->id), ObjectIdGetDatum(grantee)};
	const char *sql;

	if (grant)
		sql = priv == TFM_PRIV_USE ?
			"UPDATE %s SET acl_use = acl_use || $2::regrole WHERE id = $1 AND NOT $2::regrole = ANY (acl_use)" :
			"UPDATE %s SET acl_train = acl_train || $2::regrole WHERE id = $1 AND NOT $2::regrole = ANY (acl_train)";
	else
		sql = priv == TFM_PRIV_USE ?
			"UPDATE %s SET acl_use = array_remove(acl_use, $2::regrole), "
			"acl_train = array_remove(acl_train, $2::regrole) "
			"WHERE id = $1 AND $2::regrole = ANY (acl_use || acl_train)" :
			"UPDATE %s SET acl_train = array_remove(acl_train, $2::regrole) "
			"WHERE id = $1 AND $2::regrole = ANY (acl_train)";
	return tfm_spi_exec_owner(psprintf(sql, o->table), 2, types, args, NULL, false, 0,
							  SPI_OK_UPDATE, psprintf("cannot update %s", o->table));
}

bool
tfm_object_lookup(const char *name, const char *type, TfmObject *o, bool missing_ok)
{
	bool		found;

	if (type && strcmp(type, "model") != 0 && strcmp(type, "tokenizer") != 0 &&
		strcmp(type, "alias") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("object_type must be \"model\", \"tokenizer\" or \"alias\", not \"%s\"", type)));
	tfm_check_name(type ? type : "object", name);
	found = tfm_object_find(name, type, o);
	if (!found && !missing_ok)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 type ? errmsg("%s \"%s\" does not exist", type, name) :
				 errmsg("no model, tokenizer or alias is called \"%s\"", name)));
	return found;
}

void
tfm_check_object_owner(const TfmObject *o, const char *name)
{
	if (!tfm_acl_allows(&o->acl, TFM_PRIV_OWNER, GetUserId()))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of %s \"%s\"", o->kind, name)));
}

/* the current user owns the model or tokenizer (if it exists) and it is this node's */
static void
check_owner_here(const char *type, const char *action, const char *name)
{
	TfmObject	o;

	if (tfm_object_lookup(name, type, &o, true))
	{
		tfm_check_object_owner(&o, name);
		tfm_check_local(o.kind, o.id, action, name);
	}
}

void
tfm_check_model_owner(const char *action, const char *name)
{
	check_owner_here("model", action, name);
}

void
tfm_check_tokenizer_owner(const char *action, const char *name)
{
	check_owner_here("tokenizer", action, name);
}
