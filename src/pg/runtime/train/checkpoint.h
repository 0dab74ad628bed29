/*
 * checkpoint.h — the state of an interrupted tfm_fit run (checkpoint.c),
 * kept in tfm.checkpoints and tfm.checkpoint_tensors (storage/models/checkpoints.c).
 */
#ifndef TFM_CHECKPOINT_H
#define TFM_CHECKPOINT_H

#include "runtime/train/train_run.h"
#include "storage/models/models.h"

/* bump when the state's layout changes; read_state reads the older ones too */
#define TFM_CHECKPOINT_VERSION 4

/*
 * A fresh run of a model with an interrupted run's checkpoint: say so
 * (NOTICE, with how to resume) and discard the checkpoint.
 */
void		tfm_checkpoint_forget(const TfmModelRow *row);
/*
 * Write the run's state beside the weights it has just saved (same
 * transaction).  Between chunks (epoch_end false) the reader has consumed
 * rd.row_number rows of this epoch; at an epoch's end the next epoch starts
 * from its first row.
 */
void		tfm_checkpoint_write(TrainRun *run, bool epoch_end);
/* the run finished: its checkpoint goes */
void		tfm_checkpoint_delete(const TfmModelRow *row);
/*
 * Restore the interrupted run of run->row's model: options, query, state,
 * optimizer moments and the validation set; the reader is left open at the
 * row after the last one consumed (or closed at an epoch's start).
 * Errors (55000) if there is none, or the model was saved since.  query is
 * the caller's, or NULL to run the stored one: before anything runs, a query
 * given must equal the stored one, and only the role that started the run
 * may resume it without one (42501).
 */
void		tfm_checkpoint_resume(TrainRun *run, const char *query);

#endif							/* TFM_CHECKPOINT_H */
