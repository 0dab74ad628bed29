/*
 * errors.c — the core's results as PostgreSQL errors, and its polls as
 * interrupts: the one map of a core code (tfm/status.h) to its SQLSTATE and
 * the one report of a failure (tfm_report, with tfm_raise for a core
 * status and tfm_raise_code for a message of the PG layer), a pass's
 * result, CHECK_FOR_INTERRUPTS between blocks, and the polled packing of a
 * model for bf16/int8.
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

/*
 * The SQLSTATE of a core code (tfm/status.h): the one table of them.
 */
int
tfm_sqlstate(int code)
{
	switch (code)
	{
		case TFM_ENOMEM:
			return ERRCODE_OUT_OF_MEMORY;
		case TFM_EBADID:
		case TFM_EINVAL:
		case TFM_EBADFILE:
			return ERRCODE_INVALID_PARAMETER_VALUE;
		case TFM_ECANCELED:
			return ERRCODE_QUERY_CANCELED;
		case TFM_EFORMAT:
			return ERRCODE_INVALID_TEXT_REPRESENTATION;
		case TFM_EUNSUPPORTED:
			return ERRCODE_FEATURE_NOT_SUPPORTED;
		case TFM_ERANGE:
			return ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE;
		case TFM_ELIMIT:
			return ERRCODE_PROGRAM_LIMIT_EXCEEDED;
	}
	return ERRCODE_INTERNAL_ERROR;
}

/*
 * The one place a core failure becomes a PostgreSQL report: code's
 * SQLSTATE, message, and the detail and hint when not NULL.
 */
void
tfm_report(int elevel, int code, const char *message, const char *detail,
		   const char *hint)
{
	ereport(elevel,
			(errcode(tfm_sqlstate(code)),
			 errmsg_internal("%s", message),
			 detail ? errdetail_internal("%s", detail) : 0,
			 hint ? errhint("%s", hint) : 0));
}

void
tfm_raise(int rc, const tfm_status *st, const char *what)
{
	const char *msg;

	if (rc == TFM_OK)
		return;
	msg = tfm_status_msg(st, rc);
	tfm_report(ERROR, rc, what ? psprintf("%s: %s", what, msg) : msg, NULL, NULL);
}

void
tfm_raise_code(int code, const char *fmt,...)
{
	char		buf[1024];
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	tfm_report(ERROR, code, buf, NULL, NULL);
	pg_unreachable();
}

void
tfm_check_pass(int rc, const char *model)
{
	if (rc == TFM_OK)
		return;
	if (rc == TFM_EBADID)
		tfm_raise_code(rc, model ? "a token id is outside the vocabulary of model \"%s\"" :
					   "a token id is outside the model's vocabulary", model);
	if (model)
		tfm_raise_code(TFM_ENOMEM, "out of memory running model \"%s\"", model);
	tfm_raise_code(TFM_ENOMEM, "out of memory running the model");
}

double
tfm_check_loss(double sum, const int *count, const char *model)
{
	if (*count < 0)
		tfm_raise_code(TFM_EBADID, model ? "a target token id is outside the vocabulary of model \"%s\"" :
					   "a target token id is outside the model's vocabulary", model);
	return sum;
}
