/*
 * hf_map.c — the table of a Hugging Face checkpoint's tensors for a model
 * (tfm_hf_map: the entries the architecture's family adds, see
 * hf_arch_table.c), and the checks and conversions that store each tensor
 * in the tfm model: copied, transposed from nn.Linear's (out, in) to tfm's
 * (in, out), sliced into the columns of a fused tensor, plus 1 (Gemma's
 * norms), tied or shared with the embedding, or a buffer only checked.
 * See tfm/hf_map.h.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tfm/hf_map.h"

uint64_t
tfm_hf_map_min_values(const tfm_hf_map *map)
{
	uint64_t	n = 0;

	for (int i = 0; i < map->n; i++)
	{
		const tfm_hf_entry *e = &map->entries[i];
		uint64_t	v = 1;

		/* the names of one shared tensor (consecutive entries) count once */
		if ((!e->required && e->use != TFM_HF_SHARED) || e->use == TFM_HF_BUFFER ||
			e->use == TFM_HF_TIED ||
			(e->use == TFM_HF_SHARED && i > 0 && map->entries[i - 1].use == TFM_HF_SHARED))
			continue;
		for (int k = 0; k < e->ndim; k++)
			v *= e->dims[k] >= 0 ? (uint64_t) e->dims[k] : 0;
		n += v;
	}
	return n;
}

void
tfm_hf_map_free(tfm_hf_map *map)
{
	if (!map)
		return;
	free(map->entries);
	free(map->seen);
	free(map->tied);
	free(map);
}

tfm_hf_entry *
tfm_hf_match(tfm_hf_map *map, const char *name, size_t len)
{
	size_t		pl = map->prefix ? strlen(map->prefix) : 0;

	for (int i = 0; i < map->n; i++)
	{
		tfm_hf_entry *e = &map->entries[i];
		size_t		el = strlen(e->name);

		if (len == el && memcmp(name, e->name, el) == 0)
			return e;
		if (e->prefixable && pl > 0 && len == pl + el &&
			memcmp(name, map->prefix, pl) == 0 && memcmp(name + pl, e->name, el) == 0)
			return e;
	}
	return NULL;
}

/* the side of the square tiles a transpose copies: 32 × 32 floats, 4 kB each way */
#define TRANSPOSE_TILE 32

/*
 * the a × b matrix src, transposed: out[j · ldo + i] = src[i · b + j], a
 * tile at a time (a row at a time wrote each value to another cache line,
 * and a 3B model's import spent a third of its time there)
 */
static void
transpose_into(float *out, size_t ldo, const float *src, size_t a, size_t b)
{
	for (size_t i0 = 0; i0 < a; i0 += TRANSPOSE_TILE)
	{
		size_t		i1 = i0 + TRANSPOSE_TILE < a ? i0 + TRANSPOSE_TILE : a;

		for (size_t j0 = 0; j0 < b; j0 += TRANSPOSE_TILE)
		{
			size_t		j1 = j0 + TRANSPOSE_TILE < b ? j0 + TRANSPOSE_TILE : b;

			for (size_t i = i0; i < i1; i++)
				for (size_t j = j0; j < j1; j++)
					out[j * ldo + i] = src[i * b + j];
		}
	}
}

static void
shape_str(char *buf, size_t len, int ndim, const int64_t *d64, const uint64_t *du)
{
	size_t		o = 0;

	o += snprintf(buf + o, len - o, "[");
	for (int i = 0; i < ndim && o < len; i++)
		o += snprintf(buf + o, len - o, "%s%lld", i ? ", " : "",
					  d64 ? (long long) d64[i] : (long long) du[i]);
	if (o < len)
		snprintf(buf + o, len - o, "]");
}

float *
tfm_hf_copy_place(const tfm_model *m, const tfm_hf_entry *e, size_t n)
{
	const tfm_param_info *p;

	if (e->use != TFM_HF_COPY || !(p = tfm_model_find(m, e->target)) || p->size != n)
		return NULL;
	return m->params + p->offset;
}

