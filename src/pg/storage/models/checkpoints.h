/*
 * checkpoints.h — the rows of an interrupted tfm_fit run (checkpoints.c):
 * its row of tfm.checkpoints and its tensors' rows of
 * tfm.checkpoint_tensors.  What the state record holds is the runtime's
 * (runtime/train/checkpoint.c); here it is bytes.
 */
#ifndef TFM_PG_STORAGE_CHECKPOINTS_H
#define TFM_PG_STORAGE_CHECKPOINTS_H

#include "postgres.h"

#include "storage/storage.h"

/* a run's row of tfm.checkpoints */
typedef struct TfmCheckpointRow
{
	int32		model_id;
	TimestampTz run_started;
	int64		model_version;	/* the version of the weights it goes with */
	int32		epoch;
	int64		rows_done;
	int64		steps;
	char	   *query;
	char	   *options;		/* jsonb, as text (written only) */
	bytea	   *state;
	/* read only: */
	bool		running;		/* another backend runs tfm_fit on it now */
	Oid			started_by;		/* the role whose query it is */
} TfmCheckpointRow;

/* each tensor's moments (and, if best is not NULL, the best epoch's values) */
typedef struct TfmCheckpointTensors
{
	const tfm_model *m;			/* names, offsets and sizes */
	float	   *adam_m;
	float	   *adam_v;
	float	   *best;
} TfmCheckpointTensors;

/* write (or overwrite) the model's checkpoint; started_by is the current user */
void		tfm_checkpoint_store(const TfmCheckpointRow *c, const TfmCheckpointTensors *t);
/* the model's checkpoint row (copied into the caller's context); false if none */
bool		tfm_checkpoint_fetch(int32 model_id, TfmCheckpointRow *c);
/*
 * Its tensors into t's buffers: every tensor of t->m once, of its size
 * (errors XX001 naming model otherwise).
 */
void		tfm_checkpoint_fetch_tensors(int32 model_id, const char *model,
										 const TfmCheckpointTensors *t);
/* delete the model's checkpoint; false if it had none, else (unless
 * epoch is NULL) its epoch and steps as text */
bool		tfm_checkpoint_remove(int32 model_id, char **epoch, char **steps);

#endif							/* TFM_PG_STORAGE_CHECKPOINTS_H */
