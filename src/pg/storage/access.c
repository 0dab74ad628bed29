/*
 * access.c — who may do what with tfm's models and tokenizers.
 *
 * The catalog tables in schema tfm belong to the extension's owner and no
 * other role may write them: tfm's C functions run with the caller's rights
 * and switch to the owner of schema tfm only around their own catalog SQL
 * (tfm_as_owner_begin / _end: the user id for that SQL, and a search_path
 * pinned to pg_catalog, so a caller's objects cannot stand in for the
 * operators and functions that SQL uses).  Queries a caller gives to
 * tfm_train or tfm_evaluate run outside those sections, with the caller's
 * rights.  After an ERROR, the transaction's (or subtransaction's) abort
 * restores the user id and the GUC nest level, as for PostgreSQL's own
 * SECURITY DEFINER functions.
 *
 * Privileges: every model and tokenizer has an owner (the role that made
 * it) and two lists of grantees (regrole[]; 0, shown as '-', is PUBLIC):
 * acl_use (inference, evaluation, reading its tensors or vocabulary,
 * copying it) and acl_train (training, overwriting, deploying; implies use).
 * The owner, members of the owner role and superusers hold both, and only
 * they may drop, rename or grant.  A tokenizer is also usable through any
 * model that uses it and that the caller may use.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "storage/storage.h"

/* ---- running catalog SQL as the extension's owner ------------------------- */

static Oid
catalog_owner(void)
{
	Oid			nsp = get_namespace_oid("tfm", false);
	HeapTuple	tup = SearchSysCache1(NAMESPACEOID, ObjectIdGetDatum(nsp));
	Oid			owner;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for schema tfm");
	owner = ((Form_pg_namespace) GETSTRUCT(tup))->nspowner;
	ReleaseSysCache(tup);
	return owner;
}

void
tfm_as_owner_begin(TfmAsOwner *s)
{
	GetUserIdAndSecContext(&s->save_uid, &s->save_sec);
	SetUserIdAndSecContext(catalog_owner(), s->save_sec | SECURITY_LOCAL_USERID_CHANGE);
	s->gucnest = NewGUCNestLevel();
	(void) set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
}

/* every setting as it was before the section, whatever ran inside it */
void
tfm_as_owner_end(TfmAsOwner *s)
{
	AtEOXact_GUC(false, s->gucnest);
	SetUserIdAndSecContext(s->save_uid, s->save_sec);
}

void
tfm_spi_connect_owner(TfmAsOwner *s)
{
	SPI_connect();
	tfm_as_owner_begin(s);
}

void
tfm_spi_finish_owner(TfmAsOwner *s)
{
	tfm_as_owner_end(s);
	SPI_finish();
}

uint64
tfm_spi_exec(const char *sql, int nargs, Oid *types, Datum *args, const char *nulls,
			 bool read_only, long count, int expect, const char *err)
{
	SPIPlanPtr	plan = tfm_kept_plan(sql, nargs, types);
	int			rc = plan != NULL ? SPI_execute_plan(plan, args, nulls, read_only, count) :
		SPI_execute_with_args(sql, nargs, types, args, nulls, read_only, count);

	if (rc != expect)
		elog(ERROR, "%s", err);
	return SPI_processed;
}

bool
tfm_owner_row_read(TfmOwnerRow *r, const char *sql, int nargs, Oid *types, Datum *args,
				   bool read_only, const char *err)
{
	r->cxt = CurrentMemoryContext;
	r->tup = NULL;
	tfm_spi_connect_owner(&r->as);
	if (tfm_spi_exec(sql, nargs, types, args, NULL, read_only, 1, SPI_OK_SELECT, err) > 0)
	{
		r->tup = SPI_tuptable->vals[0];
		r->td = SPI_tuptable->tupdesc;
	}
	return r->tup != NULL;
}

Datum
tfm_owner_row_col(const TfmOwnerRow *r, int col, bool *isnull)
{
	return SPI_getbinval(r->tup, r->td, col, isnull);
}

void
tfm_owner_row_end(TfmOwnerRow *r)
{
	tfm_spi_finish_owner(&r->as);
}

