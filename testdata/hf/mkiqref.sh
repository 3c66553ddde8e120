#!/usr/bin/env bash
# mkiqref.sh: rewrite testdata/hf/iquants.sha256, the sums of today's llama-quantize's
# whole files for the i-quant, ternary, MXFP4_MOE and Q2_K_S presets, each without and
# with an importance matrix (where llama-quantize refuses a preset without one, on
# tiny-llama whose rows are whole blocks, that file is left out), on tiny-llama
# (rows of 256: whole blocks) and small-mistral (rows of 192: fallbacks), and
# MXFP4_MOE on tiny-gptoss (BF16 experts). The matrices are ref/tiny-llama.imatrix.dat
# and ref/small-mistral.imatrix.gguf (testdata/hf/README.md); none for tiny-gptoss.
# Files are made in a temporary folder laid out as this one (general.name comes from
# the checkpoint folder's name, quantize.imatrix.file from the path given to --imatrix):
#   llama-quantize [--imatrix ref/NAME.imatrix.*] ref/NAME.f32.gguf OUT PRESET 2
# OUT is NAME.PRESET.gguf or NAME.PRESET.imatrix.gguf.
#
# Environment as mkref.sh: LLAMA (bin/llama-quantize in it), CONVERT (the converter).
set -euo pipefail
: "${LLAMA:?set LLAMA to the folder holding bin/llama-quantize}" "${CONVERT:?set CONVERT to the converter command}"
export LLAMA_TOKPRE=${LLAMA_TOKPRE:-qwen2}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
presets="IQ1_S IQ1_M IQ2_XXS IQ2_XS IQ2_S IQ2_M IQ3_XXS IQ3_XS IQ3_S IQ3_M IQ4_NL IQ4_XS TQ1_0 TQ2_0 Q2_K_S"
cd "$work"
mkdir ref out
cp "$here/ref/tiny-llama.imatrix.dat" "$here/ref/small-mistral.imatrix.gguf" ref/
quantize() { # quantize NAME PRESET [MATRIX]
	local name=$1 p=$2 m=${3:-} out="out/$1.$2.gguf" args=()
	[ -n "$m" ] && { out="out/$1.$2.imatrix.gguf"; args=(--imatrix "$m"); }
	if ! "$LLAMA/bin/llama-quantize" "${args[@]}" "ref/$name.f32.gguf" "$out" "$p" 2 >"$out.log" 2>&1; then
		grep -q "requires an imatrix" "$out.log" || { cat "$out.log"; exit 1; }
		rm -f "$out"
	fi
}
for name in tiny-llama small-mistral tiny-gptoss; do
	cp -r "$here/$name" .
	$CONVERT "$name" --outtype f32 --outfile "ref/$name.f32.gguf" >"$name.log" 2>&1 || { cat "$name.log"; exit 1; }
done
for p in $presets; do
	quantize tiny-llama "$p"
	quantize tiny-llama "$p" ref/tiny-llama.imatrix.dat
	quantize small-mistral "$p"
	quantize small-mistral "$p" ref/small-mistral.imatrix.gguf
done
quantize tiny-gptoss MXFP4_MOE
(cd out && sha256sum *.gguf) >"$here/iquants.sha256"
