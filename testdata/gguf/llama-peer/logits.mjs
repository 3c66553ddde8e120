// Test-only peer (.ci/test-peers-gguf): llama.cpp, as prebuilt inside npm's
// node-llama-cpp, evaluates every token of the vocabulary once (ids 0, 1, ...,
// n-1 as one sequence) on two GGUF models and compares the logits it computes
// after each token. Arguments are pairs A B. The models of a pair must differ
// only in how token_embd.weight is stored, so the logits must be equal: the
// first position whose logits differ names the first token whose embedding row
// decoded differently. Prints one line per pair; exits non-zero when a pair
// differs by more than TOLERANCE (default 0: bit for bit) or fails to run.
import { getLlama, LlamaLogLevel } from "node-llama-cpp";

const tolerance = Number(process.env.TOLERANCE ?? 0);
const args = process.argv.slice(2);
if (args.length === 0 || args.length % 2 !== 0) {
	console.error("usage: node logits.mjs A.gguf B.gguf [A2.gguf B2.gguf ...]");
	process.exit(2);
}

const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });

// logitsOf returns, for each position, the logits of every token as a
// Float64Array indexed by token id, and the ggml type of token_embd.weight.
async function logitsOf(modelPath) {
	const model = await llama.loadModel({ modelPath });
	try {
		const n = model.tokens.vocabularySize ?? model.fileInfo.metadata.llama.vocab_size;
		const embd = model.fileInfo.tensorInfo?.find((t) => t.name === "token_embd.weight");
		const context = await model.createContext({ contextSize: 512, batchSize: 512 });
		try {
			const input = [];
			for (let t = 0; t < n; t++) input.push([t, { generateNext: { logits: true } }]);
			const out = await context.getSequence().controlledEvaluate(input);
			const rows = out.map((o, i) => {
				const m = o?.next?.logits;
				if (m == null || m.size !== n) throw new Error(`no logits after token ${i}`);
				const row = new Float64Array(n);
				for (const [tok, v] of m) row[tok] = v;
				return row;
			});
			return { rows, type: embd?.ggmlType, n };
		} finally {
			await context.dispose();
		}
	} finally {
		await model.dispose();
	}
}

let failed = 0;
for (let i = 0; i < args.length; i += 2) {
	const [a, b] = [args[i], args[i + 1]];
	try {
		const [la, lb] = [await logitsOf(a), await logitsOf(b)];
		let maxDiff = 0, first = -1, maxAbs = 0;
		for (let p = 0; p < la.rows.length; p++) {
			for (let t = 0; t < la.n; t++) {
				const d = Math.abs(la.rows[p][t] - lb.rows[p][t]);
				maxAbs = Math.max(maxAbs, Math.abs(la.rows[p][t]));
				if (d > maxDiff) maxDiff = d;
				if (d > tolerance && first < 0) first = p;
			}
		}
		const what = `${a} (token_embd ggml type ${la.type}) vs ${b} (type ${lb.type}): ` +
			`${la.rows.length} positions x ${la.n} logits, max |logit| ${maxAbs.toPrecision(4)}, max |difference| ${maxDiff}`;
		if (first >= 0) {
			console.log(`DIFFER: ${what}; first at position ${first} (after token ${first})`);
			failed++;
		} else {
			console.log(`equal: ${what}`);
		}
	} catch (e) {
		console.log(`${a} vs ${b}: FAILED: ${e?.message ?? e}`);
		failed++;
	}
}
await llama.dispose();
process.exit(failed ? 1 : 0);
