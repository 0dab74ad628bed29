/*
 * marian_spm.c — a Marian checkpoint's tokenizer as opus-mt ships it: a
 * SentencePiece model file (source.spm or target.spm, a protobuf
 * ModelProto) whose pieces take the ids of the shared vocab.json, stored
 * as a tfm unigram tokenizer (the pipeline unigram.c builds from the
 * tokenizer.json Hugging Face's converter writes for such a model:
 * Precompiled charsmap, right Strip, runs of spaces as one "▁", Metaspace
 * before every word).
 *
 * The file is read strictly (every length and varint bounded by the
 * buffer; groups and unknown wire types refused): pieces (field 1: piece 1,
 * score 2, type 3), trainer_spec (2: model_type 3 must be UNIGRAM,
 * treat_whitespace_as_suffix 24 false), normalizer_spec (3:
 * precompiled_charsmap 2; add_dummy_prefix 3, remove_extra_whitespaces 4
 * and escape_whitespaces 5 must keep their default true), a
 * denormalizer_spec without a charsmap.  NORMAL pieces are matched in
 * text, with their scores; UNKNOWN is vocab.json's <unk>; CONTROL pieces
 * (<s>, </s>) and UNUSED ones are not matched; USER_DEFINED and BYTE
 * pieces are refused.  As MarianTokenizer, a piece maps to its vocab.json
 * id: every NORMAL piece must be there (else a text would map to <unk>
 * where tfm would find another segmentation, so it is refused by name),
 * and the vocab.json entries the model file lacks are never matched; an
 * unknown run whose text is one of them is its id (MarianTokenizer looks
 * SentencePiece's unknown pieces up in vocab.json), else <unk>.
 * vocab.json's "<unk>", "</s>" and "<pad>" are tfm's <unk>, <eos>, <pad>.
 * Target-language codes are taken as MarianTokenizer takes them: ">>fra<<"
 * at the start of a text is its vocab.json id (<unk> if none), and every
 * ">>…<<" is taken out of the text (tok_unigram_specials.c).
 */
#include "postgres.h"

#include <limits.h>
#include <math.h>

#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"

#include "import/hf_files.h"
#include "storage/tokenizers/tokenizers.h"
#include "tfm/tokenizer.h"

#define SP "\xE2\x96\x81"		/* U+2581 ▁ */

/* SentencePiece's piece types (sentencepiece_model.proto) */
#define SPM_NORMAL 1
#define SPM_UNKNOWN 2
#define SPM_CONTROL 3
#define SPM_USER_DEFINED 4
#define SPM_UNUSED 5
#define SPM_BYTE 6

typedef struct PbReader
{
	const uint8 *p,
			   *end;
	const char *what;			/* the file, for messages */
} PbReader;

static void
malformed(const PbReader *r, const char *why)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("%s is not a SentencePiece model: %s", r->what, why)));
}

static uint64
varint(PbReader *r)
{
	uint64		x = 0;

	for (int s = 0; s < 64; s += 7)
	{
		uint8		c;

		if (r->p >= r->end)
			malformed(r, "a varint runs past the end");
		c = *r->p++;
		x |= (uint64) (c & 0x7F) << s;
		if (c < 0x80)
			return x;
	}
	malformed(r, "a varint is longer than 10 bytes");
	return 0;
}

/* the next field: its number, wire type, and (length-delimited) its bytes in *sub */
static bool
next_field(PbReader *r, int *field, int *wire, uint64 *val, PbReader *sub)
{
	uint64		key;

	if (r->p >= r->end)
		return false;
	key = varint(r);
	*field = (int) (key >> 3);
	*wire = (int) (key & 7);
	if (*field < 1 || key >> 3 > INT_MAX)
		malformed(r, "a field number is out of range");
	switch (*wire)
	{
		case 0:
			*val = varint(r);
			break;
		case 1:
		case 5:
			{
				int			n = *wire == 1 ? 8 : 4;

				if (r->end - r->p < n)
					malformed(r, "a fixed-size field runs past the end");
				*val = 0;
				memcpy(val, r->p, n);	/* little-endian, as protobuf's */
				r->p += n;
				break;
			}
		case 2:
			{
				uint64		n = varint(r);

				if (n > (uint64) (r->end - r->p))
					malformed(r, "a length runs past the end");
				sub->p = r->p;
				sub->end = r->p + n;
				sub->what = r->what;
				r->p += n;
				break;
			}
		default:
			malformed(r, psprintf("wire type %d is not supported", *wire));
	}
	return true;
}

/* a field of a known number must have the wire type its .proto gives */
static void
want_wire(const PbReader *r, int wire, int want, const char *name)
{
	if (wire != want)
		malformed(r, psprintf("field %s has wire type %d, not %d", name, wire, want));
}

typedef struct SpmPiece
{
	const uint8 *piece;
	int			len;
	float		score;
	int			type;
} SpmPiece;

