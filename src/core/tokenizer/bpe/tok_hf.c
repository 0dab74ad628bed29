/*
 * tok_hf.c: byte-level BPE of a Hugging Face tokenizer.json (RoBERTa's,
 * Llama 3's, SmolLM's) as a tfm bpe tokenizer with the HF_BPE flag.
 *
 * The caller (the SQL layer, which reads the JSON) passes every id's piece,
 * the merges as id pairs and the ids the file gives tfm's specials; here
 * the pieces are mapped back from GPT-2's printable byte form to raw bytes,
 * the specials the file does not name are found by tfm's names or added
 * after the last id, and everything goes through the one validating build
 * of tok_vocab.c.  Encoding (tok_encode.c) then pre-tokenizes with the
 * pattern and digit splitting the flags choose and merges by rank as
 * Hugging Face's BPE does (no gpt-3-encoder aliases).
 */
#include <stdio.h>

#include "../tok_internal.h"
#include "../unicode/tok_unicode.h"

int
tfm_tok_import_hf_bpe(tfm_tokenizer **out, const uint8_t *const *pieces, const size_t *piece_lens,
					  const uint8_t *literal, int32_t n_pieces, const int32_t *merge_lr,
					  int32_t n_merges, const int32_t special_ids[TFM_TOK_N_SPECIALS],
					  uint32_t flags, tfm_status *err)
{
	const uint32_t allowed = TFM_TOK_INFO_TEXT_BOS | TFM_TOK_INFO_LLAMA3 | TFM_TOK_INFO_DIGITS |
		TFM_TOK_INFO_DIGIT_RUNS | TFM_TOK_INFO_PREFIX_SPACE | TFM_TOK_INFO_IGNORE_MERGES |
		TFM_TOK_INFO_SPLIT | TFM_TOK_INFO_NFC;
	int16_t dec[324];
	tfm_tok_strtab tab = {0};
	tfm_tok_bytes raw = {0};
	tfm_tok_info info;
	int32_t i, n;
	int st = TFM_OK, k;

	*out = NULL;
	if (flags & ~allowed)
		return tfm_status_set(err, TFM_EINVAL, "unknown tokenizer.json bpe flags 0x%x",
							(unsigned) (flags & ~allowed));
	if (n_pieces < 1 || n_pieces > TFM_TOK_MAX_VOCAB_SIZE - TFM_TOK_N_SPECIALS)
		return tfm_status_set(err, TFM_ELIMIT, "a tokenizer.json bpe needs 1 to %d ids, not %d",
							TFM_TOK_MAX_VOCAB_SIZE - TFM_TOK_N_SPECIALS, (int) n_pieces);
	if (n_merges < 0 || n_merges > TFM_TOK_MAX_VOCAB_SIZE)
		return tfm_status_set(err, TFM_ELIMIT, "too many merges (%d)", (int) n_merges);
	if ((flags & TFM_TOK_INFO_SPLIT) &&
		(flags & (TFM_TOK_INFO_LLAMA3 | TFM_TOK_INFO_DIGITS | TFM_TOK_INFO_DIGIT_RUNS)))
		return tfm_status_set(err, TFM_EINVAL, "Split rules replace the pattern and digits flags");
	if ((flags & TFM_TOK_INFO_TEXT_BOS) && special_ids[TFM_TOK_BOS] < 0)
		return tfm_status_set(err, TFM_EINVAL, "text-bos needs the file's bos id");
	memset(&info, 0, sizeof(info));
	for (k = 0; k < TFM_TOK_N_SPECIALS; k++)
	{
		info.special_ids[k] = special_ids[k];
		if (special_ids[k] < -1 || special_ids[k] >= n_pieces)
			return tfm_status_set(err, TFM_EINVAL, "special %s has id %d, not one of the %d ids",
								tfm_tok_special_piece((tfm_tok_special) k), (int) special_ids[k],
								(int) n_pieces);
	}

	/* the pieces as raw bytes, id order */
	tfm_tok_byte_decoder(dec);
	for (i = 0; i < n_pieces; i++)
	{
		int32_t e;
		int added;

		if (!pieces[i] || piece_lens[i] == 0)
		{
			st = tfm_status_set(err, TFM_EFORMAT, "id %d has no piece", (int) i);
			goto done;
		}
		if (literal && (literal[i] & 1))
		{
			raw.len = 0;
			if (tfm_tok_bytes_append(&raw, pieces[i], piece_lens[i]))
				goto oom;
		}
		else if ((st = tfm_tok_byte_unmap(&raw, dec, pieces[i], piece_lens[i])) != TFM_OK &&
				 st == TFM_EFORMAT && literal && (literal[i] & 2))
		{
			/* an added token in model.vocab written as its text (DeepSeek's) */
			raw.len = 0;
			if (tfm_tok_bytes_append(&raw, pieces[i], piece_lens[i]))
				goto oom;
			st = TFM_OK;
		}
		else if (st != TFM_OK)
		{
			if (st == TFM_EFORMAT)
				st = tfm_status_set(err, st,
								  "the piece of id %d uses a character outside GPT-2's byte mapping",
								  (int) i);
			goto done;
		}
		if (tfm_tok_strtab_intern(&e, &added, &tab, raw.data, raw.len))
			goto oom;
		if (!added)
		{
			st = tfm_status_set(err, TFM_EFORMAT, "ids %d and %d have the same piece",
							  (int) e, (int) i);
			goto done;
		}
	}

	/* specials the file does not name: tfm's piece if the file has it as an
	 * added token (RoBERTa's "<pad>", "<unk>") and it is no other special,
	 * else added after the last id ("<tfm_unk>" where the piece "<unk>" is
	 * ordinary text, as Qwen's is) */
	n = n_pieces;
	for (k = 0; k < TFM_TOK_N_SPECIALS; k++)
	{
		const char *name = tfm_tok_special_piece((tfm_tok_special) k);
		char alt[32];
		int32_t e, j;
		int added, taken = 0;

		if (info.special_ids[k] >= 0)
			continue;
		e = tfm_tok_strtab_find(&tab, (const uint8_t *) name, strlen(name));
		for (j = 0; j < TFM_TOK_N_SPECIALS && e >= 0; j++)
			taken |= info.special_ids[j] == e;
		if (e >= 0 && e < n_pieces && !taken && literal && literal[e])
		{
			info.special_ids[k] = e;
			continue;
		}
		if (e >= 0)
		{
			snprintf(alt, sizeof(alt), "<tfm_%s", name + 1);
			name = alt;
		}
		if (tfm_tok_strtab_intern(&e, &added, &tab, (const uint8_t *) name, strlen(name)))
			goto oom;
		if (!added)
		{
			st = tfm_status_set(err, TFM_EFORMAT,
							  "the piece %s of id %d is already another special", name, (int) e);
			goto done;
		}
		info.special_ids[k] = n++;
	}
	info.format_version = TFM_TOK_FORMAT_VERSION;
	info.kind = TFM_TOK_BPE;
	info.flags = TFM_TOK_INFO_HF_BPE | flags;
	info.vocab_size = n;
	info.n_merges = n_merges;
	st = tfm_tok_build_from_strtab(out, &info, &tab, merge_lr, err);
	goto done;
oom:
	st = tfm_tok_oom(err);
done:
	tfm_tok_strtab_free(&tab);
	tfm_tok_bytes_free(&raw);
	return st;
}
