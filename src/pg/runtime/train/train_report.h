/*
 * train_report.h — what a training run reports (train_report.c): its
 * progress, the rows of its evaluations (figures and notes) returned to the
 * caller, and the saves with their tfm.history rows.
 */
#ifndef TFM_TRAIN_REPORT_H
#define TFM_TRAIN_REPORT_H

#include "postgres.h"

#include "runtime/train/train_run.h"

/* the status line (each second) and, with tfm.progress, a NOTICE (each 10 s); force: now */
void		tfm_run_progress(TrainRun *run, bool force);
/* the epoch so far: steps, mean train loss, seconds, tokens/s (no validation) */
void		tfm_run_figures(TrainRun *run, TrainEpoch *e);
/* add what to a row's note ("; " between) */
void		tfm_run_note_add(char *note, const char *what);
/* append a row to the call's results */
void		tfm_run_add_result(TrainRun *run, const TrainEpoch *e);
/* the tfm.history row of an epoch's end (checkpoint 0) or a mid-epoch row */
void		tfm_run_add_history(TrainRun *run, const TrainEpoch *e, int checkpoint);
/* write the weights and a tfm.history row for an epoch's end or a checkpoint */
void		tfm_run_save(TrainRun *run, const TrainEpoch *e, int checkpoint);

#endif							/* TFM_TRAIN_REPORT_H */
