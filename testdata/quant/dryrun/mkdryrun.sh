#!/bin/sh
# mkdryrun.sh: llama-quantize --dry-run's choices for the tiny checkpoints (README.md).
# Usage: LLAMA=DIR-WITH-llama-quantize GGUFDIR=DIR-WITH-NAME.f32.gguf sh mkdryrun.sh NAME...
# Writes NAME.txt here: for each case a line "== FLAGS TYPE", then llama-quantize's
# tensor lines reduced to "NAME TYPE" and its "quant size" line.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cases() {
	for p in IQ1_S IQ1_M IQ2_XXS IQ2_XS IQ2_S IQ2_M IQ3_XXS IQ3_XS IQ3_S IQ3_M IQ4_NL IQ4_XS TQ1_0 TQ2_0 MXFP4_MOE Q2_K_S \
		Q2_K Q3_K_S Q3_K_M Q3_K_L Q4_K_S Q4_K_M Q5_K_S Q5_K_M Q6_K Q4_0 Q4_1 Q5_0 Q5_1 Q8_0; do
		echo "$p"
	done
	echo "--output-tensor-type q8_0 Q4_K_M"
	echo "--output-tensor-type iq4_nl IQ2_M"
	echo "--token-embedding-type q4_k Q4_K_M"
	echo "--token-embedding-type q8_0 --output-tensor-type q5_k IQ3_M"
	echo "--leave-output-tensor Q4_K_M"
	echo "--leave-output-tensor IQ2_XS"
	echo "--tensor-type attn_v=q8_0 --tensor-type ffn_down=q5_k Q4_K_M"
	echo "--tensor-type blk\.1\.=iq4_nl --tensor-type attn=q4_0 IQ3_S"
	echo "--tensor-type FFN_UP=tq2_0 --tensor-type (attn_q|attn_k)=iq2_xxs Q3_K_M"
	echo "--pure --tensor-type attn_v=q8_0 --tensor-type ^blk\.0\.ffn=q6_k Q4_K_M"
	echo "--pure --tensor-type output=q4_0 --token-embedding-type q5_0 IQ4_XS"
	echo "--pure Q5_K_M"
	echo "--pure IQ2_S"
	echo "--pure --tensor-type ffn_down=q8_0 MXFP4_MOE"
	echo "--tensor-type token_embd=q2_k --tensor-type output=iq3_s Q5_0"
	echo "--tensor-type attn_v=q8_0 F16"
	echo "--output-tensor-type q8_0 --token-embedding-type q6_k BF16"
	echo "Q2_0"
	echo "--prune-layers 1 Q4_K_M"
	echo "--prune-layers 0 IQ4_XS"
	case $1 in
	tiny-llama | small-mistral) # general.architecture llama
		echo "--override-kv llama.block_count=int:16 Q4_K_M"
		echo "--override-kv llama.attention.head_count_kv=int:1 IQ4_XS"
		;;
	esac
	if [ "$1" = tiny-llama ]; then # its rows are whole 128-value blocks (elsewhere Q1_0 has no fallback)
		echo "Q1_0"
	fi
	if [ "$1" = tiny-llama ]; then # its importance matrix (testdata/hf/ref), from testdata/hf
		for p in IQ3_XXS IQ4_XS IQ4_NL IQ2_XXS IQ1_M Q2_K_S Q4_0 Q5_0; do
			echo "--imatrix ref/tiny-llama.imatrix.dat $p"
		done
	fi
}
for name in "$@"; do
	out="$here/$name.txt"
	: > "$out"
	cases "$name" | while read -r line; do
		# shellcheck disable=SC2086
		set -- $line
		echo "== $line" >> "$out"
		n=$#
		type=$(eval echo \${$n})
		flags=$(echo "$line" | sed "s/ *$type\$//")
		# shellcheck disable=SC2086
		(cd "$here/../../hf" && "$LLAMA/llama-quantize" --dry-run $flags "$GGUFDIR/$name.f32.gguf" "$type" 1 2>&1) |
			sed -n -e 's/^\[ *[0-9]*\/ *[0-9]*\] \([^ ]*\) *- \[.*type = *\([^ ,]*\), size = .*(\(.*\))$/\1 \3/p' \
				-e 's/^\[ *[0-9]*\/ *[0-9]*\] \([^ ]*\) *- \[.*type = *\([^ ,]*\), size = [^(]*$/\1 \2/p' \
				-e 's/^llama_model_quantize_impl: \(quant size .*\)$/\1/p' >> "$out"
	done
done
