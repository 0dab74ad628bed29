/*
 * rng.h — tfm's seeded pseudo-random numbers.
 *
 * Two generators, both reproducible bit for bit from a 64-bit seed:
 *   - tfm_rng: a sequential xoshiro256** stream (initialisation, shuffling,
 *     sampling), state kept by the caller;
 *   - tfm_hash_uniform: a counter-based generator (a pure function of key and
 *     index), used for dropout so that a mask can be regenerated in the
 *     backward pass and does not depend on the number of threads.
 */
#ifndef TFM_RNG_H
#define TFM_RNG_H

#include <stdint.h>

typedef struct tfm_rng
{
	uint64_t	s[4];
} tfm_rng;

void		tfm_rng_seed(tfm_rng *rng, uint64_t seed);
uint64_t	tfm_rng_next(tfm_rng *rng);
/* uniform in [0, 1) with 24 random bits */
float		tfm_rng_uniform(tfm_rng *rng);
/* standard normal (Box-Muller) */
float		tfm_rng_normal(tfm_rng *rng);
/* uniform integer in [0, n) for n > 0 */
uint64_t	tfm_rng_below(tfm_rng *rng, uint64_t n);

/* splitmix64 finaliser: a strong 64-bit mixing function */
static inline uint64_t
tfm_mix64(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ULL;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
	return x ^ (x >> 31);
}

/* 32 random bits that depend only on (key, index) */
static inline uint32_t
tfm_hash32(uint64_t key, uint64_t index)
{
	return (uint32_t) (tfm_mix64(key ^ tfm_mix64(index)) >> 32);
}

/* derive a sub-key from a key and a small tag (layer, site, step ...) */
static inline uint64_t
tfm_subkey(uint64_t key, uint64_t tag)
{
	return tfm_mix64(key + 0x632BE59BD9B4E019ULL * (tag + 1));
}

#endif							/* TFM_RNG_H */
