/*
 * base.h — what every room of the PostgreSQL layer uses: core objects owned
 * by memory contexts (guard.c), and the core's results and polls as
 * PostgreSQL errors and interrupts (errors.c).
 */
#ifndef TFM_PG_BASE_H
#define TFM_PG_BASE_H

#include "postgres.h"

#include "base/pg_compat.h"

#include "tfm/model.h"
#include "tfm/status.h"
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
 * The one place a core failure becomes a PostgreSQL report: the SQLSTATE of
 * code (a tfm_code; tfm_sqlstate is the map), the message, and a detail
 * and hint when not NULL.  elevel ERROR does not return.
 */
int			tfm_sqlstate(int code);
void		tfm_report(int elevel, int code, const char *message, const char *detail,
					   const char *hint);
/*
 * A core call's result rc with its status st (may be NULL): TFM_OK
 * returns; otherwise ERROR "<what>: <message>", or the message alone when
 * what is NULL (the message is st's, or the code's name when it has none).
 */
void		tfm_raise(int rc, const tfm_status *st, const char *what);
/* an ERROR of that code with a message the PG layer formats */
pg_noreturn void tfm_raise_code(int code, const char *fmt,...) pg_attribute_printf(2, 3);
/*
 * A pass's result (tfm_model_forward, tfm_decoder_feed/encode): an id
 * outside the vocabulary (TFM_EBADID) or out of memory become errors.
 * model may be NULL.
 */
void		tfm_check_pass(int rc, const char *model);
/* a loss (tfm_model_loss_backward) whose *count is -1: a target outside the vocabulary */
double		tfm_check_loss(double sum, const int *count, const char *model);

#endif							/* TFM_PG_BASE_H */
