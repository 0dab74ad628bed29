/*
 * config.c — a Hugging Face config.json, read strictly: the model
 * type and the options that change the computation must be ones tfm
 * implements exactly, or the import is refused naming them.  Keys that
 * only matter elsewhere (summary_*, task_specific_params, torch_dtype,
 * use_cache, ...) are ignored.
 */
#include "postgres.h"

#include <math.h>

#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"

#include "tfm/hf_import.h"
#include "import/hf_files.h"
#include "base/json_fields.h"

static void
bad_field(const char *key, const char *want, const JsonbValue *v)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("config.json field \"%s\" must be %s, not %s", key, want, tfm_jtype(v))));
}

/* field key of c: NULL if absent or null, else it must be of type (want: for the error) */
static JsonbValue *
field(JsonbContainer *c, const char *key, enum jbvType type, const char *want, JsonbValue *buf)
{
	JsonbValue *v = tfm_jget(c, key, buf);

	if (!v || v->type == jbvNull)
		return NULL;
	if (v->type != type)
		bad_field(key, want, v);
	return v;
}

static double
numeric_value(const JsonbValue *v)
{
	return DatumGetFloat8(DirectFunctionCall1(numeric_float8, NumericGetDatum(v->val.numeric)));
}

/* an integer field; absent or null gives dflt, or an error if required */
static int
jint(JsonbContainer *c, const char *key, int dflt, bool required)
{
	JsonbValue	buf,
			   *v = field(c, key, jbvNumeric, "an integer", &buf);
	double		d;

	if (!v)
	{
		if (required)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("config.json lacks the field \"%s\"", key)));
		return dflt;
	}
	d = numeric_value(v);
	if (d != floor(d) || d < -2147483648.0 || d > 2147483647.0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("config.json field \"%s\" must be an integer, not %g", key, d)));
	return (int) d;
}

static double
jnum(JsonbContainer *c, const char *key, double dflt)
{
	JsonbValue	buf,
			   *v = field(c, key, jbvNumeric, "a number", &buf);

	return v ? numeric_value(v) : dflt;
}

static bool
jbool(JsonbContainer *c, const char *key, bool dflt)
{
	JsonbValue	buf,
			   *v = field(c, key, jbvBool, "a boolean", &buf);

	return v ? v->val.boolean : dflt;
}

static char *
jstr(JsonbContainer *c, const char *key)
{
	JsonbValue	buf,
			   *v = field(c, key, jbvString, "a string", &buf);

	return v ? pnstrdup(v->val.string.val, v->val.string.len) : NULL;
}

/* an option that must keep the value tfm implements */
static void
require_bool(JsonbContainer *c, const char *key, bool dflt, bool want)
{
	if (jbool(c, key, dflt) != want)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("config.json option \"%s\": %s is not supported", key, want ? "false" : "true")));
}

static void
parse_gpt2(JsonbContainer *c, TfmHfConfig *out)
{
	tfm_hf_params *p = &out->p;
	char	   *act = jstr(c, "activation_function");
	int			n_ctx;

	p->arch = TFM_HF_GPT2;
	if (act && strcmp(act, "gelu_new") != 0 && strcmp(act, "gelu_pytorch_tanh") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("activation_function \"%s\" is not supported", act),
				 errdetail("tfm imports GPT-2 models with gelu_new.")));
	p->vocab = jint(c, "vocab_size", 0, true);
	p->d_model = jint(c, "n_embd", 0, true);
	p->layers = jint(c, "n_layer", 0, true);
	p->heads = jint(c, "n_head", 0, true);
	p->max_len = jint(c, "n_positions", 0, true);
	n_ctx = jint(c, "n_ctx", p->max_len, false);
	if (n_ctx != p->max_len)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("config.json has n_ctx %d and n_positions %d; they must be equal",
						n_ctx, p->max_len)));
	p->d_ff = jint(c, "n_inner", 0, false);
	if (p->d_ff < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("config.json field \"n_inner\" must be positive, not %d", p->d_ff)));
	p->ln_eps = (float) jnum(c, "layer_norm_epsilon", 1e-5);
	p->tie = jbool(c, "tie_word_embeddings", true);
	p->dropout = (float) jnum(c, "resid_pdrop", 0.1);
	p->attn_dropout = (float) jnum(c, "attn_pdrop", 0.1);
	require_bool(c, "scale_attn_weights", true, true);
	require_bool(c, "scale_attn_by_inverse_layer_idx", false, false);
	require_bool(c, "add_cross_attention", false, false);
	/* upcasting changes nothing in float32; reordering neither */
	out->bos_id = jint(c, "bos_token_id", -1, false);
	out->eos_id = jint(c, "eos_token_id", -1, false);
}

/* an option that, when present, must have the one value tfm implements */
static void
require_str(JsonbContainer *c, const char *key, const char *want)
{
	char	   *v = jstr(c, key);

	if (v && strcmp(v, want) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("config.json option \"%s\": \"%s\" is not supported", key, v),
				 errdetail("tfm implements \"%s\" only.", want)));
}

