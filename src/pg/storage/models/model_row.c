/*
 * model_row.c — the codec of tfm.models.config: one table of its keys,
 * used both to read the row (tfm_catalog_lookup builds its SELECT list from
 * the table, one SQL expression per key, and decodes each column through
 * it) and to write it (tfm_config_json), and the SQL that resolves a model
 * name or alias, and a job's model or alias, to a model.
 *
 * A key is an int, a real, a boolean (stored as int), a name of an enum
 * (names[i] is value i; NULL names no value) or an array of reals (longrope's
 * factors: a JSON array of at most TFM_ROPE_FACTORS_MAX numbers, written up
 * to its last non-zero value).  0.1's keys are written
 * always; later keys only when not their default.  A required key's
 * absence is a broken invariant ("tfm.models.config lacks a field"); an
 * optional one reads as its default, an unknown enum name as its
 * 'unknown' value (which tfm_config_check then refuses where it matters).
 */
#include "postgres.h"

#include "lib/stringinfo.h"
#include "utils/array.h"
#include "catalog/pg_type_d.h"

#include "tfm/layers.h"
#include "storage/models/model_row.h"

typedef enum KeyType
{
	KEY_INT,
	KEY_REAL,
	KEY_BOOL,
	KEY_ENUM,
	KEY_REALS					/* float[TFM_ROPE_FACTORS_MAX] */
} KeyType;

typedef enum KeyWrite
{
	WRITE_ALWAYS,				/* 0.1's keys */
	WRITE_NONZERO,				/* when not 0 */
	WRITE_POSITIVE,				/* when > 0 */
	WRITE_WITH_PREV,			/* whenever the key before it is written */
	WRITE_NEVER					/* read only: set by imports and tfm.models' own SQL */
} KeyWrite;

typedef struct ConfigKey
{
	const char *key;
	const char *parent;			/* NULL, or the object it is in (config->'parent'->>'key') */
	KeyType		type;
	bool		required;		/* absent: "lacks a field" */
	double		dflt;			/* absent: this (optional keys) */
	size_t		offset;			/* of its int or float in TfmModelRow */
	KeyWrite	write;
	const char *fmt;			/* KEY_REAL: the printf format written */
	float		omit;			/* KEY_REAL: a value not written either (0: none) */
	const char *const *names;	/* KEY_ENUM: names[value] */
	int			n_names;
	int			unknown;		/* KEY_ENUM: the value of a name not in names */
} ConfigKey;

#define CFG(f)	offsetof(TfmModelRow, cfg.f)
#define ROW(f)	offsetof(TfmModelRow, f)

static const char *const norm_names[] = {"post", "pre"};
static const char *const positions_names[] = {"learned", "sinusoidal", "rope", "relative"};
static const char *const activation_names[] = {"relu", "gelu", "gelu_tanh", "silu"};
static const char *const pooling_names[] = {"mean", "cls"};
static const char *const arch_names[] = {NULL, "llama", "t5"};
static const char *const gated_act_names[] = {"silu", "gelu_tanh"};
static const char *const cls_pre_names[] = {NULL, "tanh", "relu"};
static const char *const token_head_names[] = {NULL, "tags", "spans"};
static const char *const rope_type_names[] = {NULL, "llama3", "linear", "longrope"};

#define INT_KEY(k, off, req, d, w)	{k, NULL, KEY_INT, req, d, off, w, NULL, 0, NULL, 0, 0}
#define REAL_KEY(k, off, d, w, f, o) {k, NULL, KEY_REAL, false, d, off, w, f, o, NULL, 0, 0}
#define BOOL_KEY(k, off, req, w)	{k, NULL, KEY_BOOL, req, 0, off, w, NULL, 0, NULL, 0, 0}
#define REALS_KEY(k, off)	{k, NULL, KEY_REALS, false, 0, off, WRITE_NONZERO, "%.9g", 0, NULL, 0, 0}
#define ENUM_KEY(k, off, req, w, names, unk) \
	{k, NULL, KEY_ENUM, req, 0, off, w, NULL, 0, names, lengthof(names), unk}

