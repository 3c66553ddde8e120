// Test-only peer (.ci/test-peers-gguf): llama.cpp, as prebuilt inside npm's
// node-llama-cpp, loads each GGUF file given on the command line, tokenizes a prompt
// and greedily decodes a few tokens. It prints one line per file (the token ids, then
// the text after "decoded N tokens: ") and exits non-zero when a file fails to load or
// to generate.
import { getLlama, LlamaLogLevel } from "node-llama-cpp";

const prompt = process.env.PROMPT ?? "Hello world";
const maxTokens = Number(process.env.MAX_TOKENS ?? 8);

const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
let failed = 0;
for (const modelPath of process.argv.slice(2)) {
	try {
		const model = await llama.loadModel({ modelPath });
		const context = await model.createContext({ contextSize: 128 });
		const sequence = context.getSequence();
		const input = model.tokenize(prompt);
		const bos = model.tokens.bos;
		const tokens = bos != null && input[0] !== bos ? [bos, ...input] : input;
		const out = [];
		for await (const t of sequence.evaluate(tokens, { temperature: 0 })) {
			out.push(t);
			if (out.length >= maxTokens || model.isEogToken(t)) break;
		}
		const text = model.detokenize(out);
		console.log(`${modelPath}: loaded (${model.fileInfo.tensorInfo?.length ?? "?"} tensors, ` +
			`file type ${model.fileInsights?.modelFileType ?? model.fileInfo.metadata?.general?.file_type}), ` +
			`prompt ${tokens.length} tokens, ids ${JSON.stringify(out)}, decoded ${out.length} tokens: ${JSON.stringify(text)}`);
		if (out.length === 0) {
			failed++;
		}
		await context.dispose();
		await model.dispose();
	} catch (e) {
		console.log(`${modelPath}: FAILED: ${e?.message ?? e}`);
		failed++;
	}
}
await llama.dispose();
process.exit(failed ? 1 : 0);