/* id2label {"0": "neg", "1": "pos"} as labels in id order; default LABEL_0, LABEL_1 */
static void
parse_id2label(JsonbContainer *c, TfmHfConfig *out)
{
	JsonbValue	buf,
			   *v = tfm_jget(c, "id2label", &buf);
	JsonbIterator *it;
	JsonbValue	val;
	char	   *key;
	long		id;
	int			n;

	if (!v || v->type == jbvNull)
	{
		out->n_labels = 2;
		out->labels = palloc(sizeof(char *) * 2);
		out->labels[0] = "LABEL_0";
		out->labels[1] = "LABEL_1";
		return;
	}
	if (v->type != jbvBinary || !JsonContainerIsObject(v->val.binary.data))
		bad_field("id2label", "an object", v);
	n = JsonContainerSize(v->val.binary.data);
	if (n < TFM_CLASSES_MIN_IMPORTED || n > TFM_CLASSES_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("config.json id2label has %d labels; a tfm classifier has between %d and %d",
						n, TFM_CLASSES_MIN_IMPORTED, TFM_CLASSES_MAX)));
	out->n_labels = n;
	out->labels = palloc0(sizeof(char *) * n);
	it = JsonbIteratorInit(v->val.binary.data);
	while (tfm_jnext_id_key(&it, &key, &id, &val))
	{
		if (id < 0 || id >= n || out->labels[id])
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("config.json id2label key \"%s\" is not one of the ids 0 to %d", key, n - 1)));
		if (val.type != jbvString || val.val.string.len == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("config.json id2label \"%s\" must be a non-empty string", key)));
		out->labels[id] = pnstrdup(val.val.string.val, val.val.string.len);
	}
	for (int j = 0; j < n; j++)
		for (int i = 0; i < j; i++)
			if (strcmp(out->labels[i], out->labels[j]) == 0)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("config.json id2label names \"%s\" twice", out->labels[j])));
}

/*
 * bert, roberta, distilbert: the architecture decides the head (a base
 * model or ...ForSequenceClassification; other heads are refused)
 */
static void
parse_bert(JsonbContainer *c, TfmHfConfig *out, tfm_hf_arch arch, const char *arch_name)
{
	tfm_hf_params *p = &out->p;
	bool		distil = arch == TFM_HF_DISTILBERT;
	const char *base = arch == TFM_HF_BERT ? "BertModel" : arch == TFM_HF_ROBERTA ?
		"RobertaModel" : "DistilBertModel";
	const char *cls = arch == TFM_HF_BERT ? "BertForSequenceClassification" :
		arch == TFM_HF_ROBERTA ? "RobertaForSequenceClassification" :
		"DistilBertForSequenceClassification";
	char	   *act,
			   *problem;

	const char *family = arch == TFM_HF_BERT ? "Bert" : arch == TFM_HF_ROBERTA ? "Roberta" : "DistilBert";
	size_t		fl = strlen(family);

	p->arch = arch;
	p->head = arch_name && strcmp(arch_name, cls) == 0;
	/* a head on every token: ...ForTokenClassification, ...ForQuestionAnswering */
	if (arch_name && strncmp(arch_name, family, fl) == 0)
		p->token_head = strcmp(arch_name + fl, "ForTokenClassification") == 0 ? TFM_TOKEN_HEAD_TAGS :
			strcmp(arch_name + fl, "ForQuestionAnswering") == 0 ? TFM_TOKEN_HEAD_SPANS : 0;
	if (arch_name && !p->head && !p->token_head && strcmp(arch_name, base) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("architecture \"%s\" is not supported", arch_name),
				 errdetail("tfm imports %s, %s, %sForTokenClassification and %sForQuestionAnswering checkpoints.",
						   base, cls, family, family)));
	p->vocab = jint(c, "vocab_size", 0, true);
	p->d_model = jint(c, distil ? "dim" : "hidden_size", 0, true);
	p->layers = jint(c, distil ? "n_layers" : "num_hidden_layers", 0, true);
	p->heads = jint(c, distil ? "n_heads" : "num_attention_heads", 0, true);
	p->d_ff = jint(c, distil ? "hidden_dim" : "intermediate_size", 0, true);
	p->max_len = jint(c, "max_position_embeddings", 0, true);
	p->type_vocab = distil ? 0 : jint(c, "type_vocab_size", 2, false);
	p->pad_id = jint(c, "pad_token_id", arch == TFM_HF_ROBERTA ? 1 : 0, false);
	p->pos_offset = arch == TFM_HF_ROBERTA ? p->pad_id + 1 : 0;
	/* DistilBERT's layer norms are nn.LayerNorm(dim, eps=1e-12), not configurable */
	p->ln_eps = distil ? 1e-12f : (float) jnum(c, "layer_norm_eps", 1e-12);
	p->dropout = (float) jnum(c, distil ? "dropout" : "hidden_dropout_prob", 0.1);
	p->attn_dropout = (float) jnum(c, distil ? "attention_dropout" : "attention_probs_dropout_prob", 0.1);
	act = jstr(c, distil ? "activation" : "hidden_act");
	if (act && strcmp(act, "gelu") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s \"%s\" is not supported", distil ? "activation" : "hidden_act", act),
				 errdetail("tfm imports BERT-family models with gelu (the erf form).")));
	if (distil)
		require_bool(c, "sinusoidal_pos_embds", false, false);
	else
	{
		require_str(c, "position_embedding_type", "absolute");
		require_bool(c, "is_decoder", false, false);
		require_bool(c, "add_cross_attention", false, false);
	}
	problem = jstr(c, "problem_type");
	if (problem && strcmp(problem, "single_label_classification") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("config.json option \"problem_type\": \"%s\" is not supported", problem),
				 errdetail("tfm classifiers are single-label.")));
	parse_id2label(c, out);
	p->n_classes = out->n_labels;
	if (p->token_head == TFM_TOKEN_HEAD_SPANS && p->n_classes != 2)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("config.json id2label has %d labels; a question-answering head has 2 (start, end)",
						p->n_classes)));
	out->bos_id = -1;
	out->eos_id = -1;
}

