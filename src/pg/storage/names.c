/*
 * names.c — the one limit on the names of models, tokenizers and deployment
 * aliases: at most TFM_NAME_MAX bytes, never empty.
 *
 * Every name that enters tfm is checked here, whether it names something new
 * (create, copy, rename, import, tokenizer train and import, deploy) or
 * something to look up: a name past the limit is SQLSTATE 42622
 * (name_too_long), the same error PostgreSQL gives for identifiers it cannot
 * keep whole, instead of being cut and then compared with the full name.
 * The catalog tables hold the same limit as CHECK constraints.
 */
#include "postgres.h"

#include "mb/pg_wchar.h"

#include "storage/storage.h"

void
tfm_check_name(const char *kind, const char *name)
{
	size_t		len = strlen(name);

	if (len > TFM_NAME_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_NAME_TOO_LONG),
				 errmsg("%s name \"%.*s...\" is too long", kind,
						pg_mbcliplen(name, (int) len, 32), name),
				 errdetail("Names of models, tokenizers and aliases are at most %d bytes; this one has %zu.",
						   TFM_NAME_MAX, len)));
}

void
tfm_check_new_name(const char *kind, const char *name)
{
	if (name[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s %s name must not be empty", strchr("aeiou", kind[0]) ? "an" : "a", kind)));
	tfm_check_name(kind, name);
}

void
tfm_tokenizer_missing(const char *name)
{
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_OBJECT),
			 errmsg("tokenizer \"%s\" does not exist", name)));
}
