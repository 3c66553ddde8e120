// Test-only peer (.ci/test-peers-gguf, step 5): llama.cpp, prebuilt inside npm's
// node-llama-cpp, loads each GGUF file given on the command line, tokenizes the JSON
// array of strings read from stdin (special tokens recognized, none added, as Hugging
// Face's encode without special tokens does) and greedily decodes a few tokens after
// the first string. Prints one JSON object per file; exits non-zero when a file fails.
import { getLlama, LlamaLogLevel } from "node-llama-cpp";
import { readFileSync } from "node:fs";

const texts = JSON.parse(readFileSync(0, "utf8"));
const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
const out = [];
let failed = 0;
for (const modelPath of process.argv.slice(2)) {
	try {
		const model = await llama.loadModel({ modelPath });
		const ids = texts.map((s) => Array.from(model.tokenize(s, true)));
		const context = await model.createContext({ contextSize: 128 });
		const sequence = context.getSequence();
		const bos = model.tokens.bos;
		const prompt = bos != null ? [bos, ...ids[0]] : ids[0];
		const gen = [];
		for await (const t of sequence.evaluate(prompt, { temperature: 0 })) {
			gen.push(t);
			if (gen.length >= 8 || model.isEogToken(t)) break;
		}
		out.push({ file: modelPath, ids, generated: gen.length, bos: bos ?? null });
		await context.dispose();
		await model.dispose();
	} catch (e) {
		out.push({ file: modelPath, error: String(e?.message ?? e) });
		failed++;
	}
}
await llama.dispose();
console.log(JSON.stringify(out));
process.exit(failed ? 1 : 0);
