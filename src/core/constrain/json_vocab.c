/*
 * json_vocab.c — a vocabulary's tokens as a byte trie, and the token mask:
 * the trie is walked depth first against a recognizer state, a child's
 * state being its parent's stepped by one byte, so tokens that share a
 * prefix share its steps and a subtree whose prefix leaves the language is
 * never entered.  A step then costs the trie nodes inside the language
 * (inside a string: most of the trie; at a key or a literal: a few nodes),
 * not V × token length.
 *
 * Layout: nodes in preorder, children in byte order (first child, next
 * sibling); the ids whose bytes end at a node chained from it.  Built by
 * sorting the ids by their bytes and inserting each along the previous
 * one's path.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE				/* qsort_r */
#endif
#include <stdlib.h>
#include <string.h>

#include "tfm/status.h"
#include "json_internal.h"

struct tfm_jvocab
{
	int32_t		V;
	int32_t		n_nodes;
	int32_t    *first_child;	/* (n_nodes) -1: none */
	int32_t    *next_sibling;
	uint8_t    *byte;			/* the byte of the edge into the node */
	int32_t    *first_id;		/* ids ending here, chained by next_id */
	int32_t    *next_id;		/* (V) */
	int32_t    *end_node;		/* (V) id's node, -1: never allowed */
	int32_t		max_len;
	tfm_jstate *states;			/* (max_len + 1) the walk's states */
	int32_t    *stack;			/* (max_len + 1) the walk's nodes */
};

typedef struct sort_ctx
{
	const uint8_t *const *bytes;
	const size_t *lens;
} sort_ctx;

static int
by_bytes(const void *x, const void *y, void *arg)
{
	const sort_ctx *c = arg;
	int32_t		a = *(const int32_t *) x,
				b = *(const int32_t *) y;
	size_t		n = c->lens[a] < c->lens[b] ? c->lens[a] : c->lens[b];
	int			r = n ? memcmp(c->bytes[a], c->bytes[b], n) : 0;

	if (r != 0)
		return r;
	if (c->lens[a] != c->lens[b])
		return c->lens[a] < c->lens[b] ? -1 : 1;
	return a - b;
}

void
tfm_jvocab_free(tfm_jvocab *v)
{
	if (!v)
		return;
	free(v->first_child);
	free(v->next_sibling);
	free(v->byte);
	free(v->first_id);
	free(v->next_id);
	free(v->end_node);
	free(v->states);
	free(v->stack);
	free(v);
}