/* the single entry of "architectures", or NULL if absent */
static char *
single_architecture(JsonbContainer *c)
{
	JsonbValue	buf,
			   *arch = tfm_jget(c, "architectures", &buf);
	char	   *found = NULL;

	if (!arch || arch->type == jbvNull)
		return NULL;
	if (arch->type != jbvBinary || !JsonContainerIsArray(arch->val.binary.data))
		bad_field("architectures", "an array", arch);
	{
		JsonbIterator *it = JsonbIteratorInit(arch->val.binary.data);
		JsonbValue	v;
		JsonbIteratorToken tok;

		while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
			if (tok == WJB_ELEM)
			{
				if (v.type != jbvString)
					bad_field("architectures", "an array of strings", &v);
				if (found)
					ereport(ERROR,
							(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
							 errmsg("config.json names more than one architecture")));
				found = pnstrdup(v.val.string.val, v.val.string.len);
			}
	}
	return found;
}

/* a field that must be absent or null: its presence changes the computation */
static void
refuse_present(JsonbContainer *c, const char *key, const char *what)
{
	JsonbValue	buf,
			   *v = tfm_jget(c, key, &buf);

	if (v && v->type != jbvNull)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("config.json option \"%s\" is not supported", key),
				 errdetail("tfm implements Llama without %s.", what)));
}

/* a token id that may not be a list (Llama 3 lists several end-of-text ids) */
static int
token_id(JsonbContainer *c, const char *key)
{
	JsonbValue	buf,
			   *v = tfm_jget(c, key, &buf);

	if (v && v->type == jbvBinary)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("config.json field \"%s\" lists several ids; tfm supports one", key)));
	return jint(c, key, -1, false);
}

/* the Llama family's members: Llama itself and the few differences of the others */
typedef enum LlamaFamily
{
	FAMILY_LLAMA,
	FAMILY_QWEN2,				/* q/k/v biases; sliding window only if use_sliding_window */
	FAMILY_QWEN3,				/* q/k norms, head_dim (Qwen3Config's 128), as Qwen2's window */
	FAMILY_SMOLLM3,				/* every no_rope_layer_interval-th layer without rope */
	FAMILY_MISTRAL,				/* sliding_window (HF's default 4096) on every layer */
	FAMILY_PHI3,				/* fused projections; sliding_window on every layer */
	FAMILY_GEMMA,				/* GeGLU, embeddings ·√d, RMSNorm x·(1 + w), tied head */
	FAMILY_GEMMA2,				/* Gemma's, and four norms a layer, soft caps, its own
								 * attention scale, sliding_window on layers 0, 2, ... */
	FAMILY_GEMMA3				/* Gemma 2's without soft caps, q/k norms, local layers
								 * (sliding_window_pattern) with their own rope base */
} LlamaFamily;

/*
 * Mistral's sliding window: a query attends to at most the last
 * sliding_window keys (itself included), run as a masked window in the
 * attention (null: no window; one not under max_position_embeddings never
 * binds)
 */
static void
mistral_window(JsonbContainer *c, tfm_hf_params *p)
{
	JsonbValue	buf,
			   *v = tfm_jget(c, "sliding_window", &buf);
	int			w;

	if (v && v->type == jbvNull)
		return;
	w = jint(c, "sliding_window", 4096, false);	/* MistralConfig's default */
	if (w < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("config.json field \"sliding_window\" must be at least 1, not %d", w)));
	if (w < p->max_len)
		p->attn_window = w;
}

/* a probability of dropout that must be 0: tfm runs these families without dropout */
static void
require_no_dropout(JsonbContainer *c, const char *key, const char *family)
{
	double		v = jnum(c, key, 0.0);

	if (v != 0.0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("config.json option \"%s\": %g is not supported", key, v),
				 errdetail("tfm implements %s without dropout.", family)));
}

/* a soft cap: absent or null is none, else a positive number up to TFM_SOFTCAP_MAX */
static float
softcap_value(JsonbContainer *c, const char *key, double dflt)
{
	JsonbValue	buf,
			   *v = tfm_jget(c, key, &buf);
	double		x;

	if (v && v->type == jbvNull)
		return 0.0f;
	x = jnum(c, key, dflt);
	if (!(x > 0.0 && x <= TFM_SOFTCAP_MAX))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("config.json field \"%s\" must be null or between 0 and %g, not %g",
						key, (double) TFM_SOFTCAP_MAX, x)));
	return (float) x;
}

