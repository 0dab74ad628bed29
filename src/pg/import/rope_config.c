/*
 * rope_config.c — a config.json's rope_scaling, read strictly for the
 * Llama family (config.c): absent or null is none; {"rope_type": "llama3"}
 * (Llama 3.1 and 3.2; "type" in older files) with its factor,
 * low_freq_factor, high_freq_factor and original_max_position_embeddings,
 * all required as transformers' rope validation requires them; any other
 * type is refused by name.  Gemma 3 (linear): {"rope_type": "linear"} with
 * its factor (the global layers' frequencies divided by it) or "default".
 * Phi-3 (tfm_hf_phi3_rope): null, or "longrope" with its short and long
 * factors, and partial_rotary_factor.
 */
#include "postgres.h"

#include <math.h>

#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"

#include "import/hf_files.h"
#include "base/json_fields.h"
#include "tfm/limits.h"

/* rope_scaling's number key, required, between lo and hi */
static double
rope_number(JsonbContainer *rs, const char *key, double lo, double hi)
{
	JsonbValue	buf,
			   *v = tfm_jget(rs, key, &buf);
	double		d;

	if (!v || v->type != jbvNumeric)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("config.json rope_scaling field \"%s\" must be a number, not %s", key,
						v ? tfm_jtype(v) : "absent")));
	d = DatumGetFloat8(DirectFunctionCall1(numeric_float8, NumericGetDatum(v->val.numeric)));
	if (!(d >= lo && d <= hi))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("config.json rope_scaling field \"%s\" must be between %g and %g, not %g",
						key, lo, hi, d)));
	return d;
}

/* rope_scaling's type ("rope_type", or "type" in older files), or NULL */
static char *
rope_type_name(JsonbContainer *rs)
{
	JsonbValue	buf,
			   *t = tfm_jget(rs, "rope_type", &buf);

	if (!t || t->type != jbvString)
		t = tfm_jget(rs, "type", &buf);
	return t && t->type == jbvString ? pnstrdup(t->val.string.val, t->val.string.len) : NULL;
}

/* config.json's rope_scaling object, or NULL when absent or null */
static JsonbContainer *
rope_scaling_object(JsonbContainer *c)
{
	JsonbValue	buf,
			   *v = tfm_jget(c, "rope_scaling", &buf);

	if (!v || v->type == jbvNull)
		return NULL;
	if (v->type != jbvBinary || !JsonContainerIsObject(v->val.binary.data))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("config.json field \"rope_scaling\" must be an object or null, not %s",
						tfm_jtype(v))));
	return v->val.binary.data;
}

void
tfm_hf_rope_scaling(JsonbContainer *c, tfm_hf_params *p, const char *family, bool linear)
{
	JsonbContainer *rs = rope_scaling_object(c);
	char	   *type;

	if (!rs)
		return;
	type = rope_type_name(rs);
	if (linear && type && strcmp(type, "linear") == 0)
	{
		p->rope_type = TFM_ROPE_LINEAR;
		p->rope_factor = (float) rope_number(rs, "factor", 1.0, TFM_ROPE_FACTOR_MAX);
		return;
	}
	if (linear && (!type || strcmp(type, "default") == 0))
		return;					/* Gemma 3's configs may name the unscaled type */
	if (!type || strcmp(type, "llama3") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("config.json rope_scaling type \"%s\" is not supported", type ? type : "?"),
				 errdetail("tfm implements %s with unscaled rotary positions or Llama 3.1's \"llama3\" scaling.",
						   family),
				 linear ? errhint("tfm implements %s's rope_scaling types \"linear\" and \"default\".", family) : 0));
	p->rope_type = TFM_ROPE_LLAMA3;
	p->rope_factor = (float) rope_number(rs, "factor", 1.0, TFM_ROPE_FACTOR_MAX);
	p->rope_low_freq = (float) rope_number(rs, "low_freq_factor", 1e-6, TFM_ROPE_FACTOR_MAX);
	p->rope_high_freq = (float) rope_number(rs, "high_freq_factor", 1e-6, TFM_ROPE_FACTOR_MAX);
	if (!(p->rope_high_freq > p->rope_low_freq))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("config.json rope_scaling high_freq_factor must be greater than low_freq_factor")));
	p->rope_orig_max = (int) rope_number(rs, "original_max_position_embeddings", 1, TFM_ROPE_ORIG_MAX);
	if ((double) p->rope_orig_max != rope_number(rs, "original_max_position_embeddings", 1, TFM_ROPE_ORIG_MAX))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("config.json rope_scaling field \"original_max_position_embeddings\" must be an integer")));
}

