/*
 * node.c — tfm.default_node(): the node number a database takes unless
 * tfm_set_node chose one (storage/origin.c; the rest of the node functions,
 * tfm_node and tfm_set_node, are SQL in the 0.4 upgrade script).
 */
#include "postgres.h"

#include "fmgr.h"

#include "sql/args.h"

PG_FUNCTION_INFO_V1(tfm_default_node);
Datum
tfm_default_node(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT32(tfm_default_node_number());
}
