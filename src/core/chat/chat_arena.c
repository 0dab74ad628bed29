/*
 * chat_arena.c: the arena a chat template's nodes and a rendering's values
 * live in: blocks of at least 64 kB, freed together.
 */
#include <stdlib.h>
#include <string.h>

#include "chat_ast.h"

typedef struct chat_block
{
	struct chat_block *next;
	size_t		used,
				cap;
	_Alignas(16) unsigned char data[];
} chat_block;

void *
chat_alloc(chat_arena *a, size_t n)
{
	chat_block *b = a->head;

	n = (n + 15) & ~(size_t) 15;
	if (!b || b->used + n > b->cap)
	{
		size_t		cap = n > 65536 ? n : 65536;

		b = malloc(sizeof(chat_block) + cap);
		if (!b)
			return NULL;
		b->next = a->head;
		b->used = 0;
		b->cap = cap;
		a->head = b;
	}
	memset(b->data + b->used, 0, n);
	b->used += n;
	return b->data + b->used - n;
}

void
chat_arena_free(chat_arena *a)
{
	while (a->head)
	{
		chat_block *n = a->head->next;

		free(a->head);
		a->head = n;
	}
}

