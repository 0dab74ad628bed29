/*
 * json_schema.c — a JSON schema (the subset of tfm/json_schema.h) compiled
 * into nodes: objects with their properties in the schema's order, arrays,
 * strings, numbers, integers, literal sets (enum, const, boolean, null) and
 * anyOf alternatives told apart by their first byte.  Every keyword outside
 * the subset is refused by name; $ref is refused, so no schema is recursive.
 */
#include <stdlib.h>
#include <string.h>

#include "tfm/status.h"
#include "json_dom.h"
#include "json_internal.h"
#include "../util/grow.h"

#define JD_MAX_VALUES 65536
#define JD_MAX_NEST   128
#define TFM_JSON_MAX_COUNT 1000000	/* minItems, maxItems, minLength, maxLength */

typedef struct compiler
{
	const jd_doc *d;
	tfm_jschema *s;
	size_t		cap_nodes,
				cap_props,
				cap_lits,
				cap_alts,
				cap_pool;
	tfm_status *err;
} compiler;

static const char *const ignored[] = {
	"title", "description", "$schema", "$id", "$comment", "examples", "default", NULL
};

static int
oom(compiler *c)
{
	return tfm_status_set(c->err, TFM_ENOMEM, "out of memory for the JSON schema");
}

static int
new_node(compiler *c, jn_kind kind, int32_t *idx)
{
	tfm_jschema *s = c->s;

	if (s->n_nodes >= TFM_JSON_MAX_NODES)
		return tfm_status_set(c->err, TFM_ELIMIT, "the JSON schema has more than %d schemas",
							  TFM_JSON_MAX_NODES);
	if (tfm_grow((void **) &s->nodes, &c->cap_nodes, (size_t) s->n_nodes + 1, sizeof(jn_node)))
		return oom(c);
	memset(&s->nodes[s->n_nodes], 0, sizeof(jn_node));
	s->nodes[s->n_nodes].kind = kind;
	s->nodes[s->n_nodes].hi = -1;
	s->nodes[s->n_nodes].items = -1;
	*idx = s->n_nodes++;
	return TFM_OK;
}

static void
set_first(jn_node *n, uint8_t b)
{
	n->firsts[b >> 3] |= (uint8_t) (1u << (b & 7));
}

static void
set_firsts(jn_node *n, const char *bytes)
{
	for (; *bytes; bytes++)
		set_first(n, (uint8_t) *bytes);
}

static const char *
key_of(compiler *c, int32_t member)
{
	return c->d->pool + c->d->v[member].key_off;
}

/* a non-negative integer keyword's value */
static int
count_of(compiler *c, int32_t v, const char *kw, int32_t *out)
{
	const jd_value *x = &c->d->v[v];
	const char *t = c->d->text + x->off;
	long		n = 0;

	if (x->kind != JD_NUMBER || x->len == 0 || t[0] == '-')
		return tfm_status_set(c->err, TFM_EINVAL, "%s must be a non-negative integer", kw);
	for (size_t i = 0; i < x->len; i++)
	{
		if (t[i] < '0' || t[i] > '9')
			return tfm_status_set(c->err, TFM_EINVAL, "%s must be a non-negative integer", kw);
		n = n * 10 + (t[i] - '0');
		if (n > TFM_JSON_MAX_COUNT)
			return tfm_status_set(c->err, TFM_ELIMIT, "%s must be at most %d", kw,
								  TFM_JSON_MAX_COUNT);
	}
	*out = (int32_t) n;
	return TFM_OK;
}

/* does JSON value v have the schema type named type? */
static bool
of_type(compiler *c, int32_t v, const char *type)
{
	const jd_value *x = &c->d->v[v];

	if (strcmp(type, "object") == 0)
		return x->kind == JD_OBJECT;
	if (strcmp(type, "array") == 0)
		return x->kind == JD_ARRAY;
	if (strcmp(type, "string") == 0)
		return x->kind == JD_STRING;
	if (strcmp(type, "number") == 0)
		return x->kind == JD_NUMBER;
	if (strcmp(type, "integer") == 0)
		return x->kind == JD_NUMBER && !memchr(c->d->text + x->off, '.', x->len) &&
			!memchr(c->d->text + x->off, 'e', x->len) && !memchr(c->d->text + x->off, 'E', x->len);
	if (strcmp(type, "boolean") == 0)
		return x->kind == JD_TRUE || x->kind == JD_FALSE;
	return x->kind == JD_NULL;
}