uint64
tfm_spi_exec_owner(const char *sql, int nargs, Oid *types, Datum *args, const char *nulls,
				   bool read_only, long count, int expect, const char *err)
{
	TfmAsOwner	as;
	uint64		n;

	tfm_spi_connect_owner(&as);
	n = tfm_spi_exec(sql, nargs, types, args, nulls, read_only, count, expect, err);
	tfm_spi_finish_owner(&as);
	return n;
}

/* ---- privileges ----------------------------------------------------------- */

const char *
tfm_priv_name(TfmPriv p)
{
	return p == TFM_PRIV_USE ? "use" : p == TFM_PRIV_TRAIN ? "train" : "owner";
}

static bool
role_in(Oid role, const Oid *grantees, int n)
{
	for (int i = 0; i < n; i++)
		if (grantees[i] == InvalidOid || has_privs_of_role(role, grantees[i]))
			return true;
	return false;
}

bool
tfm_acl_allows(const TfmAcl *acl, TfmPriv priv, Oid role)
{
	if (has_privs_of_role(role, acl->owner))
		return true;
	if (priv == TFM_PRIV_OWNER)
		return false;
	if (role_in(role, acl->train, acl->n_train))
		return true;
	return priv == TFM_PRIV_USE && role_in(role, acl->use, acl->n_use);
}

/* a regrole[] datum into a palloc'd array of oids */
int
tfm_oid_array(Datum d, Oid **out)
{
	ArrayType  *a = DatumGetArrayTypeP(d);
	Datum	   *elems;
	bool	   *nulls;
	int			n;

	deconstruct_array(a, REGROLEOID, sizeof(Oid), true, TYPALIGN_INT, &elems, &nulls, &n);
	*out = palloc(sizeof(Oid) * Max(n, 1));
	for (int i = 0; i < n; i++)
		(*out)[i] = nulls[i] ? InvalidOid : DatumGetObjectId(elems[i]);
	return n;
}

/* SELECT ..., owner, acl_use, acl_train: read them from columns col.. col + 2 */
void
tfm_acl_from_tuple(TfmAcl *acl, HeapTuple tup, TupleDesc td, int col, MemoryContext cxt)
{
	MemoryContext old = MemoryContextSwitchTo(cxt);
	bool		isnull;

	acl->owner = DatumGetObjectId(SPI_getbinval(tup, td, col, &isnull));
	acl->n_use = tfm_oid_array(SPI_getbinval(tup, td, col + 1, &isnull), &acl->use);
	acl->n_train = tfm_oid_array(SPI_getbinval(tup, td, col + 2, &isnull), &acl->train);
	MemoryContextSwitchTo(old);
}

/*
 * May the current user use the tokenizer (by its own grants, or through a
 * model that uses it)?  Errors with 42501 if not.
 */
void
tfm_check_tokenizer_use(const char *name)
{
	Oid			types[2] = {TEXTOID, OIDOID};
	Datum		args[2] = {CStringGetTextDatum(name), ObjectIdGetDatum(GetUserId())};
	TfmAsOwner	s;
	bool		ok = false,
				found,
				isnull;

	tfm_check_name("tokenizer", name);
	tfm_spi_connect_owner(&s);
	tfm_spi_exec("SELECT tfm.may_use_tokenizer(id, $2) FROM tfm.tokenizers WHERE name = $1",
				 2, types, args, NULL, true, 1,
				 SPI_OK_SELECT, "cannot read tfm.tokenizers");
	if (SPI_processed == 1)
	{
		Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

		ok = !isnull && DatumGetBool(d);
	}
	found = SPI_processed == 1;
	tfm_spi_finish_owner(&s);
	if (!found)
		tfm_tokenizer_missing(name);
	if (!ok)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for tokenizer \"%s\": use privilege required", name),
				 errhint("The owner of the tokenizer, or of a model using it, can grant use.")));
}

/*
 * Training and other writes of the catalog need a primary in a read-write
 * transaction: say so before any work, not at the first INSERT.
 */
void
tfm_check_writable(const char *action, const char *name)
{
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot %s model \"%s\" on a standby", action, name),
				 errdetail("A hot standby runs inference only; its models are the primary's, as replayed."),
				 errhint("Run it on the primary: the standby uses the new weights as soon as the save has replayed.")));
	if (XactReadOnly)
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot %s model \"%s\" in a read-only transaction", action, name)));
}