int
tfm_hf_claim(tfm_hf_map *map, tfm_hf_entry *e, const tfm_st_tensor *t, char *err, size_t errlen)
{
	bool		shape_ok = t->ndim == e->ndim;

	if (map->seen[e - map->entries])
	{
		snprintf(err, errlen, "tensor \"%s\" appears twice (with and without the prefix \"%s\")",
				 e->name, map->prefix ? map->prefix : "");
		return -1;
	}
	map->seen[e - map->entries] = true;
	for (int i = 0; shape_ok && i < e->ndim; i++)
		if (e->dims[i] >= 0 && (uint64_t) e->dims[i] != t->dims[i])
			shape_ok = false;
	if (!shape_ok)
	{
		char		want[96],
					got[160];

		shape_str(want, sizeof(want), e->ndim, e->dims, NULL);
		shape_str(got, sizeof(got), t->ndim, NULL, t->dims);
		snprintf(err, errlen, "tensor \"%s\" has shape %s, the config implies %s",
				 t->name, got, want);
		return -1;
	}
	return 0;
}

int
tfm_hf_load_tensor(tfm_model *m, tfm_hf_map *map, tfm_hf_entry *e,
				   const tfm_st_tensor *t, const uint8_t *src, char *err, size_t errlen)
{
	const tfm_param_info *p = NULL;
	size_t		n = (size_t) t->n_values;
	float	   *dst,
			   *tmp = NULL;
	size_t		bad;
	tfm_status	se;

	if (tfm_hf_claim(map, e, t, err, errlen) != 0)
		return -1;
	if (e->use == TFM_HF_BUFFER)
		return 0;
	if (!tfm_st_dtype_is_float(t->dtype))
	{
		snprintf(err, errlen, "tensor \"%s\" has dtype %s; weights must be F32, F16 or BF16",
				 t->name, tfm_st_dtype_name(t->dtype) ? tfm_st_dtype_name(t->dtype) : "?");
		return -1;
	}
	p = tfm_model_find(m, e->target);
	if (p && e->use == TFM_HF_SLICE)
	{
		/* a 2-D (out, in) into columns col0.. of (in, width); 1-D into col0.. */
		size_t		width = p->ndim == 2 ? (size_t) p->dims[1] : (size_t) p->dims[0];
		size_t		rows = t->ndim == 2 ? (size_t) t->dims[1] : 1;
		size_t		cols = (size_t) t->dims[0];

		if (t->ndim != p->ndim || rows != (size_t) (p->ndim == 2 ? p->dims[0] : 1) ||
			e->col0 < 0 || (size_t) e->col0 + cols > width)
			p = NULL;
	}
	else if (p && e->use == TFM_HF_TRANSPOSE_COLS)
	{
		/* a 2-D (a, b) into columns col0 .. col0+a-1 of (b, width) */
		if (p->ndim != 2 || (uint64_t) p->dims[0] != t->dims[1] ||
			e->col0 < 0 || (uint64_t) e->col0 + t->dims[0] > (uint64_t) p->dims[1])
			p = NULL;
	}
	else if (p && p->size != n)
		p = NULL;
	if (!p)
	{
		snprintf(err, errlen, "tensor \"%s\" has no place in the model. Please report a bug.",
				 t->name);
		return -1;
	}
	if (e->use == TFM_HF_COPY || e->use == TFM_HF_COPY_PLUS1)
		dst = m->params + p->offset;
	else
	{
		tmp = malloc(sizeof(float) * (n > 0 ? n : 1));
		if (!tmp)
		{
			snprintf(err, errlen, "out of memory converting tensor \"%s\"", t->name);
			return -1;
		}
		dst = tmp;
	}
	/* values the caller wrote in place already (tfm_hf_copy_place) are not copied */
	if (!(t->dtype == TFM_ST_F32 && (const void *) src == (const void *) dst) &&
		tfm_st_tensor_to_f32(dst, t, src, (size_t) (t->end - t->begin), &se) != TFM_OK)
	{
		snprintf(err, errlen, "%s", se.msg);
		free(tmp);
		return -1;
	}
	if (tfm_st_find_nonfinite(&bad, dst, n))
	{
		snprintf(err, errlen, "tensor \"%s\" holds %s at index %zu", t->name,
				 isnan(dst[bad]) ? "NaN" : "an infinity", bad);
		free(tmp);
		return -1;
	}
	if (e->use == TFM_HF_COPY_PLUS1)
	{
		for (size_t i = 0; i < n; i++)
			dst[i] += 1.0f;
	}
	else if (e->use == TFM_HF_SLICE)
	{
		/* file (cols = out features, rows = in features) -> tfm row r, column col0 + c */
		size_t		width = p->ndim == 2 ? (size_t) p->dims[1] : (size_t) p->dims[0];

		transpose_into(m->params + p->offset + e->col0, width, tmp, (size_t) t->dims[0],
					   t->ndim == 2 ? (size_t) t->dims[1] : 1);
		free(tmp);
	}
	else if (e->use == TFM_HF_TRANSPOSE)
	{
		/* (a, b) in the file -> (b, a) in tfm */
		transpose_into(m->params + p->offset, (size_t) t->dims[0], tmp, (size_t) t->dims[0],
					   (size_t) t->dims[1]);
		free(tmp);
	}
	else if (e->use == TFM_HF_TRANSPOSE_COLS)
	{
		/* (a, b) in the file -> columns col0 .. col0+a-1 of a (b, width) tensor */
		transpose_into(m->params + p->offset + (size_t) e->col0, (size_t) p->dims[1], tmp,
					   (size_t) t->dims[0], (size_t) t->dims[1]);
		free(tmp);
	}
	else if (e->use == TFM_HF_TIED)
	{
		free(map->tied);
		map->tied = tmp;
		map->tied_entry = e;
	}
	else if (e->use == TFM_HF_SHARED)
	{
		/* the first name to come fills the tensor; every other must hold the same */
		float	   *target = m->params + p->offset;
		bool		same = !map->shared_loaded || memcmp(target, tmp, sizeof(float) * n) == 0;

		if (!map->shared_loaded)
			memcpy(target, tmp, sizeof(float) * n);
		map->shared_loaded = true;
		free(tmp);
		if (!same)
		{
			snprintf(err, errlen, "tensor \"%s\" differs from the embedding it is tied to "
					 "(Marian's shared, encoder, decoder and output embeddings are one)", t->name);
			return -1;
		}
	}
	return 0;
}

int
tfm_hf_finish(const tfm_model *m, const tfm_hf_map *map, char *err, size_t errlen)
{
	for (int i = 0; i < map->n; i++)
		if (map->entries[i].use == TFM_HF_SHARED && !map->shared_loaded)
		{
			snprintf(err, errlen, "tensor \"%s%s\" is missing (or any of its tied names)",
					 map->entries[i].prefixable && map->prefix ? map->prefix : "",
					 map->entries[i].name);
			return -1;
		}
	for (int i = 0; i < map->n; i++)
		if (map->entries[i].required && !map->seen[i])
		{
			snprintf(err, errlen, "tensor \"%s%s\" is missing",
					 map->entries[i].prefixable && map->prefix ? map->prefix : "",
					 map->entries[i].name);
			return -1;
		}
	if (map->tied)
	{
		const tfm_param_info *p = tfm_model_find(m, map->tied_entry->target);

		if (!p || memcmp(map->tied, m->params + p->offset, sizeof(float) * p->size) != 0)
		{
			snprintf(err, errlen, "tensor \"%s\" differs from the embedding it is tied to "
					 "(tie_word_embeddings is true)", map->tied_entry->name);
			return -1;
		}
	}
	return 0;
}
