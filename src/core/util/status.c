/*
 * status.c — the core's one error convention (see tfm/status.h): the codes'
 * names and the filling of a tfm_status.
 */
#include <stdarg.h>
#include <stdio.h>

#include "tfm/status.h"

const char *
tfm_code_name(int code)
{
	switch (code)
	{
		case TFM_OK:
			return "ok";
		case TFM_ENOMEM:
			return "out of memory";
		case TFM_EBADID:
			return "an id outside the vocabulary";
		case TFM_ECANCELED:
			return "canceled";
		case TFM_EINVAL:
			return "invalid argument";
		case TFM_EFORMAT:
			return "malformed data";
		case TFM_EBADFILE:
			return "invalid file";
		case TFM_EUNSUPPORTED:
			return "not supported";
		case TFM_ERANGE:
			return "value out of range";
		case TFM_ELIMIT:
			return "size limit exceeded";
	}
	return "unknown status";
}

int
tfm_status_set(tfm_status *st, int code, const char *fmt,...)
{
	if (st)
	{
		va_list		ap;

		st->code = (tfm_code) code;
		va_start(ap, fmt);
		vsnprintf(st->msg, sizeof(st->msg), fmt, ap);
		va_end(ap);
	}
	return code;
}

const char *
tfm_status_msg(const tfm_status *st, int code)
{
	return st && st->msg[0] ? st->msg : tfm_code_name(code);
}
