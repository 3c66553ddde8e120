// Test-only peer (lib/llm TestBPEPeer, .ci/test-peers-gguf): Hugging Face's JavaScript
// tokenizers (@huggingface/tokenizers) load the tokenizer.json and tokenizer_config.json
// of each directory given on the command line and encode the JSON array of strings read
// from stdin, without special tokens added. Prints one JSON object per directory: the
// ids and decoded text of each string, and the converter's chkhsh (SHA-256 of Python's
// str() of the ids of convert_hf_to_gguf.py's check text, special tokens added, as
// transformers' encode() gives them: checkIDs).
import { Tokenizer } from "@huggingface/tokenizers";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";

// The check text of llama.cpp's convert_hf_to_gguf.py (get_vocab_base_pre), as the
// JSON string chktxt.json holds it.
const chktxt = JSON.parse(readFileSync(new URL("chktxt.json", import.meta.url), "utf8"));

// checkIDs encodes the check text with the special tokens transformers adds:
// tokenizer.json's post-processor, except that a tokenizer_class LlamaTokenizer(Fast)
// loads as LlamaTokenizerFast, which replaces it by a template of add_bos_token
// (default true) and add_eos_token (default false) around the text (JavaScript's
// tokenizers keep tokenizer.json's).
function checkIDs(tok, json, config) {
	if (config.tokenizer_class !== "LlamaTokenizer" && config.tokenizer_class !== "LlamaTokenizerFast") {
		return tok.encode(chktxt, { add_special_tokens: true }).ids;
	}
	const id = (t) => {
		const text = typeof t === "string" ? t : t && t.content;
		const added = json.added_tokens.find((a) => a.content === text);
		return added ? added.id : json.model.vocab[text];
	};
	const ids = tok.encode(chktxt, { add_special_tokens: false }).ids;
	if (config.add_bos_token !== false && config.bos_token) ids.unshift(id(config.bos_token));
	if (config.add_eos_token === true && config.eos_token) ids.push(id(config.eos_token));
	return ids;
}

const texts = JSON.parse(readFileSync(0, "utf8"));
const out = [];
for (const dir of process.argv.slice(2)) {
	const json = JSON.parse(readFileSync(join(dir, "tokenizer.json"), "utf8"));
	const config = JSON.parse(readFileSync(join(dir, "tokenizer_config.json"), "utf8"));
	const tok = new Tokenizer(json, config);
	const chk = checkIDs(tok, json, config);
	const ids = texts.map((s) => tok.encode(s, { add_special_tokens: false }).ids);
	out.push({
		dir,
		chkhsh: createHash("sha256").update("[" + chk.join(", ") + "]").digest("hex"),
		ids,
		decoded: ids.map((x) => (x.length ? tok.decode(x, { skip_special_tokens: false }) : "")),
	});
}
console.log(JSON.stringify(out));