int
tfm_jvocab_create(tfm_jvocab **out, const uint8_t *const *bytes, const size_t *lens, int32_t V,
				  tfm_status *err)
{
	tfm_jvocab *v = calloc(1, sizeof(tfm_jvocab));
	int32_t    *order = NULL,
			   *path = NULL,
			   *last_child = NULL,
				n = 0;
	size_t		total = 1;
	sort_ctx	sc = {bytes, lens};

	*out = NULL;
	if (!v || V < 1)
	{
		free(v);
		return V < 1 ? tfm_status_set(err, TFM_EINVAL, "an empty vocabulary")
			: tfm_status_set(err, TFM_ENOMEM, "out of memory for the vocabulary's trie");
	}
	v->V = V;
	for (int32_t i = 0; i < V; i++)
		if (lens[i] > 0 && lens[i] <= TFM_JSON_MAX_TOKEN)
		{
			total += lens[i];
			if ((int32_t) lens[i] > v->max_len)
				v->max_len = (int32_t) lens[i];
		}
	order = malloc(sizeof(int32_t) * (size_t) V);
	path = malloc(sizeof(int32_t) * (size_t) (v->max_len + 1));
	last_child = malloc(sizeof(int32_t) * total);
	v->first_child = malloc(sizeof(int32_t) * total);
	v->next_sibling = malloc(sizeof(int32_t) * total);
	v->byte = calloc(total, 1);
	v->first_id = malloc(sizeof(int32_t) * total);
	v->next_id = malloc(sizeof(int32_t) * (size_t) V);
	v->end_node = malloc(sizeof(int32_t) * (size_t) V);
	v->states = malloc(sizeof(tfm_jstate) * (size_t) (v->max_len + 1));
	v->stack = malloc(sizeof(int32_t) * (size_t) (v->max_len + 1));
	if (!order || !path || !last_child || !v->first_child || !v->next_sibling || !v->byte ||
		!v->first_id || !v->next_id || !v->end_node || !v->states || !v->stack)
	{
		free(order);
		free(path);
		free(last_child);
		tfm_jvocab_free(v);
		return tfm_status_set(err, TFM_ENOMEM, "out of memory for the vocabulary's trie");
	}
	for (int32_t i = 0; i < V; i++)
	{
		order[n] = i;
		v->end_node[i] = -1;
		v->next_id[i] = -1;
		if (lens[i] > 0 && lens[i] <= TFM_JSON_MAX_TOKEN)
			n++;
	}
	qsort_r(order, (size_t) n, sizeof(int32_t), by_bytes, &sc);

	/* the root, then each id along the previous one's path */
	v->n_nodes = 1;
	v->first_child[0] = v->next_sibling[0] = v->first_id[0] = last_child[0] = -1;
	path[0] = 0;
	{
		int32_t		prev = -1;

		for (int32_t k = 0; k < n; k++)
		{
			int32_t		id = order[k];
			size_t		common = 0;

			if (prev >= 0)
				while (common < lens[prev] && common < lens[id] &&
					   bytes[prev][common] == bytes[id][common])
					common++;
			for (size_t d = common; d < lens[id]; d++)
			{
				int32_t		parent = path[d],
							node = v->n_nodes++;

				v->first_child[node] = v->next_sibling[node] = v->first_id[node] = -1;
				last_child[node] = -1;
				v->byte[node] = bytes[id][d];
				if (last_child[parent] < 0)
					v->first_child[parent] = node;
				else
					v->next_sibling[last_child[parent]] = node;
				last_child[parent] = node;
				path[d + 1] = node;
			}
			{
				int32_t		node = path[lens[id]];

				/* ids sorted within equal bytes: chain them in order */
				v->end_node[id] = node;
				if (v->first_id[node] < 0)
					v->first_id[node] = id;
				else
				{
					int32_t		t = v->first_id[node];

					while (v->next_id[t] >= 0)
						t = v->next_id[t];
					v->next_id[t] = id;
				}
			}
			prev = id;
		}
	}
	free(order);
	free(path);
	free(last_child);
	*out = v;
	return TFM_OK;
}

int
tfm_jvocab_allowed(tfm_jvocab *v, const tfm_jschema *s, const tfm_jstate *st, uint8_t *allowed,
				   int (*poll) (void *), void *poll_arg)
{
	int32_t		depth = 0,
				count = 0;
	long		visited = 0;

	memset(allowed, 0, (size_t) v->V);
	tfm_jstate_copy(&v->states[0], st);
	v->stack[0] = v->first_child[0];
	/* stack[d]: the next child to try below the node at depth d */
	while (depth >= 0)
	{
		int32_t		node = v->stack[depth];

		if (node < 0)
		{
			depth--;
			continue;
		}
		v->stack[depth] = v->next_sibling[node];
		if ((++visited & 4095) == 0 && poll && poll(poll_arg) != 0)
			return TFM_ECANCELED;
		tfm_jstate_copy(&v->states[depth + 1], &v->states[depth]);
		if (!tfm_jstate_step(s, &v->states[depth + 1], v->byte[node]))
			continue;
		for (int32_t id = v->first_id[node]; id >= 0; id = v->next_id[id])
		{
			allowed[id] = 1;
			count++;
		}
		if (v->first_child[node] >= 0 && depth + 1 < v->max_len)
		{
			depth++;
			v->stack[depth] = v->first_child[node];
		}
	}
	return count;
}

bool
tfm_jvocab_step_token(const tfm_jvocab *v, const tfm_jschema *s, tfm_jstate *st, int32_t id)
{
	int32_t		path[TFM_JSON_MAX_TOKEN];
	int32_t		n = 0;

	if (id < 0 || id >= v->V || v->end_node[id] < 0)
		return false;
	/* the bytes of id, read back from its node up: found by walking down */
	{
		int32_t		target = v->end_node[id],
					node = 0;

		/* preorder: the child whose subtree holds target is the last one not after it */
		while (node != target)
		{
			int32_t		c = v->first_child[node],
						best = -1;

			for (; c >= 0 && c <= target; c = v->next_sibling[c])
				best = c;
			if (best < 0 || n >= TFM_JSON_MAX_TOKEN)
				return false;
			path[n++] = best;
			node = best;
		}
	}
	for (int32_t k = 0; k < n; k++)
		if (!tfm_jstate_step(s, st, v->byte[path[k]]))
			return false;
	return true;
}