static void
read_piece(PbReader *r, SpmPiece *out)
{
	int			f,
				w;
	uint64		v;
	PbReader	sub;

	memset(out, 0, sizeof(*out));
	out->type = SPM_NORMAL;
	while (next_field(r, &f, &w, &v, &sub))
	{
		if (f == 1)
		{
			want_wire(r, w, 2, "SentencePiece.piece");
			out->piece = sub.p;
			out->len = (int) (sub.end - sub.p);
			if (pg_encoding_verifymbstr(PG_UTF8, (const char *) out->piece, out->len) != out->len)
				malformed(r, "a piece is not valid UTF-8");
		}
		else if (f == 2)
		{
			uint32		u = (uint32) v;

			want_wire(r, w, 5, "SentencePiece.score");
			memcpy(&out->score, &u, 4);
			if (isnan(out->score) || isinf(out->score))
				malformed(r, "a piece's score is not finite");
		}
		else if (f == 3)
		{
			want_wire(r, w, 0, "SentencePiece.type");
			if (v < SPM_NORMAL || v > SPM_BYTE)
				malformed(r, "a piece's type is unknown");
			out->type = (int) v;
		}
	}
	if (!out->piece)
		malformed(r, "a piece has no text");
}

/* the spec's normalizer, checked: SentencePiece's defaults, as the converter requires */
static const uint8 *
read_normalizer(PbReader *r, size_t *charsmap_len, bool denormalizer)
{
	int			f,
				w;
	uint64		v;
	PbReader	sub;
	const uint8 *charsmap = NULL;

	*charsmap_len = 0;
	while (next_field(r, &f, &w, &v, &sub))
	{
		if (f == 2)
		{
			want_wire(r, w, 2, "NormalizerSpec.precompiled_charsmap");
			charsmap = sub.p;
			*charsmap_len = sub.end - sub.p;
		}
		else if ((f == 3 || f == 4 || f == 5) && !denormalizer)
		{
			want_wire(r, w, 0, "NormalizerSpec option");
			if (v != 1)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("%s: normalizer option %s false is not supported", r->what,
								f == 3 ? "add_dummy_prefix" : f == 4 ? "remove_extra_whitespaces" :
								"escape_whitespaces"),
						 errdetail("tfm implements SentencePiece's defaults (true), as opus-mt's models have them.")));
		}
	}
	if (denormalizer && *charsmap_len > 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s: a denormalizer is not supported", r->what)));
	if (*charsmap_len > TFM_TOK_CHARSMAP_MAX_BYTES)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s: precompiled_charsmap is longer than %d bytes", r->what,
						TFM_TOK_CHARSMAP_MAX_BYTES)));
	return charsmap;
}

static void
read_trainer(PbReader *r)
{
	int			f,
				w;
	uint64		v;
	PbReader	sub;

	while (next_field(r, &f, &w, &v, &sub))
	{
		if (f == 3 && w == 0 && v != 1)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("%s: SentencePiece model_type %d is not supported", r->what, (int) v),
					 errdetail("tfm reads Unigram models (model_type 1) from .spm files.")));
		if (f == 24 && w == 0 && v != 0)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("%s: treat_whitespace_as_suffix is not supported", r->what)));
	}
}

/* vocab.json's id of a piece (-1 if absent) */
static int
vocab_id(JsonbContainer *vocab, const uint8 *piece, int len, int max)
{
	return tfm_hf_vocab_id(vocab, (const char *) piece, len, max);
}

