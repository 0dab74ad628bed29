/*
 * tfm_pg.h — shared declarations of tfm's PostgreSQL layer: settings,
 * catalog access (models and tensors in schema tfm), the per-backend model
 * cache, and ownership of core objects by memory contexts.
 */
#ifndef TFM_PG_H
#define TFM_PG_H

#include "postgres.h"
#include "fmgr.h"
#include "access/htup.h"
#include "access/tupdesc.h"
#include "utils/array.h"

#include "tfm/model.h"
#include "tfm/precision.h"

/* ---- settings (guc.c) ---- */
extern int	tfm_threads;
extern char *tfm_blis_arch;
extern bool tfm_progress;
extern int	tfm_train_chunk_rows;
extern int	tfm_work_mem;		/* kB */

/*
 * tfm.work_mem (workmem.c): a pass's size is checked before it runs.
 * tfm_work_mem_fits also sets the model's ws_limit (NULL: none);
 * tfm_work_mem_check raises "<doing> model "<name>" needs a workspace of
 * <size>" (54000) with a hint to raise tfm.work_mem or lower <lower>.
 */
void		tfm_workmem_init(void);
size_t		tfm_work_mem_bytes(void);
bool		tfm_work_mem_fits(tfm_model *m, size_t bytes);
/* the same for work without a model: "<what> needs a workspace of <size>" */
void		tfm_work_mem_require(size_t bytes, const char *what, const char *lower);
void		tfm_work_mem_check(tfm_model *m, size_t bytes, const char *doing, const char *name,
							   const char *lower);
size_t		tfm_pass_bytes(const tfm_model *m, int B, int T, int Tt, bool training,
						   bool attention);
void		tfm_batch_check(tfm_model *m, const tfm_batch *b, bool training, const char *doing,
							const char *name, const char *lower);

/* initialise BLIS on first use and apply tfm.threads; call before any compute */
void		tfm_backend_ready(void);

/* ---- names (names.c) ---- */
/* the longest name of a model, tokenizer or alias, in bytes */
#define TFM_NAME_MAX 127
/* a name to look up: too long is 42622 (name_too_long) */
void		tfm_check_name(const char *kind, const char *name);
/* a name for something new: not empty, not too long */
void		tfm_check_new_name(const char *kind, const char *name);
/* the same for a model, which must not take an alias's name either */
void		tfm_check_new_model_name(const char *name);

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

const char *tfm_priv_name(TfmPriv p);
bool		tfm_acl_allows(const TfmAcl *acl, TfmPriv priv, Oid role);
int			tfm_oid_array(Datum d, Oid **out);
void		tfm_acl_from_tuple(TfmAcl *acl, HeapTuple tup, TupleDesc td, int col,
							   MemoryContext cxt);
struct TfmModelRow;
void		tfm_check_model_privilege(const struct TfmModelRow *row, TfmPriv priv);
void		tfm_check_tokenizer_use(const char *name);
/* errors on a standby or in a read-only transaction */
void		tfm_check_writable(const char *action, const char *name);
void		tfm_check_tokenizer_owner(const char *name);
/* only the row's owner columns: works on models this build cannot load */
void		tfm_check_model_owner(const char *name);

/* ---- a model's catalog row (catalog.c) ---- */
typedef struct TfmModelRow
{
	int32		id;
	int64		version;
	int64		steps;
	char		name[TFM_NAME_MAX + 1];	/* the model's own name (not an alias) */
	char		task[16];
	char	   *tokenizer;		/* NULL if none */
	char	   *target_tokenizer;
	int			n_labels;
	char	  **labels;			/* classify */
	TfmAcl		acl;			/* owner and grants, as read */
	int			precision;		/* the model's default tfm_precision, -1 = none */
	int32		bos_id,			/* imported models: the checkpoint's bos and eos */
				eos_id;			/* ids (config bos_id, eos_id); -1 = the tokenizer's */
	tfm_config	cfg;
} TfmModelRow;

/* values per tfm.tensors row: 16 MB, far below PostgreSQL's 1 GB per value */
#define TFM_CHUNK_VALUES (1 << 22)

/* read a model's row; errors if it does not exist (unless missing_ok) */
bool		tfm_catalog_lookup(const char *name, TfmModelRow *row, bool missing_ok);
/* read its tensors into a new core model, checking every name and shape */
tfm_model  *tfm_catalog_load(const TfmModelRow *row);
/* write every tensor and take a new version; returns it */
int64		tfm_catalog_save(TfmModelRow *row, const tfm_model *m, int64 add_steps);
/* a core model's poll hook: CHECK_FOR_INTERRUPTS between blocks */
void		tfm_poll_interrupts(void *arg);
/*
 * A core poll that must return (BLEU, tokenization): nonzero when an
 * interrupt is pending that CHECK_FOR_INTERRUPTS can serve; the caller then
 * calls CHECK_FOR_INTERRUPTS and, if nothing was raised, starts over.
 */
int			tfm_interrupt_pending(void *arg);
/*
 * A pass's result (tfm_model_forward, tfm_decoder_feed/encode): an id
 * outside the vocabulary (TFM_EBADID) or out of memory become errors.
 * model may be NULL.
 */
