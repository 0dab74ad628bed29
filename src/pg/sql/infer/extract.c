/*
 * extract.c — tfm_extract(model, input, schema): fields pulled out of a
 * text into jsonb by a language model whose decoding is constrained by the
 * JSON schema (runtime/infer/json_constraint.c), so the value always
 * parses and follows the schema.
 *
 * The prompt (doc/reference.md, Structured extraction):
 *
 *   Extract the fields of the text below as JSON following this schema.
 *   Schema: <the schema as jsonb writes it>
 *   Text: <input>
 *   JSON:<space>
 *
 * trimmed to the model's last max_len tokens like any prompt.  Greedy by
 * default (temperature 0).  A NULL model, input or schema answers NULL.
 * And tfm_json_matches(schema, text): is a text in the schema's language.
 */
#include "postgres.h"

#include <math.h>

#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/jsonb.h"

#include "sql/args.h"
#include "runtime/infer/infer.h"
#include "runtime/infer/json_constraint.h"
#include "runtime/cache/tokenizer_cache.h"
#include "runtime/cache/model_cache.h"
#include "storage/models/models.h"

#define TFM_EXTRACT_MAX_TOKENS 100000

PG_FUNCTION_INFO_V1(tfm_extract);
Datum
tfm_extract(PG_FUNCTION_ARGS)
{
	char	   *name;
	text	   *input;
	Jsonb	   *schema;
	const TfmModelRow *row;
	tfm_model  *m;
	GenOpts		o;
	GenRow		g;
	TfmSpecials sp;
	StringInfoData prompt;
	int32	   *ids;
	int			n;
	text	   *out;
	char	   *schema_text;

	if (tfm_args_null(fcinfo, 0, 1) || PG_ARGISNULL(2))
		PG_RETURN_NULL();
	name = tfm_text_arg(fcinfo, 0, "model");
	input = PG_GETARG_TEXT_PP(1);
	schema = PG_GETARG_JSONB_P(2);
	memset(&o, 0, sizeof(o));
	o.max_tokens = PG_ARGISNULL(3) ? 256 : PG_GETARG_INT32(3);
	if (o.max_tokens < 1 || o.max_tokens > TFM_EXTRACT_MAX_TOKENS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_tokens must be between 1 and %d, not %d", TFM_EXTRACT_MAX_TOKENS,
						o.max_tokens)));
	o.temperature = PG_ARGISNULL(4) ? 0.0f : PG_GETARG_FLOAT4(4);
	if (!(o.temperature >= 0.0f) || isinf(o.temperature))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("temperature must be 0 (greedy) or positive")));
	o.top_p = 1.0f;
	o.seed = PG_ARGISNULL(5) ? 0 : (uint64) PG_GETARG_INT64(5);
	o.json = tfm_json_schema_compile(schema);

	m = tfm_model_for(name, TFM_TASK_LM, true, &row);
	schema_text = JsonbToCString(NULL, &schema->root, VARSIZE(schema));
	initStringInfo(&prompt);
	appendStringInfoString(&prompt, "Extract the fields of the text below as JSON following this schema.\nSchema: ");
	appendStringInfoString(&prompt, schema_text);
	appendStringInfoString(&prompt, "\nText: ");
	appendBinaryStringInfo(&prompt, VARDATA_ANY(input), VARSIZE_ANY_EXHDR(input));
	appendStringInfoString(&prompt, "\nJSON: ");
	ids = tfm_tokenizer_encode(row->tokenizer, prompt.data, prompt.len, &n);
	ids = repalloc(ids, sizeof(int32) * (n + 1));
	tfm_model_specials(row, &sp);
	tfm_trim_prompt(row, &sp, ids, &n);
	tfm_generate_prompts(m, row, &ids, &n, 1, &o, &g);
	out = tfm_generated_text(row, &g);
	PG_RETURN_DATUM(DirectFunctionCall1(jsonb_in, CStringGetDatum(text_to_cstring(out))));
}

/*
 * tfm_json_matches(schema, value text): is the text a whole value of the
 * schema's language (compact, properties in the schema's order) — what a
 * constrained generation can produce.
 */
PG_FUNCTION_INFO_V1(tfm_json_matches);
Datum
tfm_json_matches(PG_FUNCTION_ARGS)
{
	tfm_jschema *s = tfm_json_schema_compile(PG_GETARG_JSONB_P(0));
	text	   *t = PG_GETARG_TEXT_PP(1);

	PG_RETURN_BOOL(tfm_jschema_accepts(s, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t)) == 1);
}