/* a literal's compact text added to node n */
static int
add_literal(compiler *c, int32_t node, int32_t v)
{
	tfm_jschema *s = c->s;
	size_t		off = s->pool_len;

	if (jd_write(c->d, v, &s->pool, &s->pool_len, &c->cap_pool) != TFM_OK)
		return oom(c);
	if (tfm_grow((void **) &s->lits, &c->cap_lits, (size_t) s->n_lits + 1, sizeof(jn_lit)))
		return oom(c);
	s->lits[s->n_lits].off = off;
	s->lits[s->n_lits].len = s->pool_len - off;
	if (s->nodes[node].n == 0)
		s->nodes[node].first = s->n_lits;
	s->n_lits++;
	s->nodes[node].n++;
	set_first(&s->nodes[node], (uint8_t) s->pool[off]);
	return TFM_OK;
}

static int	compile(compiler *c, int32_t v, int depth, int32_t *out);

/* which keywords a type takes besides the common ones */
static bool
keyword_of(const char *type, const char *kw)
{
	if (strcmp(type, "object") == 0)
		return !strcmp(kw, "properties") || !strcmp(kw, "required") ||
			!strcmp(kw, "additionalProperties");
	if (strcmp(type, "array") == 0)
		return !strcmp(kw, "items") || !strcmp(kw, "minItems") || !strcmp(kw, "maxItems");
	if (strcmp(type, "string") == 0)
		return !strcmp(kw, "minLength") || !strcmp(kw, "maxLength");
	return false;
}

static bool
known_type(const char *t)
{
	static const char *const types[] = {
		"object", "array", "string", "number", "integer", "boolean", "null", NULL
	};

	for (int i = 0; types[i]; i++)
		if (strcmp(t, types[i]) == 0)
			return true;
	return false;
}

static int
compile_object(compiler *c, int32_t v, int depth, int32_t node)
{
	const jd_doc *d = c->d;
	int32_t		props = jd_member(d, v, "properties"),
				req = jd_member(d, v, "required"),
				addl = jd_member(d, v, "additionalProperties");
	int32_t		first = c->s->n_props;
	int			rc;

	if (addl >= 0 && d->v[addl].kind != JD_FALSE)
		return tfm_status_set(c->err, TFM_EUNSUPPORTED,
							  "additionalProperties must be false (only the properties listed can be produced)");
	if (props >= 0 && d->v[props].kind != JD_OBJECT)
		return tfm_status_set(c->err, TFM_EINVAL, "properties must be an object");
	if (req >= 0 && d->v[req].kind != JD_ARRAY)
		return tfm_status_set(c->err, TFM_EINVAL, "required must be an array of strings");
	/* the properties first (their nodes compiled after, indices kept) */
	if (props >= 0)
		for (int32_t m = d->v[props].first; m >= 0; m = d->v[m].next)
		{
			tfm_jschema *s = c->s;
			size_t		off = s->pool_len;

			if (jd_write_escaped(d->pool + d->v[m].key_off, d->v[m].key_len, &s->pool,
								 &s->pool_len, &c->cap_pool) != TFM_OK ||
				tfm_grow((void **) &s->props, &c->cap_props, (size_t) s->n_props + 1, sizeof(jn_prop)))
				return oom(c);
			s->props[s->n_props].key_off = off;
			s->props[s->n_props].key_len = s->pool_len - off;
			s->props[s->n_props].required = 0;
			s->props[s->n_props].node = -1;
			s->n_props++;
		}
	c->s->nodes[node].first = first;
	c->s->nodes[node].n = c->s->n_props - first;
	if (req >= 0)
		for (int32_t r = d->v[req].first; r >= 0; r = d->v[r].next)
		{
			int32_t		k = 0,
						m;

			if (d->v[r].kind != JD_STRING)
				return tfm_status_set(c->err, TFM_EINVAL, "required must be an array of strings");
			for (m = props >= 0 ? d->v[props].first : -1; m >= 0; m = d->v[m].next, k++)
				if (d->v[m].key_len == d->v[r].len &&
					memcmp(d->pool + d->v[m].key_off, d->pool + d->v[r].off, d->v[r].len) == 0)
					break;
			if (m < 0)
				return tfm_status_set(c->err, TFM_EINVAL,
									  "required property \"%.64s\" is not among the properties",
									  d->pool + d->v[r].off);
			c->s->props[first + k].required = 1;
		}
	{
		int32_t		k = 0;

		for (int32_t m = props >= 0 ? d->v[props].first : -1; m >= 0; m = d->v[m].next, k++)
		{
			int32_t		child;

			if ((rc = compile(c, m, depth + 1, &child)) != TFM_OK)
				return rc;
			c->s->props[first + k].node = child;
		}
	}
	set_first(&c->s->nodes[node], '{');
	return TFM_OK;
}