void		tfm_check_pass(int rc, const char *model);
/* a loss (tfm_model_loss_backward) whose *count is -1: a target outside the vocabulary */
double		tfm_check_loss(double sum, const int *count, const char *model);
/*
 * The model-size cap (tfm.max_parameters): an error naming the size and
 * the setting when n_params is over it.
 */
void		tfm_check_max_parameters(int64 n_params, const char *model);
/* tfm_bleu_add that ends at a cancel or statement_timeout (bleu_sql.c) */
int			tfm_bleu_add_pg(int64 *stats, const char *hyp, size_t hyp_len,
							const char *const *refs, const size_t *ref_lens, int n_refs);
/* the parameters of a config (its tensors' sizes; nothing allocated but their list) */
int64		tfm_config_params(const tfm_config *c);
extern double tfm_max_parameters;
/* the config as the JSON stored in tfm.models.config */
char	   *tfm_config_json(const tfm_config *cfg);
tfm_task	tfm_task_from_name(const char *task);
const char *tfm_task_name(int task);

/* ---- inference precision (precision_sql.c) ---- */
extern int	tfm_precision_setting;	/* tfm.precision: -1 = auto, else a tfm_precision */
int			tfm_precision_from_name(const char *name, const char *model);
/* pack (or unpack) a model for the precision its inference uses now */
void		tfm_apply_precision(tfm_model *m, const TfmModelRow *row);
/* pack m for p, stopped by a cancel (raised); 0, or -1 without the memory */
int			tfm_pack_model(tfm_model *m, tfm_precision p);
/* values[0..4] of tfm_info(): precision, why, bf16 kernel, int8 kernel, kernel reason */
void		tfm_precision_info(Datum *values);

/* ---- weights shared between backends (shared_weights.c) ---- */
extern bool tfm_share_weights;
/* a model for inference, over the one shared copy of its weights */
tfm_model  *tfm_shared_load(const TfmModelRow *row);
/* remove the shared copies of a dropped model */
void		tfm_shared_forget(int32 model_id);
/* a mapped model's bf16/int8 copies from (or into) the shared file; false: pack privately */
bool		tfm_shared_precision(tfm_model *m, const TfmModelRow *row, tfm_precision p);

/* ---- the per-backend cache (cache.c) ---- */
/*
 * When a cache entry was last checked against the catalog: valid for the
 * rest of that statement (same transaction, command and statement start).
 */
typedef struct TfmStamp
{
	uint32		lxid;
	uint32		cid;
	int64		stmt_start;
} TfmStamp;
void		tfm_stamp_now(TfmStamp *s);
bool		tfm_stamp_is_now(const TfmStamp *s);

/*
 * The model named name, loaded once per backend and version.  The returned
 * model belongs to the cache: use it within the current call only.
 */
tfm_model  *tfm_cache_get(const char *name, const TfmModelRow **row);
/*
 * The model for an inference function: from the cache, checked to have the
 * task (and, if text is read or written, a tokenizer).
 */
tfm_model  *tfm_model_for(const char *name, tfm_task task, bool needs_tokenizer,
						  const TfmModelRow **rowp);
/* take a model out of the cache (for training); the caller owns it */
tfm_model  *tfm_cache_take(const char *name, TfmModelRow *row);
/* hand a model (and its row, copied) to the cache */
void		tfm_cache_put(const TfmModelRow *row, tfm_model *m);
void		tfm_cache_forget(const char *name);
/* the alias tfm_classify(text) resolves; errors if nothing is deployed as it */
#define TFM_DEFAULT_ALIAS "default"
const char *tfm_default_alias(void);
/* errors if an alias has this name (models and aliases share one namespace; deploy.c) */
void		tfm_check_not_alias(const char *name);
/* is there a row of this name in a catalog table (tfm.models, tfm.aliases)? */
bool		tfm_catalog_has(const char *table, const char *name);

/* ---- core objects owned by a memory context (guard.c) ---- */
/* free m when the current memory context is reset or deleted, unless released */
typedef struct TfmGuard TfmGuard;
TfmGuard   *tfm_guard_model(tfm_model *m);
/* the same for any object with its free function */
TfmGuard   *tfm_guard(void (*free_fn) (void *), void *obj);
void		tfm_guard_release(TfmGuard *g);

/* ---- argument checks ---- */
#define TFM_ARG_NOT_NULL(n, what) \
	do { if (PG_ARGISNULL(n)) ereport(ERROR, \
		(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), \
		 errmsg("%s must not be NULL", what))); } while (0)

char	   *tfm_text_arg(FunctionCallInfo fcinfo, int n, const char *what);
/* a text[] argument: not NULL, one-dimensional, NULL elements refused unless allowed */
int			tfm_text_array_arg(FunctionCallInfo fcinfo, int n, const char *what,
							   bool allow_nulls, Datum **elems, bool **nulls);
/* a one-dimensional text[] of n values (nulls may be NULL) */
ArrayType  *tfm_text_array(Datum *values, bool *nulls, int n);

#endif							/* TFM_PG_H */