/*
 * SmolLM3's layers without rotary positions: no_rope_layer_interval
 * (SmolLM3Config's 4), and no_rope_layers, if given (1 rotates, 0 not),
 * must be its pattern: layer i without rope when (i + 1) % interval == 0,
 * as SmolLM3Config makes it when absent
 */
static void
smollm3_nope(JsonbContainer *c, tfm_hf_params *p)
{
	int			interval = jint(c, "no_rope_layer_interval", 4, false),
				layers = jint(c, "num_hidden_layers", 0, true),
				i = 0;
	JsonbValue	buf,
			   *v = tfm_jget(c, "no_rope_layers", &buf);

	if (interval < 1 || interval > TFM_LAYERS_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("config.json field \"no_rope_layer_interval\" must be between 1 and %d, not %d",
						TFM_LAYERS_MAX, interval)));
	p->nope_interval = interval;
	if (!v || v->type == jbvNull)
		return;
	if (v->type != jbvBinary || !JsonContainerIsArray(v->val.binary.data))
		bad_field("no_rope_layers", "an array of 0 and 1", v);
	{
		JsonbIterator *it = JsonbIteratorInit(v->val.binary.data);
		JsonbValue	e;
		JsonbIteratorToken tok;

		while ((tok = JsonbIteratorNext(&it, &e, true)) != WJB_DONE)
			if (tok == WJB_ELEM)
			{
				double		x = e.type == jbvNumeric ? numeric_value(&e) : -1.0;
				bool		rope = (i + 1) % interval != 0;

				if (x != 0.0 && x != 1.0)
					ereport(ERROR,
							(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							 errmsg("config.json no_rope_layers entries must be 0 or 1")));
				if (i >= layers || (x == 1.0) != rope)
					ereport(ERROR,
							(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
							 errmsg("config.json no_rope_layers is not supported"),
							 errdetail("tfm implements SmolLM3 with the layers i where (i + 1) %% no_rope_layer_interval (here %d) is 0 without rotary positions, one entry a layer.",
									   interval)));
				i++;
			}
	}
	if (i != layers)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("config.json no_rope_layers has %d entries, not num_hidden_layers %d", i, layers)));
}

/*
 * Gemma 2: the attention's scale query_pre_attn_scalar^-½, the soft caps of
 * the scores and the logits (Gemma2Config's defaults: 224, 50, 30)
 */
static void
gemma2_options(JsonbContainer *c, tfm_hf_params *p, bool gemma3)
{
	/* Gemma3TextConfig's defaults: 256 and no caps */
	double		qs = jnum(c, "query_pre_attn_scalar", gemma3 ? 256.0 : 224.0);

	if (!(qs >= 1.0 && qs <= 1e6))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("config.json field \"query_pre_attn_scalar\" must be between 1 and 1000000, not %g", qs)));
	p->attn_scale = (float) pow(qs, -0.5);
	if (gemma3)
	{
		JsonbValue	buf,
				   *v = tfm_jget(c, "attn_logit_softcapping", &buf);

		p->attn_softcap = v ? softcap_value(c, "attn_logit_softcapping", 0.0) : 0.0f;
		v = tfm_jget(c, "final_logit_softcapping", &buf);
		p->final_softcap = v ? softcap_value(c, "final_logit_softcapping", 0.0) : 0.0f;
		return;
	}
	p->attn_softcap = softcap_value(c, "attn_logit_softcapping", 50.0);
	p->final_softcap = softcap_value(c, "final_logit_softcapping", 30.0);
}

/*
 * Gemma 3's local and global layers: layer i is local (sliding_window,
 * rope_local_base_freq unscaled) when (i + 1) % sliding_window_pattern != 0
 * (Gemma3TextConfig's 6); layer_types, if given, must be that pattern for
 * some period (the first "full_attention" layer's position), else it is
 * refused by name.  The window is kept even where it never binds (at least
 * max_len, or null): it marks the layers rotating with the local base.
 */
