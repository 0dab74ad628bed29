/*
 * errors.c — the core's results as PostgreSQL errors, and its polls as
 * interrupts: a pass's status, a loss over a target outside the
 * vocabulary, a tokenizer status, CHECK_FOR_INTERRUPTS between blocks, and
 * the polled packing of a model for bf16/int8.
 */
#include "postgres.h"

#include "miscadmin.h"

#include "base/base.h"

/* between blocks of a pass: a cancel or statement_timeout ends it there */
void
tfm_poll_interrupts(void *arg)
{
	(void) arg;
	CHECK_FOR_INTERRUPTS();
}

int
tfm_interrupt_pending(void *arg)
{
	(void) arg;
	return InterruptPending && INTERRUPTS_CAN_BE_PROCESSED();
}

void
tfm_check_pass(int rc, const char *model)
{
	if (rc == 0)
		return;
	if (rc == TFM_EBADID)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 model ? errmsg("a token id is outside the vocabulary of model \"%s\"", model) :
				 errmsg("a token id is outside the model's vocabulary")));
	ereport(ERROR,
			(errcode(ERRCODE_OUT_OF_MEMORY),
			 model ? errmsg("out of memory running model \"%s\"", model) :
			 errmsg("out of memory running the model")));
}

double
tfm_check_loss(double sum, const int *count, const char *model)
{
	if (*count < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 model ? errmsg("a target token id is outside the vocabulary of model \"%s\"", model) :
				 errmsg("a target token id is outside the model's vocabulary")));
	return sum;
}

/*
 * Pack m for p; a cancel or statement_timeout stops the packing (the model
 * stays at fp32) and is raised here.  0, or -1 without the memory.
 */
int
tfm_pack_model(tfm_model *m, tfm_precision p)
{
	for (;;)
	{
		int			rc = tfm_model_set_precision_polled(m, p, tfm_interrupt_pending, NULL);

		if (rc != -2)
			return rc;
		CHECK_FOR_INTERRUPTS();
	}
}

/* a tokenizer status of the core as an ERROR: "<doing>: <message>" */
void
tfm_tok_check(int status, const tfm_tok_err *err, const char *doing)
{
	int			code;

	if (status == TFM_TOK_OK)
		return;
	switch (status)
	{
		case TFM_TOK_ENOMEM:
			code = ERRCODE_OUT_OF_MEMORY;
			break;
		case TFM_TOK_EVOCAB:
		case TFM_TOK_EARG:
			code = ERRCODE_INVALID_PARAMETER_VALUE;
			break;
		case TFM_TOK_EFORMAT:
			code = ERRCODE_INVALID_TEXT_REPRESENTATION;
			break;
		case TFM_TOK_ERANGE:
			code = ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE;
			break;
		case TFM_TOK_ELIMIT:
			code = ERRCODE_PROGRAM_LIMIT_EXCEEDED;
			break;
		case TFM_TOK_ECANCEL:
			code = ERRCODE_QUERY_CANCELED;
			break;
		default:
			code = ERRCODE_INTERNAL_ERROR;
	}
	ereport(ERROR,
			(errcode(code),
			 errmsg("%s: %s", doing,
					err && err->msg[0] ? err->msg : tfm_tok_status_name(status))));
}