/* in the order written; the reader's columns are in this order too */
static const ConfigKey config_keys[] = {
	INT_KEY("vocab", CFG(vocab), true, 0, WRITE_ALWAYS),
	INT_KEY("tgt_vocab", CFG(tgt_vocab), true, 0, WRITE_ALWAYS),
	INT_KEY("d_model", CFG(d_model), true, 0, WRITE_ALWAYS),
	INT_KEY("heads", CFG(heads), true, 0, WRITE_ALWAYS),
	INT_KEY("enc_layers", CFG(enc_layers), true, 0, WRITE_ALWAYS),
	INT_KEY("dec_layers", CFG(dec_layers), true, 0, WRITE_ALWAYS),
	INT_KEY("d_ff", CFG(d_ff), true, 0, WRITE_ALWAYS),
	INT_KEY("max_len", CFG(max_len), true, 0, WRITE_ALWAYS),
	INT_KEY("n_classes", CFG(n_classes), true, 0, WRITE_ALWAYS),
	ENUM_KEY("norm", CFG(norm), true, WRITE_ALWAYS, norm_names, TFM_NORM_POST),
	/* positions and activation: absent (never, since 0.1 writes them) is the first */
	ENUM_KEY("positions", CFG(positions), false, WRITE_ALWAYS, positions_names, TFM_POS_LEARNED),
	ENUM_KEY("activation", CFG(activation), false, WRITE_ALWAYS, activation_names, TFM_ACT_RELU),
	ENUM_KEY("pooling", CFG(pooling), true, WRITE_ALWAYS, pooling_names, TFM_POOL_MEAN),
	BOOL_KEY("tie_embeddings", CFG(tie), true, WRITE_ALWAYS),
	BOOL_KEY("scale_embeddings", CFG(scale_embeddings), true, WRITE_ALWAYS),
	INT_KEY("pad_id", CFG(pad_id), true, 0, WRITE_ALWAYS),
	REAL_KEY("dropout", CFG(dropout), 0, WRITE_ALWAYS, "%g", 0),
	REAL_KEY("attention_dropout", CFG(attn_dropout), 0, WRITE_ALWAYS, "%g", 0),
	/* added after 0.1: written only when not their default */
	REAL_KEY("layer_norm_eps", CFG(ln_eps), 0, WRITE_POSITIVE, "%.9g", TFM_LN_EPS),
	/* added for Llama (and T5): absent means tfm's own blocks */
	ENUM_KEY("arch", CFG(arch), false, WRITE_NONZERO, arch_names, TFM_ARCH_TFM),
	INT_KEY("kv_heads", CFG(kv_heads), false, 0, WRITE_POSITIVE),
	REAL_KEY("rope_theta", CFG(rope_theta), 0, WRITE_POSITIVE, "%.9g", 0),
	BOOL_KEY("qkv_bias", CFG(qkv_bias), false, WRITE_NONZERO),	/* added for Qwen2 */
	ENUM_KEY("gated_act", CFG(gated_act), false, WRITE_NONZERO, gated_act_names, -1), /* Gemma */
	/* added for Gemma 2 */
	BOOL_KEY("post_norms", CFG(post_norms), false, WRITE_NONZERO),
	REAL_KEY("attn_scale", CFG(attn_scale), 0, WRITE_POSITIVE, "%.9g", 0),
	REAL_KEY("attn_softcap", CFG(attn_softcap), 0, WRITE_POSITIVE, "%.9g", 0),
	REAL_KEY("final_softcap", CFG(final_softcap), 0, WRITE_POSITIVE, "%.9g", 0),
	INT_KEY("head_size", CFG(head_size), false, 0, WRITE_POSITIVE),
	/* added for BERT-family encoders */
	INT_KEY("type_vocab", CFG(type_vocab), false, 0, WRITE_NONZERO),
	BOOL_KEY("emb_norm", CFG(emb_norm), false, WRITE_NONZERO),
	INT_KEY("pos_offset", CFG(pos_offset), false, 0, WRITE_NONZERO),
	ENUM_KEY("cls_pre", CFG(cls_pre), false, WRITE_NONZERO, cls_pre_names, -1),
	ENUM_KEY("token_head", CFG(token_head), false, WRITE_NONZERO, token_head_names, -1),
	/* added for Marian */
	BOOL_KEY("sinus_halves", CFG(sinus_halves), false, WRITE_NONZERO),
	BOOL_KEY("out_bias", CFG(out_bias), false, WRITE_NONZERO),
	/* added for T5 */
	INT_KEY("rel_buckets", CFG(rel_buckets), false, 0, WRITE_NONZERO),
	INT_KEY("rel_max_distance", CFG(rel_max_distance), false, 0, WRITE_WITH_PREV),
	BOOL_KEY("ff_gated", CFG(ff_gated), false, WRITE_NONZERO),
	/* added for Llama 3.1's rope scaling */
	ENUM_KEY("rope_type", CFG(rope_type), false, WRITE_NONZERO, rope_type_names, -1),
	REAL_KEY("rope_factor", CFG(rope_factor), 0, WRITE_POSITIVE, "%.9g", 0),
	REAL_KEY("rope_low_freq", CFG(rope_low_freq), 0, WRITE_POSITIVE, "%.9g", 0),
	REAL_KEY("rope_high_freq", CFG(rope_high_freq), 0, WRITE_POSITIVE, "%.9g", 0),
	INT_KEY("rope_orig_max", CFG(rope_orig_max), false, 0, WRITE_POSITIVE),
	BOOL_KEY("qk_norm", CFG(qk_norm), false, WRITE_NONZERO),	/* added for Qwen3 */
	INT_KEY("nope_interval", CFG(nope_interval), false, 0, WRITE_POSITIVE),	/* SmolLM3 */
	/* sliding windows (Mistral, Phi-3, Gemma 2) */
	INT_KEY("attn_window", CFG(attn_window), false, 0, WRITE_POSITIVE),
	INT_KEY("window_pattern", CFG(window_pattern), false, 0, WRITE_POSITIVE),
	REAL_KEY("rope_local_theta", CFG(rope_local_theta), 0, WRITE_POSITIVE, "%.9g", 0),	/* Gemma 3 */
	/* Phi-4-mini's partial rotation, Phi-3.5's longrope */
	INT_KEY("rope_dim", CFG(rope_dim), false, 0, WRITE_POSITIVE),
	REAL_KEY("rope_attn_factor", CFG(rope_attn_factor), 0, WRITE_POSITIVE, "%.9g", 0),
	REALS_KEY("rope_short_factor", CFG(rope_short)),
	REALS_KEY("rope_long_factor", CFG(rope_long)),
	/* an imported model's bos and eos (-1: the tokenizer's) */
	INT_KEY("bos_id", ROW(bos_id), false, -1, WRITE_NEVER),
	INT_KEY("eos_id", ROW(eos_id), false, -1, WRITE_NEVER),
	/* an imported encoder-decoder's generation settings (generation_config.c) */
	{"num_beams", "generation", KEY_INT, false, 0, ROW(gen_beams), WRITE_NEVER, NULL, 0, NULL, 0, 0},
	{"length_penalty", "generation", KEY_REAL, false, -1, ROW(gen_length_penalty), WRITE_NEVER, NULL, 0, NULL, 0, 0},
	{"max_tokens", "generation", KEY_INT, false, 0, ROW(gen_max_tokens), WRITE_NEVER, NULL, 0, NULL, 0, 0},
};