static void
gemma3_layers(JsonbContainer *c, tfm_hf_params *p)
{
	int			layers = jint(c, "num_hidden_layers", 0, true),
				pattern = jint(c, "sliding_window_pattern", 6, false),
				w = jint(c, "sliding_window", 4096, false),
				n = 0,
				first_full = -1;
	double		local = jnum(c, "rope_local_base_freq", 10000.0);
	JsonbValue	buf,
			   *v = tfm_jget(c, "sliding_window", &buf);

	if (v && v->type == jbvNull)
		w = p->max_len;			/* no window: the local layers differ by their rope alone */
	v = tfm_jget(c, "layer_types", &buf);
	if (w < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("config.json field \"sliding_window\" must be at least 1, not %d", w)));
	if (layers < 1 || layers > TFM_LAYERS_MAX)
		return;					/* refused by name with the sizes */
	if (v && v->type != jbvNull)
	{
		JsonbIterator *it;
		JsonbValue	e;
		JsonbIteratorToken tok;
		bool	   *full = palloc0(sizeof(bool) * layers);

		if (v->type != jbvBinary || !JsonContainerIsArray(v->val.binary.data))
			bad_field("layer_types", "an array of \"sliding_attention\" and \"full_attention\"", v);
		it = JsonbIteratorInit(v->val.binary.data);
		while ((tok = JsonbIteratorNext(&it, &e, true)) != WJB_DONE)
			if (tok == WJB_ELEM)
			{
				bool		is_full = e.type == jbvString && e.val.string.len == 14 &&
					memcmp(e.val.string.val, "full_attention", 14) == 0,
							is_local = e.type == jbvString && e.val.string.len == 17 &&
					memcmp(e.val.string.val, "sliding_attention", 17) == 0;

				if (!is_full && !is_local)
					ereport(ERROR,
							(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							 errmsg("config.json layer_types entries must be \"sliding_attention\" or \"full_attention\"")));
				if (n >= layers)
					ereport(ERROR,
							(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							 errmsg("config.json layer_types has more entries than num_hidden_layers %d", layers)));
				full[n] = is_full;
				if (is_full && first_full < 0)
					first_full = n;
				n++;
			}
		if (n != layers)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("config.json layer_types has %d entries, not num_hidden_layers %d", n, layers)));
		/* no full layer: every layer local (period 0) */
		pattern = first_full < 0 ? 0 : first_full + 1;
		for (int i = 0; i < layers; i++)
			if (full[i] != (pattern > 0 && (i + 1) % pattern == 0))
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("config.json layer_types is not supported"),
						 errdetail("tfm implements Gemma 3 with the layers i where (i + 1) %% P is 0 global (full_attention) and the others local, for one period P.")));
		pfree(full);
	}
	else if (pattern < 1 || pattern > TFM_LAYERS_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("config.json field \"sliding_window_pattern\" must be between 1 and %d, not %d",
						TFM_LAYERS_MAX, pattern)));
	if (pattern == 1)
		return;					/* every layer global */
	if (!(local >= TFM_ROPE_THETA_MIN && local <= TFM_ROPE_THETA_MAX))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("config.json field \"rope_local_base_freq\" must be between %g and %g, not %g",
						(double) TFM_ROPE_THETA_MIN, (double) TFM_ROPE_THETA_MAX, local)));
	p->window_pattern = pattern;
	p->attn_window = Min(w, p->max_len);
	p->rope_local_theta = (float) local;
}

/*
 * Gemma's activation: hidden_activation, or gelu_pytorch_tanh when it is
 * absent (Hugging Face's GemmaMLP ignores hidden_act since 4.38.2)
 */
static void
gemma_activation(JsonbContainer *c)
{
	char	   *act = jstr(c, "hidden_activation");

	if (act && strcmp(act, "gelu_pytorch_tanh") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("hidden_activation \"%s\" is not supported", act),
				 errdetail("tfm imports Gemma models with gelu_pytorch_tanh.")));
}

/*
 * LlamaForCausalLM (also SmolLM, TinyLlama), Qwen2ForCausalLM and
 * MistralForCausalLM.  Defaults as LlamaConfig's; the sizes have none here
 * (a config without them is not a checkpoint's).
 */
