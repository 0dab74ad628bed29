// make_corpus.mjs — the mixed corpus the real tokenizer.json files are
// checked on (test/reference/hf_tokenizers/corpus.jsonl.gz, one JSON string
// a line): passages of /work/shared/data (Moby-Dick, State of the Union
// speeches, English-French pairs, movie reviews, mail), hand-written hard
// cases (scripts, emoji, code, whitespace, Unicode forms) and texts with the
// six tokenizers' special and added tokens put inside them.  Deterministic
// (a seeded generator).  Run: node make_corpus.mjs /work/shared/data
import fs from 'node:fs';
import zlib from 'node:zlib';
import path from 'node:path';

const dataDir = process.argv[2] || '/work/shared/data';
const outFile = path.join(path.dirname(new URL(import.meta.url).pathname), 'corpus.jsonl.gz');
let seed = 20261202;
function rnd() { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; }
function pick(a) { return a[Math.floor(rnd() * a.length)]; }
function gz(name) { return zlib.gunzipSync(fs.readFileSync(path.join(dataDir, name))).toString('utf8'); }
function tsv(name, col) {
  const lines = gz(name).split('\n');
  const head = lines[0].split('\t');
  const k = head.indexOf(col);
  return lines.slice(1).filter(l => l.length).map(l => l.split('\t')[k]).filter(x => x);
}

const texts = [];
// Moby-Dick: 250 passages of 1 to 12 lines, raw line breaks kept
const moby = gz('moby_dick.txt.gz').split('\n');
for (let i = 0; i < 250; i++) {
  const a = Math.floor(rnd() * (moby.length - 12));
  texts.push(moby.slice(a, a + 1 + Math.floor(rnd() * 12)).join(pick(['\n', '\r\n', '\n\n'])));
}
// State of the Union: 80 excerpts up to 3,000 characters
const sotu = tsv('sotu.tsv.gz', 'text');
for (let i = 0; i < 80; i++) {
  const s = pick(sotu), a = Math.floor(rnd() * Math.max(1, s.length - 3000));
  texts.push(s.slice(a, a + 200 + Math.floor(rnd() * 2800)));
}
// English-French: 150 French and 50 English sentences
const fra = tsv('eng_fra_test.tsv.gz', 'tgt'), eng = tsv('eng_fra_test.tsv.gz', 'src');
for (let i = 0; i < 150; i++) texts.push(pick(fra));
for (let i = 0; i < 50; i++) texts.push(pick(eng));
// reviews: 120
const rt = tsv('rt_polarity_test.tsv.gz', 'text');
for (let i = 0; i < 120; i++) texts.push(pick(rt));
// mail: 60 excerpts (headers, URLs, odd spacing)
const spam = tsv('spamassassin_test.tsv.gz', 'text');
for (let i = 0; i < 60; i++) {
  const s = pick(spam).replace(/\\n/g, '\n').replace(/\\t/g, '\t'), a = Math.floor(rnd() * Math.max(1, s.length - 1500));
  texts.push(s.slice(a, a + 100 + Math.floor(rnd() * 1400)));
}

// hand-written hard cases
const hard = [
  '', ' ', '  ', '\n', '\t', ' \n ', 'a', ' a', 'a ', '  leading and trailing  ',
  'Hello world', 'hello   world', 'Hello\tworld\r\nagain', 'line one\n\n\nline four',
  "I'm can't won't they've we'll she'd IT'S I'M YOU'RE", "'s 's 'S", 'don\u2019t smart\u2019 quotes',
  '12345678901234567890', '3.14159 2,718 1e-10 -42 +7 0x1F 1_000_000', '٣٤٥ ١٢٣ ๑๒๓ 一二三 ⅷ ½',
  '你好，世界！今天天气很好。', '我爱北京天安门，天安门上太阳升。', '日本語のテキスト、カタカナとひらがなと漢字。',
  'ｶﾀｶﾅ ＡＢＣ１２３ ﬁ ﬀ ㎏ ① ™', '한국어 문장입니다. 안녕하세요!', 'Привет, мир! Как дела?',
  'Ελληνικά κείμενα με τόνους: άέήίόύώ', 'مرحبا بالعالم، كيف حالك؟', 'שלום עולם', 'नमस्ते दुनिया, आप कैसे हैं?',
  'สวัสดีชาวโลก', 'Tiếng Việt có dấu: Xin chào thế giới', 'Türkçe: İstanbul ığdır ŞÇÖÜ', 'ქართული ენა',
  'áéíóú ÁÉÍÓÚ ñ ç ü ß ø å æ œ', 'e\u0301 a\u0300 o\u0308 (combining) vs é à ö', 'A\u030a \u212b \u00c5 Å',
  '\u1100\u1161\u11a8 (jamo) 각', 'ﷺ ﷽', 'Ａ full width', '\u00a0nbsp\u00a0here\u2003em\u2009thin', 'zero\u200bwidth\u200djoiner\ufeffbom',
  '😀😃😄😁 👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 🇫🇷🇯🇵 ❤️ ✨', 'emoji🙂inside😉words', '🤗 Hugging Face 🤗', '𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝕄𝕒𝕥𝕙 𝒮𝒸𝓇𝒾𝓅𝓉', '𓀀𓀁 𐍈 𠜎𠜱',
  'def f(x):\n    return x ** 2  # square\n\nprint(f(3))\n',
  'int main(void) {\n\tprintf("%d\\n", 42);\n\treturn 0;\n}\n',
  '{"key": [1, 2, 3], "nested": {"a": null, "b": true}}',
  'SELECT id, name FROM users WHERE age >= 18 ORDER BY name;',
  'const x = (a, b) => a?.b ?? c; // arrow\n', '<div class="x">Hello &amp; <b>bye</b></div>',
  'https://example.com/path?query=1&x=y#frag user@example.org', '$ ls -la | grep "foo" > /dev/null 2>&1',
  '    indented\n        more\n\t\ttabs\n', '!!!???...,,,;;;:::---___===+++', '((([[[{{{}}}]]])))', '~`@#$%^&*|\\/',
  'a\u0007b', '\u0001\u0002\u001f control', '\u2028line sep\u2029para sep', 'x'.repeat(500), ' '.repeat(100) + 'x',
  '\n'.repeat(20) + 'end', 'ab'.repeat(300), '🙂'.repeat(50), '。'.repeat(40), 'The quick brown fox jumps over the lazy dog. '.repeat(20),
  'Ünïcödé wörds everywhere: naïve café résumé coöperate', 'MiXeD CaSe WoRdS aNd CAPS', 'camelCaseIdentifier snake_case_name kebab-case-name',
  '\u2581 lower one eighth block ▁▁ and <0x41> byte pieces', '<unk> <pad> <mask> [CLS] [SEP] [PAD]',
];
texts.push(...hard);