/* schema object v compiled as the one type named type */
static int
compile_typed(compiler *c, int32_t v, const char *type, int depth, int32_t *out)
{
	const jd_doc *d = c->d;
	int			rc;
	jn_kind		kind;

	if (strcmp(type, "boolean") == 0 || strcmp(type, "null") == 0)
	{
		if ((rc = new_node(c, JN_LITERALS, out)) != TFM_OK)
			return rc;
		if (strcmp(type, "null") == 0)
		{
			jd_value	nv = {JD_NULL, -1, -1, 0, 0, 0, 0, 0};
			jd_doc		one = {&nv, 1, 1, NULL, 0, 0, ""};
			const jd_doc *save = c->d;

			c->d = &one;
			rc = add_literal(c, *out, 0);
			c->d = save;
			return rc;
		}
		else
		{
			jd_value	bv[2] = {{JD_TRUE, -1, -1, 0, 0, 0, 0, 0}, {JD_FALSE, -1, -1, 0, 0, 0, 0, 0}};
			jd_doc		two = {bv, 2, 2, NULL, 0, 0, ""};
			const jd_doc *save = c->d;

			c->d = &two;
			rc = add_literal(c, *out, 0);
			if (rc == TFM_OK)
				rc = add_literal(c, *out, 1);
			c->d = save;
			return rc;
		}
	}
	kind = strcmp(type, "object") == 0 ? JN_OBJECT :
		strcmp(type, "array") == 0 ? JN_ARRAY :
		strcmp(type, "string") == 0 ? JN_STRING :
		strcmp(type, "integer") == 0 ? JN_INTEGER : JN_NUMBER;
	if ((rc = new_node(c, kind, out)) != TFM_OK)
		return rc;
	switch (kind)
	{
		case JN_OBJECT:
			return compile_object(c, v, depth, *out);
		case JN_ARRAY:
			{
				int32_t		items = jd_member(d, v, "items"),
							lo = 0,
							hi = -1,
							m,
							child;

				if (items < 0 || d->v[items].kind != JD_OBJECT)
					return tfm_status_set(c->err, TFM_EUNSUPPORTED,
										  "an array schema needs items (one schema)");
				if ((m = jd_member(d, v, "minItems")) >= 0 && (rc = count_of(c, m, "minItems", &lo)))
					return rc;
				if ((m = jd_member(d, v, "maxItems")) >= 0 && (rc = count_of(c, m, "maxItems", &hi)))
					return rc;
				if (hi >= 0 && lo > hi)
					return tfm_status_set(c->err, TFM_EINVAL, "minItems is greater than maxItems");
				if ((rc = compile(c, items, depth + 1, &child)) != TFM_OK)
					return rc;
				c->s->nodes[*out].items = child;
				c->s->nodes[*out].lo = lo;
				c->s->nodes[*out].hi = hi;
				set_first(&c->s->nodes[*out], '[');
				return TFM_OK;
			}
		case JN_STRING:
			{
				int32_t		lo = 0,
							hi = -1,
							m;

				if ((m = jd_member(d, v, "minLength")) >= 0 && (rc = count_of(c, m, "minLength", &lo)))
					return rc;
				if ((m = jd_member(d, v, "maxLength")) >= 0 && (rc = count_of(c, m, "maxLength", &hi)))
					return rc;
				if (hi >= 0 && lo > hi)
					return tfm_status_set(c->err, TFM_EINVAL, "minLength is greater than maxLength");
				c->s->nodes[*out].lo = lo;
				c->s->nodes[*out].hi = hi;
				set_first(&c->s->nodes[*out], '"');
				return TFM_OK;
			}
		default:
			set_firsts(&c->s->nodes[*out], "-0123456789");
			return TFM_OK;
	}
}