static void
parse_llama(JsonbContainer *c, TfmHfConfig *out, LlamaFamily family)
{
	tfm_hf_params *p = &out->p;
	char	   *act = jstr(c, "hidden_act");
	int			head_dim;
	double		adrop;

	p->arch = family == FAMILY_PHI3 ? TFM_HF_PHI3 : TFM_HF_LLAMA;
	p->qkv_bias = family == FAMILY_QWEN2;
	p->qk_norm = family == FAMILY_QWEN3;
	if (family == FAMILY_SMOLLM3)
		smollm3_nope(c, p);
	p->gemma = family == FAMILY_GEMMA || family == FAMILY_GEMMA2 || family == FAMILY_GEMMA3;
	p->gemma2 = family == FAMILY_GEMMA2 || family == FAMILY_GEMMA3;
	if (family == FAMILY_GEMMA3)
	{
		p->qk_norm = true;
		if (jbool(c, "use_bidirectional_attention", false))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("config.json option \"use_bidirectional_attention\": true is not supported"),
					 errdetail("tfm implements Gemma 3 as a causal language model.")));
	}
	if (p->gemma)
		gemma_activation(c);
	else if (act && strcmp(act, "silu") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("hidden_act \"%s\" is not supported", act),
				 errdetail("tfm imports Llama models with silu.")));
	if (family == FAMILY_PHI3)
	{
		require_no_dropout(c, "resid_pdrop", "Phi-3");
		require_no_dropout(c, "embd_pdrop", "Phi-3");
	}
	else
		tfm_hf_rope_scaling(c, p, family == FAMILY_GEMMA3 ? "Gemma 3" : "Llama",
							family == FAMILY_GEMMA3);
	if (family == FAMILY_LLAMA || family == FAMILY_GEMMA)
		refuse_present(c, "sliding_window", "sliding-window attention");
	if (family == FAMILY_GEMMA2 || family == FAMILY_GEMMA3)
		gemma2_options(c, p, family == FAMILY_GEMMA3);
	if ((family == FAMILY_QWEN2 || family == FAMILY_QWEN3) && jbool(c, "use_sliding_window", false))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("config.json option \"use_sliding_window\": true is not supported"),
				 errdetail("tfm implements %s with full attention in every layer, as its published configs (use_sliding_window false) do.",
						   family == FAMILY_QWEN2 ? "Qwen2" : "Qwen3")));
	require_bool(c, "use_sliding_window", false, false);
	if (family != FAMILY_QWEN2)
		require_bool(c, "attention_bias", false, false);
	require_bool(c, "mlp_bias", false, false);
	p->vocab = jint(c, "vocab_size", 0, true);
	p->d_model = jint(c, "hidden_size", 0, true);
	p->d_ff = jint(c, "intermediate_size", 0, true);
	p->layers = jint(c, "num_hidden_layers", 0, true);
	p->heads = jint(c, "num_attention_heads", 0, true);
	p->kv_heads = jint(c, "num_key_value_heads", p->heads, false);
	p->max_len = jint(c, "max_position_embeddings", 2048, false);
	if (family == FAMILY_PHI3)
		tfm_hf_phi3_rope(c, p);	/* longrope's attention factor: max_len before its cap */
	p->ln_eps = (float) jnum(c, "rms_norm_eps", 1e-6);
	/* Gemma3TextConfig's 1e6 (its global layers') */
	p->rope_theta = (float) jnum(c, "rope_theta", family == FAMILY_GEMMA3 ? 1000000.0 : 10000.0);
	/* GemmaConfig ties by default, LlamaConfig and Phi3Config do not */
	p->tie = jbool(c, "tie_word_embeddings", p->gemma);
	if (family == FAMILY_MISTRAL)
		mistral_window(c, p);
	if (family == FAMILY_GEMMA2)
	{
		mistral_window(c, p);	/* Gemma2Config's 4096, on layers 0, 2, ... */
		p->window_pattern = 2;
	}
	if (family == FAMILY_PHI3)
	{
		/* Phi3Config's default is no window (null) */
		JsonbValue	wb,
				   *w = tfm_jget(c, "sliding_window", &wb);

		if (w && w->type != jbvNull)
			mistral_window(c, p);
	}
	if ((family != FAMILY_LLAMA || p->rope_type != TFM_ROPE_DEFAULT) && p->max_len > TFM_LEN_MAX)
	{
		/* rotary positions have no table: the first TFM_LEN_MAX are exact */
		ereport(NOTICE,
				(errmsg("the model is limited to %d positions (tfm's limit), not its max_position_embeddings %d",
						TFM_LEN_MAX, p->max_len)));
		p->max_len = TFM_LEN_MAX;
	}
	if (family == FAMILY_GEMMA3)
		gemma3_layers(c, p);	/* after max_len's cap: the window at most max_len */
	/* a head's width: head_dim (Gemma 7B's and Gemma 2's differ from hidden_size / heads) */
	head_dim = jint(c, "head_dim", family == FAMILY_QWEN3 ? 128 : family == FAMILY_GEMMA3 ? 256 : 0,
					false);		/* Qwen3Config's, Gemma3TextConfig's default */
	if (head_dim < 0 || head_dim > TFM_D_MODEL_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("config.json field \"head_dim\" must be between 1 and %d, not %d",
						TFM_D_MODEL_MAX, head_dim)));
	p->head_dim = head_dim;
	adrop = jnum(c, "attention_dropout", 0.0);
	if (adrop != 0.0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("config.json option \"attention_dropout\": %g is not supported", adrop),
				 errdetail("tfm implements Llama without dropout.")));
	/* pretraining_tp only slices the same products differently */
	out->bos_id = token_id(c, "bos_token_id");
	out->eos_id = token_id(c, "eos_token_id");
}

/*
 * T5ForConditionalGeneration (model_type t5: T5, T5 v1.1, Flan-T5; mt5:
 * mT5).  Defaults as T5Config's.  feed_forward_proj "relu" (T5 v1.0),
 * "gelu" or "gated-gelu" (gelu_new, v1.1 and later); any other is refused.
 * The decoder starts from decoder_start_token_id, which must be the pad id
 * (tfm's decoder never produces it and hides no key by it).  dropout_rate
 * is not kept: the import runs (and fine-tunes) without dropout.
 */
