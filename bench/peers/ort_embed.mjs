// ort_embed.mjs — ONNX Runtime's side of bench/peers, through
// onnxruntime-node (its prebuilt CPU build): the encoder exported by
// make_models.py (input_ids [batch, length] -> the mean-pooled embedding),
// run on the 32 sequences of texts.json at batch 1 (one run per sequence)
// and at batch 32 (one run), intra-op threads N, inter-op 1: model.onnx
// (fp32) or model-int8.onnx (onnx_int8.py's dynamic int8; --precision int8
// only labels the RESULT lines).
//
//   node ort_embed.mjs model.onnx --threads N --texts texts.json
//        [--rounds 3] [--out embeddings.json] [--precision fp32|int8] [--serve]
//
// Prints RESULT lines (what=encoder batch=1 / 32, the median of the rounds
// after one untimed round, sequences_per_s); --out writes the 32
// embeddings (batch 32's) as JSON, for the comparison with tfm_embed.
//
// --serve: after the untimed round prints "ready", then times one round a
// line read from stdin ("1": batch 1, "32": batch 32) and prints its
// sequences/s alone on a line — run.sh interleaves these rounds with tfm's.
import fs from "node:fs";
import ort from "onnxruntime-node";

function arg(name, dflt) {
    const i = process.argv.indexOf("--" + name);
    return i > 0 ? process.argv[i + 1] : dflt;
}
const modelPath = process.argv[2];
const threads = Number(arg("threads", "1"));
const rounds = Number(arg("rounds", "3"));
const out = arg("out", null);
const precision = arg("precision", "fp32");
const ids = JSON.parse(fs.readFileSync(arg("texts"), "utf8")).ids;
const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];

const session = await ort.InferenceSession.create(modelPath, {
    executionProviders: ["cpu"], intraOpNumThreads: threads, interOpNumThreads: 1,
    executionMode: "sequential", graphOptimizationLevel: "all",
});
const L = ids[0].length;
const tensor = (rows) => new ort.Tensor("int64", BigInt64Array.from(rows.flat().map(BigInt)), [rows.length, L]);
const one = ids.map((r) => tensor([r]));
const all = tensor(ids);

async function batch1() {
    const t0 = process.hrtime.bigint();
    for (const t of one) await session.run({input_ids: t});
    return ids.length / (Number(process.hrtime.bigint() - t0) / 1e9);
}
async function batch32() {
    const t0 = process.hrtime.bigint();
    const r = await session.run({input_ids: all});
    return [ids.length / (Number(process.hrtime.bigint() - t0) / 1e9), r.embedding];
}

await batch1();
const [, emb] = await batch32();
function writeOut() {
    const d = emb.dims[1], rows = [];
    for (let i = 0; i < emb.dims[0]; i++) rows.push(Array.from(emb.data.subarray(i * d, (i + 1) * d)));
    fs.writeFileSync(out, JSON.stringify(rows));
}
if (process.argv.includes("--serve")) {
    if (out) writeOut();
    const readline = await import("node:readline");
    console.log("ready");
    for await (const line of readline.createInterface({input: process.stdin})) {
        const b = line.trim();
        if (b === "1") console.log((await batch1()).toFixed(3));
        else if (b === "32") console.log((await batch32())[0].toFixed(3));
        else if (b === "quit" || b === "") break;
        else console.log("unknown");
    }
    process.exit(0);
}
const r1 = [], r32 = [];
for (let r = 0; r < rounds; r++) {
    r1.push(await batch1());
    r32.push((await batch32())[0]);
}
const tag = `impl=onnxruntime precision=${precision} threads=${threads} length=${L}`;
console.log(`RESULT what=encoder ${tag} batch=1 sequences_per_s=${median(r1).toFixed(2)} best=${Math.max(...r1).toFixed(2)}`);
console.log(`RESULT what=encoder ${tag} batch=${ids.length} sequences_per_s=${median(r32).toFixed(2)} best=${Math.max(...r32).toFixed(2)}`);
if (out) writeOut();