/* an anyOf node over alternatives already compiled (alts[0 .. n)) */
static int
make_anyof(compiler *c, const int32_t *alts, int32_t n, int32_t *out)
{
	tfm_jschema *s;
	int			rc;

	if ((rc = new_node(c, JN_ANYOF, out)) != TFM_OK)
		return rc;
	s = c->s;
	if (tfm_grow((void **) &s->alts, &c->cap_alts, (size_t) s->n_alts + n, sizeof(int32_t)))
		return oom(c);
	s->nodes[*out].first = s->n_alts;
	s->nodes[*out].n = n;
	for (int32_t i = 0; i < n; i++)
	{
		jn_node    *a = &s->nodes[alts[i]];

		for (int b = 0; b < 32; b++)
		{
			if (s->nodes[*out].firsts[b] & a->firsts[b])
				return tfm_status_set(c->err, TFM_EUNSUPPORTED,
									  "anyOf alternatives must begin differently (an object, an array, a string, a number, true/false, null)");
			s->nodes[*out].firsts[b] |= a->firsts[b];
		}
		s->alts[s->n_alts++] = alts[i];
	}
	return TFM_OK;
}

static int
compile(compiler *c, int32_t v, int depth, int32_t *out)
{
	const jd_doc *d = c->d;
	int32_t		type,
				en,
				cn,
				any;
	int			rc;

	if (depth > TFM_JSON_MAX_DEPTH)
		return tfm_status_set(c->err, TFM_ELIMIT, "the JSON schema nests more than %d schemas",
							  TFM_JSON_MAX_DEPTH);
	if (d->v[v].kind != JD_OBJECT)
		return tfm_status_set(c->err, TFM_EUNSUPPORTED, "a schema must be an object (true and false schemas are not supported)");
	type = jd_member(d, v, "type");
	en = jd_member(d, v, "enum");
	cn = jd_member(d, v, "const");
	any = jd_member(d, v, "anyOf");

	/* every keyword known and fitting the type(s) */
	for (int32_t m = d->v[v].first; m >= 0; m = d->v[m].next)
	{
		const char *kw = key_of(c, m);
		bool		ok = !strcmp(kw, "type") || !strcmp(kw, "enum") || !strcmp(kw, "const") ||
			!strcmp(kw, "anyOf");

		for (int i = 0; !ok && ignored[i]; i++)
			ok = strcmp(kw, ignored[i]) == 0;
		if (!ok && strcmp(kw, "$ref") == 0)
			return tfm_status_set(c->err, TFM_EUNSUPPORTED,
								  "JSON schema keyword \"$ref\" is not supported (no references or recursion)");
		if (!ok && type >= 0 && d->v[type].kind == JD_STRING)
			ok = keyword_of(d->pool + d->v[type].off, kw);
		else if (!ok && type >= 0 && d->v[type].kind == JD_ARRAY)
			for (int32_t t = d->v[type].first; !ok && t >= 0; t = d->v[t].next)
				ok = d->v[t].kind == JD_STRING && keyword_of(d->pool + d->v[t].off, kw);
		if (!ok)
		{
			static const char *const types[] = {"object", "array", "string", NULL};

			for (int i = 0; types[i]; i++)
				if (keyword_of(types[i], kw))
					return tfm_status_set(c->err, TFM_EINVAL,
										  "JSON schema keyword \"%.64s\" needs \"type\": \"%s\"",
										  kw, types[i]);
			return tfm_status_set(c->err, TFM_EUNSUPPORTED,
								  "JSON schema keyword \"%.64s\" is not supported", kw);
		}
	}
	if ((en >= 0) + (cn >= 0) + (any >= 0) > 1)
		return tfm_status_set(c->err, TFM_EUNSUPPORTED,
							  "a schema may have one of enum, const and anyOf, not several");
	if (type >= 0 && any >= 0)
		return tfm_status_set(c->err, TFM_EUNSUPPORTED, "anyOf with type beside it is not supported");
	if (type >= 0 && d->v[type].kind == JD_STRING && !known_type(d->pool + d->v[type].off))
		return tfm_status_set(c->err, TFM_EINVAL, "unknown type \"%.64s\"", d->pool + d->v[type].off);
	if (type >= 0 && d->v[type].kind == JD_ARRAY)
	{
		if (d->v[type].count == 0)
			return tfm_status_set(c->err, TFM_EINVAL, "type must name at least one type");
		for (int32_t t = d->v[type].first; t >= 0; t = d->v[t].next)
			if (d->v[t].kind != JD_STRING || !known_type(d->pool + d->v[t].off))
				return tfm_status_set(c->err, TFM_EINVAL, "type must be a type name or a list of them");
	}
	else if (type >= 0 && d->v[type].kind != JD_STRING)
		return tfm_status_set(c->err, TFM_EINVAL, "type must be a type name or a list of them");

	if (en >= 0 || cn >= 0)
	{
		int32_t		first;

		if (en >= 0 && d->v[en].kind != JD_ARRAY)
			return tfm_status_set(c->err, TFM_EINVAL, "enum must be an array");
		if (en >= 0 && d->v[en].count == 0)
			return tfm_status_set(c->err, TFM_EINVAL, "enum must have at least one value");
		if (en >= 0 && d->v[en].count > TFM_JSON_MAX_ENUM)
			return tfm_status_set(c->err, TFM_ELIMIT, "an enum has at most %d values, not %d",
								  TFM_JSON_MAX_ENUM, d->v[en].count);
		if ((rc = new_node(c, JN_LITERALS, out)) != TFM_OK)
			return rc;
		first = en >= 0 ? d->v[en].first : cn;
		for (int32_t e = first; e >= 0; e = en >= 0 ? d->v[e].next : -1)
		{
			bool		typed = type < 0;

			if (type >= 0 && d->v[type].kind == JD_STRING)
				typed = of_type(c, e, d->pool + d->v[type].off);
			else if (type >= 0)
				for (int32_t t = d->v[type].first; !typed && t >= 0; t = d->v[t].next)
					typed = of_type(c, e, d->pool + d->v[t].off);
			if (!typed)
				return tfm_status_set(c->err, TFM_EINVAL, "an %s value is not of the schema's type",
									  en >= 0 ? "enum" : "const");
			if ((rc = add_literal(c, *out, e)) != TFM_OK)
				return rc;
		}
		return TFM_OK;
	}
	if (any >= 0)
	{
		int32_t		alts[64],
					n = 0;

		if (d->v[any].kind != JD_ARRAY || d->v[any].count == 0)
			return tfm_status_set(c->err, TFM_EINVAL, "anyOf must be a non-empty array of schemas");
		if (d->v[any].count > 64)
			return tfm_status_set(c->err, TFM_ELIMIT, "anyOf has at most 64 alternatives");
		for (int32_t a = d->v[any].first; a >= 0; a = d->v[a].next)
			if ((rc = compile(c, a, depth + 1, &alts[n++])) != TFM_OK)
				return rc;
		return n == 1 ? (*out = alts[0], TFM_OK) : make_anyof(c, alts, n, out);
	}
	if (type < 0)
		return tfm_status_set(c->err, TFM_EUNSUPPORTED,
							  "a schema needs type, enum, const or anyOf (any value is not supported)");
	if (d->v[type].kind == JD_STRING)
		return compile_typed(c, v, d->pool + d->v[type].off, depth, out);
	{
		int32_t		alts[8],
					n = 0;

		if (d->v[type].count > 7)
			return tfm_status_set(c->err, TFM_EINVAL, "type lists a type twice");
		for (int32_t t = d->v[type].first; t >= 0; t = d->v[t].next)
			if ((rc = compile_typed(c, v, d->pool + d->v[t].off, depth + 1, &alts[n++])) != TFM_OK)
				return rc;
		return n == 1 ? (*out = alts[0], TFM_OK) : make_anyof(c, alts, n, out);
	}
}