static void
parse_t5(JsonbContainer *c, TfmHfConfig *out)
{
	tfm_hf_params *p = &out->p;
	char	   *ffp = jstr(c, "feed_forward_proj");
	int			start;

	p->arch = TFM_HF_T5;
	if (!ffp || strcmp(ffp, "relu") == 0)
		p->activation = TFM_ACT_RELU;
	else if (strcmp(ffp, "gelu") == 0)
		p->activation = TFM_ACT_GELU;
	else if (strcmp(ffp, "gated-gelu") == 0)
	{
		p->activation = TFM_ACT_GELU_TANH;
		p->ff_gated = true;
	}
	else
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("feed_forward_proj \"%s\" is not supported", ffp),
				 errdetail("tfm imports T5 models with relu, gelu or gated-gelu.")));
	require_bool(c, "is_encoder_decoder", true, true);
	p->vocab = jint(c, "vocab_size", 0, true);
	p->d_model = jint(c, "d_model", 0, true);
	p->head_dim = jint(c, "d_kv", 0, true);
	p->d_ff = jint(c, "d_ff", 0, true);
	p->layers = jint(c, "num_layers", 0, true);
	p->dec_layers = jint(c, "num_decoder_layers", p->layers, false);
	p->heads = jint(c, "num_heads", 0, true);
	p->rel_buckets = jint(c, "relative_attention_num_buckets", 32, false);
	p->rel_max_distance = jint(c, "relative_attention_max_distance", 128, false);
	p->ln_eps = (float) jnum(c, "layer_norm_epsilon", 1e-6);
	p->tie = jbool(c, "tie_word_embeddings", true);
	/* no position table: n_positions only bounds the inputs tfm reads */
	p->max_len = jint(c, "n_positions", 512, false);
	if (p->max_len > TFM_LEN_MAX)
		p->max_len = TFM_LEN_MAX;
	p->pad_id = jint(c, "pad_token_id", 0, false);
	out->eos_id = token_id(c, "eos_token_id");
	start = jint(c, "decoder_start_token_id", p->pad_id, false);
	if (start != p->pad_id || p->pad_id < 0 || p->pad_id >= p->vocab)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("config.json decoder_start_token_id %d is not supported", start),
				 errdetail("tfm imports T5 models whose decoder starts from the pad id (pad_token_id %d).",
						   p->pad_id)));
	out->bos_id = start;
}

/* every name in "architectures" must be one of the two given */
static void
check_architectures(JsonbContainer *c, const char *a1, const char *a2)
{
	JsonbValue	buf,
			   *arch = tfm_jget(c, "architectures", &buf);

	if (arch && arch->type == jbvBinary)
	{
		JsonbIterator *it = JsonbIteratorInit(arch->val.binary.data);
		JsonbValue	v;
		JsonbIteratorToken tok;

		while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
			if (tok == WJB_ELEM)
			{
				char	   *a = v.type == jbvString ? pnstrdup(v.val.string.val, v.val.string.len) : "?";

				if (strcmp(a, a1) != 0 && strcmp(a, a2) != 0)
					ereport(ERROR,
							(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
							 errmsg("architecture \"%s\" is not supported", a),
							 errdetail("tfm imports %s checkpoints.", a1)));
			}
	}
}

/* the Llama family's model types: their architectures and names in messages */
typedef struct LlamaType
{
	const char *model_type,
			   *causal_lm,
			   *base,
			   *what;
	LlamaFamily family;
} LlamaType;

static const LlamaType llama_types[] = {
	{"llama", "LlamaForCausalLM", "LlamaModel", "Llama", FAMILY_LLAMA},
	{"qwen2", "Qwen2ForCausalLM", "Qwen2Model", "Qwen2", FAMILY_QWEN2},
	{"qwen3", "Qwen3ForCausalLM", "Qwen3Model", "Qwen3", FAMILY_QWEN3},
	{"smollm3", "SmolLM3ForCausalLM", "SmolLM3Model", "SmolLM3", FAMILY_SMOLLM3},
	{"mistral", "MistralForCausalLM", "MistralModel", "Mistral", FAMILY_MISTRAL},
	{"phi3", "Phi3ForCausalLM", "Phi3Model", "Phi-3", FAMILY_PHI3},
	{"gemma", "GemmaForCausalLM", "GemmaModel", "Gemma", FAMILY_GEMMA},
	{"gemma2", "Gemma2ForCausalLM", "Gemma2Model", "Gemma 2", FAMILY_GEMMA2},
	{"gemma3_text", "Gemma3ForCausalLM", "Gemma3TextModel", "Gemma 3", FAMILY_GEMMA3},
};

static const LlamaType *
llama_family(const char *model_type)
{
	for (size_t i = 0; i < lengthof(llama_types); i++)
		if (strcmp(model_type, llama_types[i].model_type) == 0)
			return &llama_types[i];
	return NULL;
}

/* a Marian option that must equal another one tfm reads (the decoder's size, say) */
static void
marian_same(JsonbContainer *c, const char *key, int want, const char *other)
{
	int			v = jint(c, key, want, false);

	if (v != want)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("config.json option \"%s\": %d is not supported", key, v),
				 errdetail("tfm implements Marian with %s equal to %s (%d).", key, other, want)));
}

/*
 * MarianMTModel (the opus-mt translation models): a post-LN encoder-decoder
 * with one embedding for the source, the target and the head; defaults as
 * MarianConfig's.  The decoder starts from the pad id, kept as the model's
 * bos; eos is eos_token_id.
 */
