/*
 * owned.c — the rows behind tfm_reassign_owned and tfm_drop_owned
 * (sql/roles/reassign_owned.c): the owners and grantees of models, tokenizers and aliases.
 * Only this node's own rows: replicated ones (origin another node, see
 * origin.c) change on their publisher.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"

#include "storage/storage.h"
#include "storage/roles/roles.h"

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

uint64
tfm_owned_reassign(Oid old_role, Oid new_role)
{
	TfmAsOwner	as;
	uint64		n = 0;

	tfm_spi_connect_owner(&as);
	n += run("UPDATE tfm.models SET owner = $2::regrole WHERE owner = $1::regrole AND origin = tfm.local_node()", old_role, new_role);
	n += run("UPDATE tfm.tokenizers SET owner = $2::regrole WHERE owner = $1::regrole AND origin = tfm.local_node()", old_role, new_role);
	n += run("UPDATE tfm.aliases SET owner = $2::regrole WHERE owner = $1::regrole AND origin = tfm.local_node()", old_role, new_role);
	tfm_spi_finish_owner(&as);
	return n;
}

uint64
tfm_owned_drop(Oid role, int *n_models, int32 **models, char ***names)
{
	TfmAsOwner	as;
	uint64		n = 0;
	MemoryContext cxt = CurrentMemoryContext;

	tfm_spi_connect_owner(&as);
	n += run("DELETE FROM tfm.aliases WHERE owner = $1::regrole AND origin = tfm.local_node()", role, InvalidOid);
	/* models: their tensors, history, checkpoints and aliases go with them */
	run("SELECT id, name FROM tfm.models WHERE owner = $1::regrole AND origin = tfm.local_node()", role, InvalidOid);
	*n_models = (int) SPI_processed;
	*models = MemoryContextAlloc(cxt, sizeof(int32) * Max(*n_models, 1));
	*names = MemoryContextAlloc(cxt, sizeof(char *) * Max(*n_models, 1));
	for (int i = 0; i < *n_models; i++)
	{
		bool		isnull;

		(*models)[i] = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
		(*names)[i] = MemoryContextStrdup(cxt, SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2));
	}
	n += run("DELETE FROM tfm.models WHERE owner = $1::regrole AND origin = tfm.local_node()", role, InvalidOid);
	/* tokenizers that other roles' models still use stay, with a notice */
	run("SELECT t.name FROM tfm.tokenizers t WHERE t.owner = $1::regrole AND t.origin = tfm.local_node() AND EXISTS "
		"(SELECT FROM tfm.models m WHERE t.name IN (m.tokenizer, m.target_tokenizer)) ORDER BY 1",
		role, InvalidOid);
	for (uint64 i = 0; i < SPI_processed; i++)
		ereport(NOTICE,
				(errmsg("tokenizer \"%s\" is kept: models of other roles use it",
						SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1)),
				 errhint("Reassign it with tfm_reassign_owned.")));
	n += run("DELETE FROM tfm.tokenizers t WHERE t.owner = $1::regrole AND t.origin = tfm.local_node() AND NOT EXISTS "
			 "(SELECT FROM tfm.models m WHERE t.name IN (m.tokenizer, m.target_tokenizer))",
			 role, InvalidOid);
	/* grants to the role */
	n += run("UPDATE tfm.models SET acl_use = array_remove(acl_use, $1::regrole), "
			 "acl_train = array_remove(acl_train, $1::regrole) "
			 "WHERE origin = tfm.local_node() AND $1::regrole = ANY (acl_use || acl_train)", role, InvalidOid);
	n += run("UPDATE tfm.tokenizers SET acl_use = array_remove(acl_use, $1::regrole), "
			 "acl_train = array_remove(acl_train, $1::regrole) "
			 "WHERE origin = tfm.local_node() AND $1::regrole = ANY (acl_use || acl_train)", role, InvalidOid);
	n += run("UPDATE tfm.aliases SET acl_train = array_remove(acl_train, $1::regrole) "
			 "WHERE origin = tfm.local_node() AND $1::regrole = ANY (acl_train)", role, InvalidOid);
	tfm_spi_finish_owner(&as);
	return n;
}
