// Test-only peer (.ci/test-peers-forward): llama.cpp, as prebuilt inside npm's
// node-llama-cpp, evaluates a fixed token sequence on a GGUF model and writes the
// raw logits it computes after every token to OUT, float32 little-endian
// [tokens, vocab], for testdata/hf/forward.py --check to compare with its reference.
// One process for several models saves llama.cpp's start-up.
//
//   node forward.mjs TOKEN,TOKEN,... MODEL.gguf OUT [MODEL2.gguf OUT2 ...]
//
// The KV cache is F32 (llama.cpp's default is F16, which would round K and V) and
// flash attention is off, so with an F32 model every step runs in F32. The logits
// come from a greedy sampler, which leaves them as the model computed them.
import { writeFileSync } from "node:fs";
import { getLlama, LlamaLogLevel } from "node-llama-cpp";

const [list, ...pairs] = process.argv.slice(2);
if (!list || pairs.length === 0 || pairs.length % 2 !== 0) {
	console.error("usage: node forward.mjs TOKEN,TOKEN,... MODEL.gguf OUT [MODEL2.gguf OUT2 ...]");
	process.exit(2);
}
const tokens = list.split(",").map(Number);

const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
for (let i = 0; i < pairs.length; i += 2) {
	const [modelPath, outPath] = [pairs[i], pairs[i + 1]];
	const model = await llama.loadModel({ modelPath });
	const n = model.fileInfo.metadata.tokenizer.ggml.tokens.length;
	const context = await model.createContext({
		contextSize: 64,
		batchSize: 64,
		flashAttention: false,
		experimentalKvCacheKeyType: "F32",
		experimentalKvCacheValueType: "F32",
	});
	const out = await context.getSequence().controlledEvaluate(
		tokens.map((t) => [t, { generateNext: { logits: true } }]),
	);
	const logits = new Float32Array(tokens.length * n);
	out.forEach((o, p) => {
		const m = o?.next?.logits;
		if (m == null || m.size !== n) throw new Error(`${modelPath}: ${m?.size ?? "no"} logits after token ${p}, want ${n}`);
		for (const [tok, v] of m) logits[p * n + tok] = v;
	});
	writeFileSync(outPath, Buffer.from(logits.buffer));
	console.log(`${modelPath}: ${tokens.length} positions x ${n} logits (F32 KV cache, no flash attention)`);
	await context.dispose();
	await model.dispose();
}
await llama.dispose();