int
tfm_jschema_compile(tfm_jschema **out, const char *json, size_t len, tfm_status *err)
{
	jd_doc		d;
	compiler	c;
	int			rc;

	*out = NULL;
	if (len > TFM_JSON_MAX_SCHEMA)
		return tfm_status_set(err, TFM_ELIMIT, "a JSON schema has at most %d bytes, not %zu",
							  TFM_JSON_MAX_SCHEMA, len);
	rc = jd_parse(&d, json, len, JD_MAX_VALUES, JD_MAX_NEST, err);
	if (rc != TFM_OK)
	{
		jd_free(&d);
		return rc;
	}
	memset(&c, 0, sizeof(c));
	c.d = &d;
	c.err = err;
	c.s = calloc(1, sizeof(tfm_jschema));
	if (!c.s)
		rc = oom(&c);
	else
		rc = compile(&c, 0, 0, &c.s->root);
	jd_free(&d);
	if (rc != TFM_OK)
	{
		tfm_jschema_free(c.s);
		return rc;
	}
	*out = c.s;
	return TFM_OK;
}

void
tfm_jschema_free(tfm_jschema *s)
{
	if (!s)
		return;
	free(s->nodes);
	free(s->props);
	free(s->lits);
	free(s->alts);
	free(s->pool);
	free(s);
}
