#!/usr/bin/env bash
# mkref.sh NAME...: rewrite the reference sums of testdata/hf/NAME.sha256 (and, for
# tiny-llama, tiny-llama.imatrix.sha256 and the first parts of testdata/gguf/split; for
# tiny-qwen3moe, its presets with its importance matrix) with
# today's llama.cpp: its convert_hf_to_gguf.py for f32, f16, bf16 and q8_0, and its
# llama-quantize for the presets from the converter's F32 file. The checkpoint files'
# own sums are kept. Run from anywhere; the references are made in a temporary folder
# laid out as this one (general.name comes from the checkpoint folder's name, and
# quantize.imatrix.file from the path given to --imatrix).
#
# Environment: LLAMA, a folder llama.cpp's tools are built in (bin/llama-quantize,
# bin/llama-gguf-split); CONVERT, the command that runs today's convert_hf_to_gguf.py
# with its arguments appended (README.md, "References").
set -euo pipefail
: "${LLAMA:?set LLAMA to the folder holding bin/llama-quantize}" "${CONVERT:?set CONVERT to the converter command}"
# convert-current.py needs the pre-tokenizer of a tiny BPE vocabulary named (tiny-qwen3's is
# Qwen2's); the SentencePiece checkpoints ignore it.
export LLAMA_TOKPRE=${LLAMA_TOKPRE:-qwen2}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
presets="Q4_K_M Q4_K_S Q5_K_M Q5_K_S Q3_K_S Q3_K_M Q3_K_L Q2_K Q6_K Q4_0 Q4_1 Q5_0 Q5_1"
cd "$work"
mkdir ref
for name in "$@"; do
	cp -r "$here/$name" .
	for t in f32 f16 bf16 q8_0; do
		$CONVERT "$name" --outtype "$t" --outfile "ref/$name.$t.gguf" >"$name.$t.log" 2>&1 ||
			{ cat "$name.$t.log"; exit 1; }
	done
	for p in $presets; do
		if ! "$LLAMA/bin/llama-quantize" "ref/$name.f32.gguf" "ref/$name.$p.gguf" "$p" 2 >"$name.$p.log" 2>&1; then
			# gpt-oss's MXFP4 experts: llama-quantize refuses to requantize them; no reference
			grep -q "requantizing from type mxfp4 is disabled" "$name.$p.log" || { cat "$name.$p.log"; exit 1; }
			rm -f "ref/$name.$p.gguf"
		fi
	done
	if [ "$name" = tiny-llama ]; then
		cp "$here/ref/tiny-llama.imatrix.dat" ref/
		for p in Q4_K_M Q3_K_M Q2_K; do
			"$LLAMA/bin/llama-quantize" --imatrix ref/tiny-llama.imatrix.dat ref/tiny-llama.f32.gguf \
				"ref/tiny-llama.$p.imatrix.gguf" "$p" 2 >/dev/null 2>&1
		done
		for p in Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q2_K Q3_K_M Q4_K_M Q5_K_M Q6_K; do
			"$LLAMA/bin/llama-quantize" --pure --imatrix ref/tiny-llama.imatrix.dat ref/tiny-llama.f32.gguf \
				"tiny-llama.$p.pure.imatrix.gguf" "$p" 2 >/dev/null 2>&1
		done
		sha256sum tiny-llama.*.pure.imatrix.gguf >"$here/tiny-llama.imatrix.sha256"
		mkdir -p ref/split
		"$LLAMA/bin/llama-gguf-split" --split --split-max-tensors 8 ref/tiny-llama.Q4_K_M.gguf ref/split/tiny-llama.Q4_K_M >/dev/null
		"$LLAMA/bin/llama-gguf-split" --split --split-max-size 1M ref/tiny-llama.f16.gguf ref/split/tiny-llama.f16 >/dev/null
		cp ref/split/* "$here/../gguf/split/"
	fi
	if [ "$name" = tiny-qwen3moe ]; then # 3-D expert tensors weighted expert by expert
		cp "$here/ref/tiny-qwen3moe.imatrix.dat" ref/
		for p in Q4_K_M Q3_K_M Q2_K Q5_0; do
			"$LLAMA/bin/llama-quantize" --imatrix ref/tiny-qwen3moe.imatrix.dat ref/tiny-qwen3moe.f32.gguf \
				"ref/tiny-qwen3moe.$p.imatrix.gguf" "$p" 2 >/dev/null 2>&1
		done
	fi
	{
		grep "  $name/" "$here/$name.sha256"
		sha256sum ref/"$name".*.gguf
		grep "  ref/" "$here/$name.sha256" | grep -v "  ref/$name\.[^/]*\.gguf$" | grep -v "  ref/split/" || true
		[ -d ref/split ] && sha256sum ref/split/* || true
	} >"$name.sha256"
	mv "$name.sha256" "$here/$name.sha256"
	rm -rf ref/split
done
