/*
 * origin.c — which database (node) a model, tokenizer or alias comes from.
 *
 * Every database is a node, 1 to 2047, and gives its models, tokenizers and
 * aliases ids in its own range (node << TFM_NODE_ID_BITS, + a count: the
 * default tfm.new_id of the 0.4 upgrade script), so ids never collide between
 * a publisher and a subscriber that also has its own (doc/operations.md,
 * "Logical replication").  A row's origin is id >> TFM_NODE_ID_BITS; a row
 * whose origin is another node came by logical replication and changes only
 * there: training, renaming, granting or dropping it here would diverge
 * from the publisher (and be overwritten by its next save).
 *
 * The node is the one row of tfm.node; until it exists it is
 * tfm_default_node_number() (tfm.default_node() in SQL): a hash of the
 * cluster's system identifier and the database's OID.  tfm.local_node()
 * says which.
 */
#include "postgres.h"

#include "access/xlog.h"
#include "catalog/namespace.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "utils/lsyscache.h"

#include "storage/storage.h"

int32
tfm_default_node_number(void)
{
	struct
	{
		uint64		sysid;
		Oid			db;
	}			key;

	memset(&key, 0, sizeof(key));
	key.sysid = GetSystemIdentifier();
	key.db = MyDatabaseId;
	return (int32) (hash_bytes((const unsigned char *) &key, sizeof(key)) % TFM_NODE_MAX) + 1;
}

int32
tfm_local_node(void)
{
	TfmOwnerRow r;
	bool		isnull;
	int32		node = 0;
	Oid			nsp = get_namespace_oid("tfm", false);

	/* a catalog from before 0.4 (until ALTER EXTENSION tfm UPDATE): one node */
	if (!OidIsValid(get_relname_relid("node", nsp)))
		return 0;
	if (tfm_owner_row_read(&r, "SELECT tfm.local_node()", 0, NULL, NULL, true,
						   "cannot read tfm.node"))
		node = DatumGetInt32(tfm_owner_row_col(&r, 1, &isnull));
	tfm_owner_row_end(&r);
	return node;
}

void
tfm_check_local(const char *kind, int32 id, const char *action, const char *name)
{
	int32		origin = id >> TFM_NODE_ID_BITS;
	int32		local = tfm_local_node();

	if (local == 0 || origin == local)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("cannot %s %s \"%s\": it is replicated from node %d", action, kind, name, origin),
			 errdetail("This database is node %d; a %s created on node %d is changed there, and its changes arrive here by logical replication.",
					   local, kind, origin),
			 strcmp(action, "train") == 0 ?
			 errhint("Train it on the publisher (the database whose tfm_node() is %d), or train a local copy made here with tfm_copy_model.", origin) :
			 errhint("Do it on the publisher (the database whose tfm_node() is %d).", origin)));
}
