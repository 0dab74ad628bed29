/*
 * tok_util.c: allocation (malloc: a size of 0 is 1), error messages,
 * names of kinds, statuses and specials, growable arrays.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "tok_internal.h"

void *
tfm_tok_alloc(size_t n)
{
	return malloc(n ? n : 1);
}

void *
tfm_tok_calloc(size_t n, size_t size)
{
	void *p;

	if (size && n > SIZE_MAX / size)
		return NULL;
	p = tfm_tok_alloc(n * size);
	if (p)
		memset(p, 0, n * size);
	return p;
}

void
tfm_tok_dealloc(void *p)
{
	if (p)
		free(p);
}

int
tfm_tok_oom(tfm_status *err)
{
	return tfm_status_set(err, TFM_ENOMEM, "out of memory in the tokenizer");
}

static const char *const kind_names[] = {NULL, "byte", "char", "word", "bpe", "wordpiece",
	"unigram"};

const char *
tfm_tok_kind_name(tfm_tok_kind kind)
{
	if (kind < TFM_TOK_BYTE || kind > TFM_TOK_UNIGRAM)
		return NULL;
	return kind_names[kind];
}

int
tfm_tok_kind_parse(tfm_tok_kind *kind, const char *name)
{
	int k;

	for (k = TFM_TOK_BYTE; k <= TFM_TOK_UNIGRAM; k++)
		if (name && strcmp(name, kind_names[k]) == 0)
		{
			*kind = (tfm_tok_kind) k;
			return TFM_OK;
		}
	return TFM_EINVAL;
}

static const char *const special_pieces[TFM_TOK_N_SPECIALS] = {
	"<pad>", "<unk>", "<bos>", "<eos>", "<cls>", "<sep>"
};

const char *
tfm_tok_special_piece(tfm_tok_special which)
{
	if ((int) which < 0 || (int) which >= TFM_TOK_N_SPECIALS)
		return NULL;
	return special_pieces[which];
}

int
tfm_tok_bytes_append(tfm_tok_bytes *b, const void *p, size_t n)
{
	if (n > SIZE_MAX - b->len)
		return TFM_ENOMEM;
	if (tfm_grow((void **) &b->data, &b->cap, b->len + n, 1))
		return TFM_ENOMEM;
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	return TFM_OK;
}

int
tfm_tok_ivec_push(tfm_tok_ivec *v, int32_t x)
{
	if (v->len == v->cap &&
		tfm_grow((void **) &v->data, &v->cap, v->len + 1, sizeof(int32_t)))
		return TFM_ENOMEM;
	v->data[v->len++] = x;
	return TFM_OK;
}

void
tfm_tok_bytes_free(tfm_tok_bytes *b)
{
	tfm_tok_dealloc(b->data);
	memset(b, 0, sizeof(*b));
}

void
tfm_tok_ivec_free(tfm_tok_ivec *v)
{
	tfm_tok_dealloc(v->data);
	memset(v, 0, sizeof(*v));
}