/* a factors array of rope_scaling into out: at most TFM_ROPE_FACTORS_MAX numbers, each
 * greater than 0 and at most TFM_ROPE_FACTOR_MAX; its length */
static int
rope_factors(JsonbContainer *rs, const char *key, float *out)
{
	JsonbValue	buf,
			   *v = tfm_jget(rs, key, &buf);
	JsonbContainer *a;
	int			n;

	if (!v || v->type != jbvBinary || !JsonContainerIsArray(v->val.binary.data))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("config.json rope_scaling field \"%s\" must be an array of numbers, not %s",
						key, v ? tfm_jtype(v) : "absent")));
	a = v->val.binary.data;
	n = (int) JsonContainerSize(a);
	if (n < 1 || n > TFM_ROPE_FACTORS_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("config.json rope_scaling field \"%s\" has %d values; tfm takes 1 to %d (one a rotated pair of a head)",
						key, n, TFM_ROPE_FACTORS_MAX)));
	for (int i = 0; i < n; i++)
	{
		JsonbValue *e = getIthJsonbValueFromContainer(a, i);
		double		d;

		if (!e || e->type != jbvNumeric)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("config.json rope_scaling field \"%s\" value %d must be a number, not %s",
							key, i, e ? tfm_jtype(e) : "absent")));
		d = DatumGetFloat8(DirectFunctionCall1(numeric_float8, NumericGetDatum(e->val.numeric)));
		if (!(d > 0.0 && d <= TFM_ROPE_FACTOR_MAX))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("config.json rope_scaling field \"%s\" value %d must be greater than 0 and at most %d, not %g",
							key, i, TFM_ROPE_FACTOR_MAX, d)));
		out[i] = (float) d;
	}
	return n;
}

void
tfm_hf_phi3_rope(JsonbContainer *c, tfm_hf_params *p)
{
	JsonbValue	buf,
			   *v = tfm_jget(c, "partial_rotary_factor", &buf),
			   *at;
	JsonbContainer *rs;
	char	   *type;
	double		orig,
				factor;

	if (v && v->type != jbvNull)
	{
		if (v->type != jbvNumeric)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("config.json field \"partial_rotary_factor\" must be a number, not %s",
							tfm_jtype(v))));
		p->rope_partial = DatumGetFloat8(DirectFunctionCall1(numeric_float8,
															 NumericGetDatum(v->val.numeric)));
		if (!(p->rope_partial > 0.0 && p->rope_partial <= 1.0))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("config.json field \"partial_rotary_factor\" must be greater than 0 and at most 1, not %g",
							p->rope_partial)));
	}
	if ((rs = rope_scaling_object(c)) == NULL)
		return;
	type = rope_type_name(rs);
	if (!type || (strcmp(type, "longrope") != 0 && strcmp(type, "su") != 0 && strcmp(type, "yarn") != 0))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("config.json rope_scaling type \"%s\" is not supported", type ? type : "?"),
				 errdetail("tfm implements Phi-3 with unscaled rotary positions (rope_scaling null) or \"longrope\" (\"su\", \"yarn\"), as transformers' Phi3Config reads them.")));
	p->rope_type = TFM_ROPE_LONGROPE;
	p->rope_n_short = rope_factors(rs, "short_factor", p->rope_short);
	p->rope_n_long = rope_factors(rs, "long_factor", p->rope_long);
	/* Phi3Config's original_max_position_embeddings (4096 by default) */
	v = tfm_jget(c, "original_max_position_embeddings", &buf);
	orig = 4096;
	if (v && v->type != jbvNull)
	{
		if (v->type != jbvNumeric)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("config.json field \"original_max_position_embeddings\" must be a number, not %s",
							tfm_jtype(v))));
		orig = DatumGetFloat8(DirectFunctionCall1(numeric_float8, NumericGetDatum(v->val.numeric)));
	}
	if (!(orig >= 2 && orig <= TFM_ROPE_ORIG_MAX) || orig != floor(orig))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("config.json field \"original_max_position_embeddings\" must be an integer between 2 and %d, not %g",
						TFM_ROPE_ORIG_MAX, orig)));
	p->rope_orig_max = (int) orig;
	/* transformers' _compute_longrope_parameters: attention_factor if given, else from
	 * factor = max_position_embeddings / original_max_position_embeddings */
	at = tfm_jget(rs, "attention_factor", &buf);
	if (at && at->type != jbvNull)
		p->rope_attn_factor = (float) rope_number(rs, "attention_factor", 1.0, TFM_ROPE_ATTN_FACTOR_MAX);
	else
	{
		factor = (double) p->max_len / orig;
		p->rope_attn_factor = factor <= 1.0 ? 1.0f :
			(float) sqrt(1.0 + log(factor) / log(orig));
	}
}