// special and added tokens of the six tokenizers, put inside texts
const specials = [
  '<s>', '</s>', '<unk>', '<pad>', '<bos>', '<eos>', '<mask>',
  '<|begin_of_text|>', '<|end_of_text|>', '<|start_header_id|>', '<|end_header_id|>', '<|eot_id|>', '<|reserved_special_token_5|>', '<|python_tag|>',
  '<|endoftext|>', '<|im_start|>', '<|im_end|>', '<think>', '</think>', '<tool_call>', '</tool_call>', '<|vision_start|>', '<|fim_prefix|>', '<tool_response>',
  '<start_of_turn>', '<end_of_turn>', '<start_of_image>', '<unused0>', '<unused42>', '[multimodal]', '<table>', '</td>', '<h1>', '\t\t', '  ', '\n\n\n',
  '<｜begin▁of▁sentence｜>', '<｜end▁of▁sentence｜>', '<｜User｜>', '<｜Assistant｜>', '<|EOT|>', '<｜tool▁calls▁begin｜>', '<think>',
  '<|start|>', '<|end|>', '<|message|>', '<|channel|>', '<|return|>', '<|call|>', '<|constrain|>', '<|reserved_200017|>',
  '<|user|>', '<|assistant|>', '<|system|>', '<|dummy_3|>',
];
const snippets = ['Hello', 'world', ' the answer is 42.', '你好', 'café', '🙂', '\n', ' ', 'x = 1;', 'Bonjour à tous', 'عربى', '  spaced  '];
for (const sp of specials) {
  texts.push(sp);
  texts.push(`Hello ${sp} world`);
  texts.push(`${sp}text`);
  texts.push(`text${sp}`);
}
texts.push('<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nHello!<|im_end|>');
texts.push('<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nWhat is 2+2?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n');
texts.push('<bos><start_of_turn>user\nHi there<end_of_turn>\n<start_of_turn>model\nHello!<end_of_turn>\n');
texts.push('<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST] Hello </s><s>[INST] More [/INST]');
texts.push('<｜begin▁of▁sentence｜>You are kind.<｜User｜>Hi<｜Assistant｜>Hello<｜end▁of▁sentence｜>');
texts.push('<|start|>system<|message|>You are ChatGPT.<|end|><|start|>user<|message|>Hi<|end|><|start|>assistant<|channel|>final<|message|>Hello<|return|>');
texts.push('<|system|>You are helpful.<|end|><|user|>Hi<|end|><|assistant|>');
texts.push('<s<s>>', '<|im_start|<|im_start|>', '<<|im_end|>>', '</s></s></s>', '<s> <s>  <s>', ' <s>', '<s> ', '<think></think>', '<|endoftext|><|endoftext|>');
// random mixes up to 1,200 texts
const pool = texts.slice(0, 700).filter(t => t.length > 0 && t.length < 400);
while (texts.length < 1200) {
  let t = '';
  const parts = 2 + Math.floor(rnd() * 5);
  for (let k = 0; k < parts; k++) {
    const r = rnd();
    t += r < 0.35 ? pick(specials) : r < 0.6 ? pick(snippets) : pick(pool);
    if (rnd() < 0.5) t += pick([' ', '', '\n', '  ']);
  }
  texts.push(t);
}
fs.writeFileSync(outFile, zlib.gzipSync(texts.map(t => JSON.stringify(t)).join('\n') + '\n', { level: 9 }));
console.log(`${texts.length} texts -> ${outFile}`);
