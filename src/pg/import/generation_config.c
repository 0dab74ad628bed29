/*
 * generation_config.c — an imported encoder-decoder's generation settings
 * (Hugging Face's generation_config.json, or the keys of config.json that
 * generate() reads when there is no such file), kept in the model's config
 * as "generation": {"num_beams", "length_penalty", "max_tokens"} (a
 * seq2seq model's only).  tfm_translate, tfm_translate_nbest and
 * tfm_evaluate take them for the options a call leaves NULL
 * (runtime/infer/translator.c).  As generate(): a
 * model that states any of them searches with num_beams (absent: 1) and
 * length_penalty (absent: 1.0); max_new_tokens, else max_length − 1 (the
 * start token counts in generate's), bounds the output, else tfm's
 * per-source default (generate's 20 would cut most sentences).  Models
 * that state none keep tfm's defaults (beam 4, length penalty 0.6).
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"

#include "import/hf_files.h"
#include "base/json_fields.h"
#include "storage/storage.h"

/* a number of c's key, or NULL when absent or null; else it must be a number */
static JsonbValue *
number_field(JsonbContainer *c, const char *key, JsonbValue *buf, const char *file)
{
	JsonbValue *v = c ? tfm_jget(c, key, buf) : NULL;

	if (!v || v->type == jbvNull)
		return NULL;
	if (v->type != jbvNumeric)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s option \"%s\" must be a number", file, key)));
	return v;
}

static double
number_of(const JsonbValue *v)
{
	return DatumGetFloat8(DirectFunctionCall1(numeric_float8, NumericGetDatum(v->val.numeric)));
}

/* v as an integer lo..hi, else an error naming the file's key */
static int
int_of(const JsonbValue *v, const char *file, const char *key, int lo, int hi)
{
	double		d = number_of(v);

	if (d != floor(d) || d < lo || d > hi)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s option \"%s\" must be an integer between %d and %d", file, key, lo, hi)));
	return (int) d;
}

void
tfm_hf_store_generation(const char *name, Jsonb *generation_config, Jsonb *config)
{
	JsonbContainer *c;
	const char *file;
	bool		from_config = false;
	JsonbValue	b1,
				b2,
				b3,
				b4,
			   *beams,
			   *lp,
			   *max_len,
			   *max_new;
	int			n_beams = 1,
				max_tokens = 0;
	double		length_penalty = 1.0;
	Oid			argtypes[4] = {TEXTOID, INT4OID, FLOAT8OID, INT4OID};
	Datum		args[4];
	char		nulls[4] = {' ', ' ', ' ', ' '};

	if (generation_config && JB_ROOT_IS_OBJECT(generation_config))
	{
		c = &generation_config->root;
		file = "generation_config.json";
	}
	else if (config && JB_ROOT_IS_OBJECT(config))
	{
		c = &config->root;
		file = "config.json";
		from_config = true;
	}
	else
		return;
	/* only an encoder-decoder searches: a decoder's config keys are not read */
	{
		Oid			t = TEXTOID;
		Datum		a = CStringGetTextDatum(name);
		bool		s2s;

		TfmAsOwner	as;

		/* the catalog as the owner of schema tfm (the importer just made the model) */
		tfm_spi_connect_owner(&as);
		s2s = tfm_spi_exec("SELECT 1 FROM tfm.models WHERE name = $1 AND task = 'seq2seq'",
						   1, &t, &a, NULL, false, 1, SPI_OK_SELECT, "cannot read tfm.models") == 1;
		tfm_spi_finish_owner(&as);
		if (!s2s)
			return;
	}
	beams = number_field(c, "num_beams", &b1, file);
	lp = number_field(c, "length_penalty", &b2, file);
	max_len = number_field(c, "max_length", &b3, file);
	max_new = number_field(c, "max_new_tokens", &b4, file);
	/* a config.json without generation keys states nothing; a
	 * generation_config.json states generate()'s defaults at least */
	if (!beams && !lp && !max_len && !max_new && from_config)
		return;
	if (beams)
		n_beams = int_of(beams, file, "num_beams", 1, 64);
	if (lp)
	{
		length_penalty = number_of(lp);
		if (!isfinite(length_penalty) || length_penalty < 0 || length_penalty > 100)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s option \"length_penalty\" must be between 0 and 100", file),
					 errdetail("tfm ranks finished hypotheses by log-probability / length^length_penalty; "
							   "a negative penalty (favouring short outputs) is not supported.")));
	}
	if (max_new)
		max_tokens = int_of(max_new, file, "max_new_tokens", 1, 100000);
	else if (max_len)
		max_tokens = int_of(max_len, file, "max_length", 2, 100001) - 1;

	args[0] = CStringGetTextDatum(name);
	args[1] = Int32GetDatum(n_beams);
	args[2] = Float8GetDatum(length_penalty);
	args[3] = Int32GetDatum(max_tokens);
	if (max_tokens == 0)
		nulls[3] = 'n';
	{
		TfmAsOwner	as;

		tfm_spi_connect_owner(&as);
		(void) tfm_spi_exec("UPDATE tfm.models SET config = config || jsonb_build_object('generation', "
							"jsonb_build_object('num_beams', $2, 'length_penalty', $3, 'max_tokens', $4)) "
							"WHERE name = $1 AND task = 'seq2seq'",
							4, argtypes, args, nulls, false, 0, SPI_OK_UPDATE,
							"cannot store the generation settings of the model");
		tfm_spi_finish_owner(&as);
	}
}
