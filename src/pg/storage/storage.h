/*
 * storage.h — the catalog in schema tfm, through SPI: what every room of
 * storage/ uses.  The limit on names (names.c), privileges and the
 * owner's SQL sections (access.c) with their kept plans (kept_plans.c),
 * the node a row comes from (origin.c).  The rooms have their own headers:
 * models/models.h (models, their tensors, aliases, history, GGUF tensors),
 * models/checkpoints.h, tokenizers/tokenizers.h, roles/roles.h (grants,
 * what a role owns), jobs/jobs.h, jobs/job_queue.h, jobs/job_list.h.
 */
#ifndef TFM_PG_STORAGE_H
#define TFM_PG_STORAGE_H

#include "postgres.h"
#include "access/htup.h"
#include "access/tupdesc.h"
#include "executor/spi.h"
#include "datatype/timestamp.h"
#include "lib/stringinfo.h"
#include "utils/jsonb.h"

#include "base/base.h"

/* ---- names (names.c) ---- */
/* the longest name of a model, tokenizer or alias, in bytes */
#define TFM_NAME_MAX 127
/* a name to look up: too long is 42622 (name_too_long) */
void		tfm_check_name(const char *kind, const char *name);
/* a name for something new: not empty, not too long */
void		tfm_check_new_name(const char *kind, const char *name);
/* errors 42704: tokenizer "name" does not exist */
pg_noreturn void tfm_tokenizer_missing(const char *name);

/* ---- privileges and the catalog's owner (access.c) ---- */
typedef enum TfmPriv
{
	TFM_PRIV_USE,				/* inference, evaluation, tensors, copy */
	TFM_PRIV_TRAIN,				/* train, overwrite, deploy (implies use) */
	TFM_PRIV_OWNER				/* drop, rename, grant */
} TfmPriv;

/* an object's owner and grantees (InvalidOid = PUBLIC) */
typedef struct TfmAcl
{
	Oid			owner;
	int			n_use;
	int			n_train;
	Oid		   *use;
	Oid		   *train;
} TfmAcl;

/* catalog SQL runs as the owner of schema tfm with a pinned search_path */
typedef struct TfmAsOwner
{
	Oid			save_uid;
	int			save_sec;
	int			gucnest;
} TfmAsOwner;
void		tfm_as_owner_begin(TfmAsOwner *s);
void		tfm_as_owner_end(TfmAsOwner *s);
/* SPI_connect / SPI_finish around a section of catalog SQL */
void		tfm_spi_connect_owner(TfmAsOwner *s);
void		tfm_spi_finish_owner(TfmAsOwner *s);
/* SPI_execute_with_args inside such a section (its plan kept: kept_plans.c):
 * errors with err unless it returns expect; the rows processed
 * (SPI_tuptable stays readable) */
uint64		tfm_spi_exec(const char *sql, int nargs, Oid *types, Datum *args,
						 const char *nulls, bool read_only, long count, int expect,
						 const char *err);
/*
 * One row of catalog SQL: tfm_owner_row_read opens a section and reads the
 * first row of a SELECT (false if none: tup is NULL); its columns are read
 * with tfm_owner_row_col (copy what must outlive the section into cxt, the
 * caller's context); tfm_owner_row_end ends the section.
 */
typedef struct TfmOwnerRow
{
	TfmAsOwner	as;
	MemoryContext cxt;
	HeapTuple	tup;
	TupleDesc	td;
} TfmOwnerRow;
bool		tfm_owner_row_read(TfmOwnerRow *r, const char *sql, int nargs, Oid *types,
							   Datum *args, bool read_only, const char *err);
Datum		tfm_owner_row_col(const TfmOwnerRow *r, int col, bool *isnull);
void		tfm_owner_row_end(TfmOwnerRow *r);
/* the same as a section of its own (connect, execute, check, finish) */
uint64		tfm_spi_exec_owner(const char *sql, int nargs, Oid *types, Datum *args,
							   const char *nulls, bool read_only, long count, int expect,
							   const char *err);

/* sql's plan prepared once per backend and kept; NULL: run it unprepared */
SPIPlanPtr	tfm_kept_plan(const char *sql, int nargs, const Oid *types);

const char *tfm_priv_name(TfmPriv p);
bool		tfm_acl_allows(const TfmAcl *acl, TfmPriv priv, Oid role);
int			tfm_oid_array(Datum d, Oid **out);
void		tfm_acl_from_tuple(TfmAcl *acl, HeapTuple tup, TupleDesc td, int col,
							   MemoryContext cxt);
void		tfm_check_tokenizer_use(const char *name);
/* errors on a standby or in a read-only transaction */
void		tfm_check_writable(const char *action, const char *name);

/* ---- nodes: where a row comes from (origin.c) ---- */
/* ids are node << TFM_NODE_ID_BITS | a count below 2^TFM_NODE_ID_BITS */
#define TFM_NODE_ID_BITS 20
#define TFM_NODE_MAX 2047
/* the node a database takes unless tfm_set_node chose one */
int32		tfm_default_node_number(void);
/* this database's node (0: a catalog from before 0.4) */
int32		tfm_local_node(void);
/* errors 55000 if the object (kind "model", "tokenizer" or "alias", its row
 * id) was created on another node, i.e. came by logical replication */
void		tfm_check_local(const char *kind, int32 id, const char *action, const char *name);

#endif							/* TFM_PG_STORAGE_H */
