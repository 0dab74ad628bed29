/*
 * tfm/status_codes.h: the codes and the status record of the numeric
 * core's one error convention (plain C, no postgres.h; the convention and
 * the functions that fill a status are in tfm/status.h).
 *
 * TFM_ENOMEM (-1) and TFM_EBADID (-2) keep the values a pass has always
 * returned.
 */
#ifndef TFM_STATUS_CODES_H
#define TFM_STATUS_CODES_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tfm_code
{
	TFM_OK = 0,
	TFM_ENOMEM = -1,			/* out of memory */
	TFM_EBADID = -2,			/* an input id outside the model's vocabulary (nothing read) */
	TFM_ECANCELED = -3,			/* the caller's poll asked to stop */
	TFM_EINVAL = -4,			/* an invalid argument, option or input */
	TFM_EFORMAT = -5,			/* malformed text, rows or serialized state */
	TFM_EBADFILE = -6,			/* not a valid file of its format (safetensors, index) */
	TFM_EUNSUPPORTED = -7,		/* well formed but not supported (a dtype) */
	TFM_ERANGE = -8,			/* a value out of range (a token id, a count) */
	TFM_ELIMIT = -9				/* a size limit exceeded (piece, vocabulary, buffer) */
} tfm_code;

#define TFM_STATUS_MSG 256

typedef struct tfm_status
{
	tfm_code	code;			/* TFM_OK until a failure fills it */
	char		msg[TFM_STATUS_MSG];	/* "" when no detail */
} tfm_status;

#ifdef __cplusplus
}
#endif

#endif							/* TFM_STATUS_CODES_H */
