/*
 * pg_compat.h — every difference between the PostgreSQL major versions tfm
 * builds against (15, 17 and 18; doc/versions.md), in one place: each one
 * spelled the newest version's way, with its definition for the older
 * versions under a PG_VERSION_NUM guard.  The rest of the PostgreSQL layer
 * has no #if on the version.
 */
#ifndef TFM_PG_COMPAT_H
#define TFM_PG_COMPAT_H

#include "postgres.h"

#include "catalog/pg_database.h"
#include "storage/proc.h"
#include "utils/acl.h"

/*
 * 18 marks a function that does not return with pg_noreturn before its
 * declaration; pg_attribute_noreturn() after it is gone.
 */
#if PG_VERSION_NUM < 180000
#define pg_noreturn __attribute__((noreturn))
#endif

/*
 * 17 numbers this backend's PGPROC in MyProcNumber (PGPROC's pgprocno is
 * gone), and keeps a PGPROC's local transaction id in its vxid.
 */
#if PG_VERSION_NUM < 170000
#define MyProcNumber (MyProc->pgprocno)
#define tfm_proc_lxid(proc) ((proc)->lxid)
#else
#define tfm_proc_lxid(proc) ((proc)->vxid.lxid)
#endif

/*
 * 16 checks any object's ownership with object_ownercheck (15 had one
 * function per catalog): before 16, the catalogs tfm asks about.
 */
#if PG_VERSION_NUM < 160000
static inline bool
object_ownercheck(Oid classid, Oid objectid, Oid roleid)
{
	if (classid != DatabaseRelationId)
		elog(ERROR, "tfm: object_ownercheck of catalog %u is not in pg_compat.h", classid);
	return pg_database_ownercheck(objectid, roleid);
}
#endif

#endif							/* TFM_PG_COMPAT_H */
