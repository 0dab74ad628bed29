/*
 * amx_tiles.h — what the AMX products share (bf16/lowp_bf16_amx.c,
 * int8/lowp_int8_amx.c): the one tile configuration both use (eight tiles
 * of 16 rows × 64 bytes: A's 16 rows × 16 pairs or quads, W's 16 pairs or
 * quads × 16 columns, C's 16 × 16 fp32 or int32 sums), and the compiler
 * barrier GCC's tile loads and stores need.  Included by _amx.c files only.
 */
#ifndef TFM_AMX_TILES_H
#define TFM_AMX_TILES_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

/*
 * GCC's tile load and store intrinsics are asm statements without a memory
 * operand: a buffer written for a tile load, or read after a tile store,
 * needs this barrier so the compiler neither drops nor moves those accesses.
 */
#define TILE_MEMORY_BARRIER() __asm__ volatile("" ::: "memory")

typedef struct amx_tile_config
{
	uint8_t		palette;
	uint8_t		start_row;
	uint8_t		reserved[14];
	uint16_t	colsb[16];
	uint8_t		rows[16];
} amx_tile_config;

/* the calling thread's tiles: palette 1, eight of 16 rows × 64 bytes (LDTILECFG) */
__attribute__((target("amx-tile"))) static inline void
amx_config_tiles(void)
{
	amx_tile_config cfg;

	memset(&cfg, 0, sizeof(cfg));
	cfg.palette = 1;
	for (int t = 0; t < 8; t++)
	{
		cfg.rows[t] = 16;
		cfg.colsb[t] = 64;
	}
	_tile_loadconfig(&cfg);
}

/* the tiles given back (TILERELEASE), at the end of each thread's share of a product */
__attribute__((target("amx-tile"))) static inline void
amx_release_tiles(void)
{
	_tile_release();
}

#endif							/* TFM_AMX_TILES_H */
