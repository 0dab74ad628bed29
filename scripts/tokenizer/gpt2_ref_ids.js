#!/usr/bin/env node
// Reference GPT-2 ids for test/test_tokenizer.c, made by the npm package
// gpt-3-encoder (1.1.4) itself.  Output: one line per text,
//   corpus <TAB> row <TAB> field <TAB> ids separated by spaces
// where row is the 0-based data line (after a .tsv header) and field the
// 0-based column; corpus "extra" rows carry the text as UTF-8 hex in the
// field column instead.
//
// Usage: scripts/tokenizer/make_fixtures.sh runs it as
//   node scripts/tokenizer/gpt2_ref_ids.js PACKAGE_DIR SHARED_DATA_DIR \
//     | gzip -9n > test/fixtures/tokenizer/gpt2_ref_ids.tsv.gz
'use strict';
const fs = require('fs');
const path = require('path');
const zlib = require('zlib');

const [pkgDir, dataDir] = process.argv.slice(2);
const { encode } = require(path.resolve(pkgDir, 'Encoder.js'));

function lines(file) {
  const txt = zlib.gunzipSync(fs.readFileSync(path.join(dataDir, file))).toString('utf8');
  const ls = txt.split('\n');
  if (ls[ls.length - 1] === '') ls.pop();
  return ls;
}

const out = [];
function emit(corpus, row, field, text) {
  out.push(`${corpus}\t${row}\t${field}\t${encode(text).join(' ')}`);
}

// which texts: every row of the small test sets, a sample of the large ones
const plan = [
  // corpus file, fields, row filter
  ['rt_polarity_test.tsv.gz', [0], () => true],
  ['eng_fra_test.tsv.gz', [0, 1], i => i < 2500],
  ['spamassassin_test.tsv.gz', [0], () => true],
  ['sotu.tsv.gz', [3], i => i % 24 === 0],
];
for (const [file, fields, keep] of plan) {
  const ls = lines(file).slice(1);
  ls.forEach((l, i) => {
    if (!keep(i)) return;
    const cols = l.split('\t');
    for (const f of fields) emit(file, i, f, cols[f]);
  });
}
lines('moby_dick_val.txt.gz').forEach((l, i) => emit('moby_dick_val.txt.gz', i, 0, l));

// hand-made cases for the pre-tokenizer's corners
const extra = [
  "Hello world", "don't you're we've I'm they'll he'd it's", "'S 'Re 're'sx ''s",
  "a  b   c    d", "trailing   ", "   leading", "\n\n hello\n\nworld\n", "tab\there\t\t x",
  "x\u00a0y \u00a0z", "\u3000\u3000full width", "\ufeffbom", "a\u2028b\u2029c",
  "caf\u00e9 cafe\u0301 na\u00efve", "\u65e5\u672c\u8a9e\u306e\u6587\u7ae0", "\u0645\u0631\u062d\u0628\u0627",
  "emoji \u{1F600}\u{1F601} \u{1F468}\u200d\u{1F469}", "123 4567 89.10 \u0661\u0662\u0663 \u00bd \u2167",
  "!!! ??? ... --- ***", "\",\",\"\",\"", "[\"a\",\"b\"],[\"c\"]", "{\"k\":\"v\",\"w\":\"x\"}",
  "x',\"' ',\" '.,\"", "<|endoftext|> <|endoftext|>", "ab\u0000cd\u0007", "\r\n\r\n",
  "\u{10FFFF}\u{E000}", "A\u0308\u0304 \u1100\u1161\u11A8", "\u{1D400}\u{1D7CE}", "x".repeat(300),
  " ".repeat(70) + "y", "\u0130stanbul \u00df STRASSE", "\u200b\u200c\u200d", "a\u180eb\u2060c",
];
extra.forEach((s, i) => emit('extra', i, Buffer.from(s, 'utf8').toString('hex'), s));
process.stdout.write(out.join('\n') + '\n');