void
tfm_hf_import_marian_spm(const char *name, const char *what, const uint8 *data, size_t size,
						 Jsonb *vocab_json, int model_vocab, bool text_eos, int32 *special_ids)
{
	PbReader	r = {data, data + size, what},
				sub;
	int			f,
				w;
	uint64		v;
	SpmPiece   *sp;
	int			n_sp = 0,
				cap = 256;
	const uint8 *charsmap = NULL;
	size_t		charsmap_len = 0;
	JsonbContainer *vocab;
	tfm_tok_unigram_spec spec;
	const uint8_t **pieces;
	size_t	   *lens;
	double	   *scores;
	uint8_t    *control;
	int			n;

	if (!JB_ROOT_IS_OBJECT(vocab_json) || JB_ROOT_IS_SCALAR(vocab_json))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("vocab.json must be a JSON object of pieces and their ids")));
	vocab = &vocab_json->root;
	n = JsonContainerSize(vocab);
	if (n < 1 || n > TFM_TOK_MAX_VOCAB_SIZE - TFM_TOK_N_SPECIALS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("vocab.json must have between 1 and %d pieces", TFM_TOK_MAX_VOCAB_SIZE - TFM_TOK_N_SPECIALS)));
	if (n != model_vocab)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("vocab.json has %d pieces, but the model's vocab_size is %d", n, model_vocab)));

	sp = palloc(sizeof(SpmPiece) * cap);
	while (next_field(&r, &f, &w, &v, &sub))
	{
		CHECK_FOR_INTERRUPTS();
		if (f == 1)
		{
			want_wire(&r, w, 2, "ModelProto.pieces");
			if (n_sp == cap)
			{
				if (cap >= TFM_TOK_MAX_VOCAB_SIZE)
					malformed(&r, "too many pieces");
				cap *= 2;
				sp = repalloc(sp, sizeof(SpmPiece) * cap);
			}
			read_piece(&sub, &sp[n_sp++]);
		}
		else if (f == 2)
		{
			want_wire(&r, w, 2, "ModelProto.trainer_spec");
			read_trainer(&sub);
		}
		else if (f == 3 || f == 5)
		{
			size_t		l;
			const uint8 *cm;

			want_wire(&r, w, 2, "ModelProto.normalizer_spec");
			cm = read_normalizer(&sub, &l, f == 5);
			if (f == 3)
			{
				charsmap = cm;
				charsmap_len = l;
			}
		}
	}
	if (n_sp == 0)
		malformed(&r, "it has no pieces");

	/* the pieces by vocab.json id: the model file's scores, the others never matched */
	pieces = palloc0(sizeof(uint8_t *) * n);
	lens = palloc0(sizeof(size_t) * n);
	scores = palloc0(sizeof(double) * n);
	control = palloc(n);
	memset(control, 1, n);
	{
		JsonbIterator *it = JsonbIteratorInit(vocab);
		JsonbValue	k,
					val;
		JsonbIteratorToken tok;

		while ((tok = JsonbIteratorNext(&it, &k, true)) != WJB_DONE)
		{
			int			id;

			if (tok != WJB_KEY)
				continue;
			tok = JsonbIteratorNext(&it, &val, true);
			id = val.type == jbvNumeric ? tfm_hf_uint(&val, "a vocab.json id", n - 1) : -1;
			if (id < 0 || pieces[id])
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("vocab.json must map its %d pieces to the ids 0 to %d, each once", n, n - 1)));
			pieces[id] = (const uint8_t *) k.val.string.val;
			lens[id] = k.val.string.len;
		}
	}
	memset(&spec, 0, sizeof(spec));
	for (int k = 0; k < TFM_TOK_N_SPECIALS; k++)
		spec.special_ids[k] = -1;
	spec.unk_id = vocab_id(vocab, (const uint8 *) "<unk>", 5, n - 1);
	if (spec.unk_id < 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("vocab.json has no \"<unk>\"")));
	spec.special_ids[TFM_TOK_UNK] = spec.unk_id;
	spec.special_ids[TFM_TOK_EOS] = vocab_id(vocab, (const uint8 *) "</s>", 4, n - 1);
	spec.special_ids[TFM_TOK_PAD] = vocab_id(vocab, (const uint8 *) "<pad>", 5, n - 1);
	for (int i = 0; i < n_sp; i++)
	{
		int			id;

		if (sp[i].type == SPM_USER_DEFINED || sp[i].type == SPM_BYTE)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("%s: %s pieces are not supported", what,
							sp[i].type == SPM_BYTE ? "byte" : "user-defined")));
		if (sp[i].type != SPM_NORMAL)
			continue;
		id = vocab_id(vocab, sp[i].piece, sp[i].len, n - 1);
		if (id < 0)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("%s: piece \"%s\" is not in vocab.json", what,
							pnstrdup((const char *) sp[i].piece, Min(sp[i].len, 64))),
					 errdetail("Marian maps such a piece to <unk>; tfm needs every piece of the model file in vocab.json.")));
		scores[id] = sp[i].score;
		control[id] = 0;
	}

	/* the pipeline of the converter's tokenizer.json for such a model */
	if (charsmap_len > 0)
	{
		spec.steps[spec.n_steps].kind = TFM_TOK_NORM_PRECOMPILED;
		spec.steps[spec.n_steps].a = charsmap;
		spec.steps[spec.n_steps++].a_len = charsmap_len;
	}
	spec.steps[spec.n_steps].kind = TFM_TOK_NORM_STRIP;
	spec.steps[spec.n_steps++].right = true;
	spec.steps[spec.n_steps].kind = TFM_TOK_NORM_REPLACE_SPACES;
	spec.steps[spec.n_steps].b = (const uint8_t *) SP;
	spec.steps[spec.n_steps++].b_len = 3;
	spec.pretok = TFM_TOK_PRETOK_METASPACE | TFM_TOK_PRETOK_METASPACE_SPLIT;
	spec.prepend = TFM_TOK_PREPEND_ALWAYS;
	spec.replacement = (const uint8_t *) SP;
	spec.replacement_len = 3;
	spec.decoder = TFM_TOK_UDEC_REPLACE | TFM_TOK_UDEC_STRIP_FIRST;
	/* MarianTokenizer's language codes: ">>fra<<" at the start a token */
	spec.info_flags = TFM_TOK_INFO_UNK_BY_TEXT | TFM_TOK_INFO_LANG_CODES |
		(text_eos ? TFM_TOK_INFO_TEXT_EOS : 0);
	spec.scores = scores;
	spec.control = control;
	tfm_tokenizer_import_unigram(name, pieces, lens, n, &spec, special_ids);
	for (int k = 0; k < TFM_TOK_N_SPECIALS; k++)
		if (special_ids[k] >= n)
			special_ids[k] = INT_MAX;
}
