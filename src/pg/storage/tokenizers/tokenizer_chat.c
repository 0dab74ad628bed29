/*
 * tokenizer_chat.c — a tokenizer's chat settings in its row:
 * tfm.tokenizers.options->'chat' holds the model's chat template (the Jinja
 * text of its tokenizer_config.json), the bos and eos token texts the
 * template may print, the texts of the special tokens a rendered prompt is
 * split at, and the ids generation stops at.  Written by the import
 * (import/chat_config.c), read by tfm_chat (runtime/infer/chat_prompt.c); dumped with
 * the tokenizer.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"

#include "storage/storage.h"
#include "storage/tokenizers/tokenizer_chat.h"

void
tfm_tokenizer_chat_store(const char *tokenizer, const char *chat_json)
{
	Oid			types[2] = {TEXTOID, TEXTOID};
	Datum		args[2];

	args[0] = CStringGetTextDatum(tokenizer);
	args[1] = CStringGetTextDatum(chat_json);
	if (tfm_spi_exec_owner("UPDATE tfm.tokenizers SET options = options || jsonb_build_object('chat', $2::jsonb) "
						   "WHERE name = $1", 2, types, args, NULL, false, 0,
						   SPI_OK_UPDATE, "cannot update tfm.tokenizers") != 1)
		tfm_tokenizer_missing(tokenizer);
}

Jsonb *
tfm_tokenizer_chat_read(const char *tokenizer)
{
	TfmOwnerRow r;
	Oid			types[1] = {TEXTOID};
	Datum		args[1] = {CStringGetTextDatum(tokenizer)};
	Jsonb	   *chat = NULL;
	bool		isnull;

	if (tfm_owner_row_read(&r, "SELECT options->'chat' FROM tfm.tokenizers WHERE name = $1",
						   1, types, args, true, "cannot read tfm.tokenizers"))
	{
		Datum		d = tfm_owner_row_col(&r, 1, &isnull);

		if (!isnull)
		{
			MemoryContext old = MemoryContextSwitchTo(r.cxt);

			chat = DatumGetJsonbPCopy(d);
			MemoryContextSwitchTo(old);
		}
	}
	tfm_owner_row_end(&r);
	return chat;
}