static void
parse_marian(JsonbContainer *c, TfmHfConfig *out)
{
	tfm_hf_params *p = &out->p;
	char	   *act = jstr(c, "activation_function");
	int			start;

	p->arch = TFM_HF_MARIAN;
	if (!act)
		act = "gelu";			/* MarianConfig's default; opus-mt's configs say swish */
	if (strcmp(act, "swish") == 0 || strcmp(act, "silu") == 0)
		p->activation = TFM_ACT_SILU;
	else if (strcmp(act, "gelu") == 0)
		p->activation = TFM_ACT_GELU;
	else if (strcmp(act, "relu") == 0)
		p->activation = TFM_ACT_RELU;
	else if (strcmp(act, "gelu_new") == 0 || strcmp(act, "gelu_pytorch_tanh") == 0)
		p->activation = TFM_ACT_GELU_TANH;
	else
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("activation_function \"%s\" is not supported", act),
				 errdetail("tfm imports Marian models with swish (silu), relu, gelu or gelu_new.")));
	p->vocab = jint(c, "vocab_size", 0, true);
	p->d_model = jint(c, "d_model", 0, true);
	p->layers = jint(c, "encoder_layers", 0, true);
	p->dec_layers = jint(c, "decoder_layers", 0, true);
	p->heads = jint(c, "encoder_attention_heads", 0, true);
	p->d_ff = jint(c, "encoder_ffn_dim", 0, true);
	marian_same(c, "decoder_attention_heads", p->heads, "encoder_attention_heads");
	marian_same(c, "decoder_ffn_dim", p->d_ff, "encoder_ffn_dim");
	marian_same(c, "decoder_vocab_size", p->vocab, "vocab_size");
	p->max_len = jint(c, "max_position_embeddings", 1024, false);
	p->ln_eps = 1e-5f;			/* nn.LayerNorm's default, not configurable */
	p->scale_embedding = jbool(c, "scale_embedding", false);
	p->dropout = (float) jnum(c, "dropout", 0.1);
	p->attn_dropout = (float) jnum(c, "attention_dropout", 0.0);
	p->tie = true;
	p->pad_id = jint(c, "pad_token_id", 0, true);
	require_bool(c, "share_encoder_decoder_embeddings", true, true);
	require_bool(c, "tie_word_embeddings", true, true);
	/* keys of older configs (BartConfig's), which must keep Marian's values */
	require_bool(c, "normalize_before", false, false);
	require_bool(c, "normalize_embedding", false, false);
	require_bool(c, "add_final_layer_norm", false, false);
	require_bool(c, "add_bias_logits", false, false);
	require_bool(c, "static_position_embeddings", true, true);
	start = jint(c, "decoder_start_token_id", p->pad_id, false);
	if (start != p->pad_id)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("config.json option \"decoder_start_token_id\": %d is not supported", start),
				 errdetail("tfm implements Marian with the decoder starting from pad_token_id (%d).",
						   p->pad_id)));
	out->bos_id = start;
	out->eos_id = jint(c, "eos_token_id", 0, false);
	if (jint(c, "forced_eos_token_id", out->eos_id, false) != out->eos_id)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("config.json option \"forced_eos_token_id\" must be eos_token_id")));
}

void
tfm_hf_parse_config(Jsonb *config, TfmHfConfig *out)
{
	JsonbContainer *c = &config->root;
	const LlamaType *fam;
	char	   *type;
	const char *what = NULL;
	const char *bad;

	memset(out, 0, sizeof(*out));
	if (!JB_ROOT_IS_OBJECT(config) || JB_ROOT_IS_SCALAR(config))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("config must be a JSON object (the contents of config.json)")));
	type = jstr(c, "model_type");
	if (!type)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("config.json lacks the field \"model_type\"")));
	out->model_type = type;
	if (strcmp(type, "gpt2") == 0)
	{
		/* GPT2LMHeadModel (or the bare GPT2Model, whose head is the tied embedding) */
		check_architectures(c, "GPT2LMHeadModel", "GPT2Model");
		parse_gpt2(c, out);
		what = "GPT-2";
	}
	else if (strcmp(type, "bert") == 0 || strcmp(type, "roberta") == 0 ||
			 strcmp(type, "distilbert") == 0)
	{
		parse_bert(c, out, type[0] == 'b' ? TFM_HF_BERT : type[0] == 'r' ? TFM_HF_ROBERTA :
				   TFM_HF_DISTILBERT, single_architecture(c));
		what = type;
	}
	else if (strcmp(type, "t5") == 0 || strcmp(type, "mt5") == 0)
	{
		check_architectures(c, type[0] == 'm' ? "MT5ForConditionalGeneration" : "T5ForConditionalGeneration",
							type[0] == 'm' ? "MT5Model" : "T5Model");
		parse_t5(c, out);
		what = type[0] == 'm' ? "mT5" : "T5";
	}
	else if ((fam = llama_family(type)) != NULL)
	{
		check_architectures(c, fam->causal_lm, fam->base);
		parse_llama(c, out, fam->family);
		what = fam->what;
	}
	else if (strcmp(type, "marian") == 0)
	{
		check_architectures(c, "MarianMTModel", "MarianModel");
		parse_marian(c, out);
		what = "Marian";
	}
	else
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("model_type \"%s\" is not supported", type),
				 errhint("tfm imports gpt2, bert, roberta, distilbert, llama, qwen2, qwen3, smollm3, mistral, phi3, gemma, gemma2, gemma3_text, marian, t5 and mt5 models.")));

	/* the one check of the hyper-parameters (tfm/hf_map.h), and the model they make */
	bad = tfm_hf_config(&out->cfg, &out->p);
	if (bad)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid %s config.json: %s", what, bad)));
	if (out->bos_id < -1 || out->bos_id >= out->p.vocab || out->eos_id < -1 || out->eos_id >= out->p.vocab)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("config.json bos_token_id %d or eos_token_id %d is not below vocab_size %d",
						out->bos_id, out->eos_id, out->p.vocab)));
}
