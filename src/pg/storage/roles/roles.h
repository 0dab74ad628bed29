/*
 * roles.h — what roles hold in tfm's catalog (storage/roles/): owners and
 * grants of models, tokenizers and aliases (grants.c: the rows behind
 * tfm_grant and tfm_revoke, and the owner checks), what a role owns
 * (owned.c: the rows behind tfm_reassign_owned and tfm_drop_owned).
 */
#ifndef TFM_PG_STORAGE_ROLES_H
#define TFM_PG_STORAGE_ROLES_H

#include "postgres.h"

#include "storage/storage.h"

/* ---- grants on models, tokenizers and aliases (grants.c) ---- */
typedef struct TfmObject
{
	const char *table;			/* tfm.models, tfm.tokenizers or tfm.aliases */
	const char *kind;			/* model, tokenizer or alias */
	int32		id;
	TfmAcl		acl;
} TfmObject;
/* an object by name, of kind type (NULL: model, else tokenizer, else alias) */
bool		tfm_object_find(const char *name, const char *type, TfmObject *o);
/* the same, checked: type must be NULL, "model", "tokenizer" or "alias"; a
 * missing object is 42704 unless missing_ok */
bool		tfm_object_lookup(const char *name, const char *type, TfmObject *o, bool missing_ok);
/* errors 42501 unless the current user owns o */
void		tfm_check_object_owner(const TfmObject *o, const char *name);
/* the owner (and not a replicated object: tfm_check_local) may do action */
void		tfm_check_tokenizer_owner(const char *action, const char *name);
/* only the row's owner columns: works on models this build cannot load */
void		tfm_check_model_owner(const char *action, const char *name);
/* grant or revoke priv to grantee (InvalidOid: PUBLIC); the rows changed */
uint64		tfm_object_acl_change(const TfmObject *o, Oid grantee, TfmPriv priv, bool grant);

/* ---- what roles own (owned.c) ---- */
/* models, tokenizers and aliases of old_role to new_role; how many */
uint64		tfm_owned_reassign(Oid old_role, Oid new_role);
/* drop role's objects and its grants; how many; the dropped models' ids
 * and names (allocated in the caller's context) */
uint64		tfm_owned_drop(Oid role, int *n_models, int32 **models, char ***names);

#endif							/* TFM_PG_STORAGE_ROLES_H */