/* config->>'key', or config->'parent'->>'key' */
static void
append_text(StringInfo sql, const ConfigKey *k)
{
	if (k->parent)
		appendStringInfo(sql, "config->'%s'->>'%s'", k->parent, k->key);
	else
		appendStringInfo(sql, "config->>'%s'", k->key);
}

void
tfm_model_row_config_columns(StringInfo sql)
{
	for (int i = 0; i < (int) lengthof(config_keys); i++)
	{
		const ConfigKey *k = &config_keys[i];

		appendStringInfoString(sql, ", ");
		if (k->type == KEY_ENUM)
		{
			/* absent: NULL (required) or the first value; an unknown name: k->unknown */
			appendStringInfoString(sql, "CASE WHEN ");
			append_text(sql, k);
			appendStringInfo(sql, " IS NULL THEN %s", k->required ? "NULL" : "0");
			for (int v = 0; v < k->n_names; v++)
				if (k->names[v])
				{
					appendStringInfoString(sql, " WHEN ");
					append_text(sql, k);
					appendStringInfo(sql, " = '%s' THEN %d", k->names[v], v);
				}
			appendStringInfo(sql, " ELSE %d END", k->unknown);
			continue;
		}
		if (k->type == KEY_REALS)
		{
			/* a JSON array as real[] (anything else: NULL, no factors) */
			appendStringInfo(sql, "(SELECT array_agg(e::real ORDER BY o) FROM "
							 "jsonb_array_elements_text(CASE WHEN jsonb_typeof(config->'%s') = 'array' "
							 "THEN config->'%s' END) WITH ORDINALITY AS a(e, o))", k->key, k->key);
			continue;
		}
		if (!k->required)
			appendStringInfoString(sql, "coalesce(");
		appendStringInfoChar(sql, '(');
		append_text(sql, k);
		appendStringInfoString(sql, k->type == KEY_INT ? ")::int" :
							   k->type == KEY_REAL ? ")::real" : ")::bool::int");
		if (!k->required)
			appendStringInfo(sql, ", %g)", k->dflt);
	}
}

/* a real[] column into out (TFM_ROPE_FACTORS_MAX floats, zero past its values) */
static void
decode_reals(float *out, ArrayType *a, const char *key)
{
	Datum	   *vals;
	bool	   *nulls;
	int			n;

	memset(out, 0, sizeof(float) * TFM_ROPE_FACTORS_MAX);
	if (!a)
		return;
	deconstruct_array(a, FLOAT4OID, sizeof(float4), true, TYPALIGN_INT, &vals, &nulls, &n);
	if (n > TFM_ROPE_FACTORS_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("tfm.models.config field \"%s\" has %d values, more than %d", key, n,
						TFM_ROPE_FACTORS_MAX)));
	for (int i = 0; i < n; i++)
		out[i] = nulls[i] ? 0.0f : DatumGetFloat4(vals[i]);
}

