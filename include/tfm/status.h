/*
 * tfm/status.h: the one error convention of the numeric core (plain C, no
 * postgres.h).
 *
 * A function that can fail returns a tfm_code: TFM_OK (0) or one of the
 * negative codes of tfm/status_codes.h.  One that has something to say
 * about a failure also takes a tfm_status *st (may be NULL) and fills it
 * with the code and a one-line message (lower case, no period, names
 * quoted) that the SQL layer reports as is; on success st is left alone.  Functions that only
 * fail for want of memory return TFM_ENOMEM, or NULL for a pointer.
 *
 * The codes are the distinctions the SQL layer needs to pick a SQLSTATE
 * (src/pg/base/errors.c maps each to one): they say what kind of failure it
 * was, the message says which.  The codes and the tfm_status record are in
 * tfm/status_codes.h, which the public headers that only name them
 * include; this header adds the functions that fill and read them
 * (src/core/util/status.c).
 */
#ifndef TFM_STATUS_H
#define TFM_STATUS_H

#include <stddef.h>

#include "tfm/status_codes.h"

#ifdef __cplusplus
extern "C" {
#endif

/* "out of memory", "invalid argument", ...; "unknown status" for another int */
const char *tfm_code_name(int code);

/*
 * Fill st (if not NULL) with code and the message fmt formats (cut to fit,
 * on a UTF-8 boundary);
 * returns code, so a failure reads  return tfm_status_set(st, TFM_EINVAL, ...);
 */
int			tfm_status_set(tfm_status *st, int code, const char *fmt,...)
#if defined(__GNUC__)
			__attribute__((format(printf, 3, 4)))
#endif
			;

/* length of the longest prefix of s[0 .. n) that ends on a UTF-8 boundary */
size_t		tfm_utf8_cut(const char *s, size_t n);

/* length of the strict UTF-8 sequence at s (n > 0 bytes left: no
 * overlongs, surrogates or values past U+10FFFF), or 0 if there is none */
size_t		tfm_utf8_seq(const unsigned char *s, size_t n);

/* st's message, or the code's name when it has none */
const char *tfm_status_msg(const tfm_status *st, int code);

#ifdef __cplusplus
}
#endif

#endif							/* TFM_STATUS_H */
