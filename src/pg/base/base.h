/*
 * base.h — what every room of the PostgreSQL layer uses: core objects owned
 * by memory contexts (guard.c), and the core's results and polls as
 * PostgreSQL errors and interrupts (errors.c).
 */
#ifndef TFM_PG_BASE_H
#define TFM_PG_BASE_H

#include "postgres.h"

#include "tfm/model.h"
#include "tfm/precision.h"
#include "tfm/tokenizer.h"

/* ---- core objects owned by a memory context (guard.c) ---- */
/* free m when the current memory context is reset or deleted, unless released */
typedef struct TfmGuard TfmGuard;
TfmGuard   *tfm_guard_model(tfm_model *m);
/* the same for any object with its free function */
TfmGuard   *tfm_guard(void (*free_fn) (void *), void *obj);
void		tfm_guard_release(TfmGuard *g);

/* a tokenizer or counter being built, freed with cxt unless taken (set NULL) */
typedef struct TfmTokOwner
{
	MemoryContextCallback cb;
	tfm_tokenizer *tok;
	tfm_tok_counter *counter;
} TfmTokOwner;
TfmTokOwner *tfm_tok_owner(MemoryContext cxt);

/* ---- the core's results and polls (errors.c) ---- */
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
/* a tokenizer status as an ERROR "<doing>: <message>" with its SQLSTATE */
void		tfm_tok_check(int status, const tfm_tok_err *err, const char *doing);
/* pack m for p, stopped by a cancel (raised); 0, or -1 without the memory */
int			tfm_pack_model(tfm_model *m, tfm_precision p);

#endif							/* TFM_PG_BASE_H */