void
tfm_model_row_config_decode(TfmModelRow *row, HeapTuple tup, TupleDesc td, int first_col)
{
	for (int i = 0; i < (int) lengthof(config_keys); i++)
	{
		const ConfigKey *k = &config_keys[i];
		bool		isnull;
		Datum		d = SPI_getbinval(tup, td, first_col + i, &isnull);
		char	   *field = (char *) row + k->offset;

		if (isnull && k->required)
			elog(ERROR, "tfm.models.config lacks a field. Please report a bug.");
		if (k->type == KEY_REALS)
			decode_reals((float *) field, isnull ? NULL : DatumGetArrayTypeP(d), k->key);
		else if (k->type == KEY_REAL)
			*(float *) field = isnull ? 0.0f : DatumGetFloat4(d);
		else
			*(int *) field = isnull ? 0 : DatumGetInt32(d);
	}
}

char *
tfm_config_json(const tfm_config *c)
{
	StringInfoData s;
	bool		prev = false;

	initStringInfo(&s);
	appendStringInfoChar(&s, '{');
	for (int i = 0; i < (int) lengthof(config_keys); i++)
	{
		const ConfigKey *k = &config_keys[i];
		const char *field = (const char *) c + (k->offset - offsetof(TfmModelRow, cfg));
		double		v;
		bool		write;

		if (k->write == WRITE_NEVER)
			continue;
		Assert(k->offset >= offsetof(TfmModelRow, cfg) &&
			   k->offset < offsetof(TfmModelRow, cfg) + sizeof(tfm_config));
		if (k->type == KEY_REALS)
		{
			const float *f = (const float *) field;
			int			n = TFM_ROPE_FACTORS_MAX;

			while (n > 0 && f[n - 1] == 0.0f)
				n--;
			prev = n > 0;
			if (n == 0)
				continue;
			appendStringInfo(&s, "%s\"%s\": [", s.len > 1 ? ", " : "", k->key);
			for (int j = 0; j < n; j++)
				appendStringInfo(&s, j ? ", %.9g" : "%.9g", (double) f[j]);
			appendStringInfoChar(&s, ']');
			continue;
		}
		v = k->type == KEY_REAL ? (double) *(const float *) field : (double) *(const int *) field;
		switch (k->write)
		{
			case WRITE_ALWAYS:
				write = true;
				break;
			case WRITE_NONZERO:
				write = v != 0;
				break;
			case WRITE_POSITIVE:
				write = v > 0 && (k->omit == 0 || *(const float *) field != k->omit);
				break;
			case WRITE_WITH_PREV:
				write = prev;
				break;
			default:
				write = false;
				break;
		}
		prev = write;
		if (!write)
			continue;
		appendStringInfo(&s, "%s\"%s\": ", s.len > 1 ? ", " : "", k->key);
		switch (k->type)
		{
			case KEY_INT:
				appendStringInfo(&s, "%d", *(const int *) field);
				break;
			case KEY_REAL:
				appendStringInfo(&s, k->fmt, v);
				break;
			case KEY_BOOL:
				appendStringInfoString(&s, v != 0 ? "true" : "false");
				break;
			case KEY_REALS:
				break;			/* written above */
			case KEY_ENUM:
				{
					int			e = *(const int *) field;

					if (e < 0 || e >= k->n_names || k->names[e] == NULL)
						elog(ERROR, "config field \"%s\" has no name for %d. Please report a bug.",
							 k->key, e);
					appendStringInfo(&s, "\"%s\"", k->names[e]);
				}
				break;
		}
	}
	appendStringInfoChar(&s, '}');
	return s.data;
}

void
tfm_model_row_named_sql(StringInfo sql)
{
	/* a model of that name, else the model an alias of that name deploys */
	appendStringInfoString(sql, " FROM tfm.models WHERE name = $1 "
						   "OR id = (SELECT model_id FROM tfm.aliases WHERE name = $1) "
						   "ORDER BY name = $1 DESC LIMIT 1");
}

void
tfm_model_of_job_sql(StringInfo sql, const char *model, const char *alias)
{
	appendStringInfo(sql, "CASE WHEN coalesce(%s, 0) = 0 THEN %s "
					 "ELSE (SELECT a.model_id FROM tfm.aliases a WHERE a.id = %s) END",
					 alias, model, alias);
}
