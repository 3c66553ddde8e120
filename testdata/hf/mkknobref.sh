#!/usr/bin/env bash
# mkknobref.sh: rewrite testdata/hf/knobs.sha256, the sums of today's llama-quantize's
# whole files with its per-tensor flags, ternary presets and --override-kv, on
# tiny-llama and small-mistral (lib/llm's TestKnobsBytes lists the same flags and
# compares apr's files with these sums). Files are made in a temporary folder laid out
# as this one (general.name comes from the checkpoint folder's name,
# quantize.imatrix.file from the path given to --imatrix):
#   llama-quantize FLAGS ref/NAME.f32.gguf OUT TYPE 2
#
# Environment as mkref.sh: LLAMA (bin/llama-quantize in it), CONVERT (the converter).
set -euo pipefail
: "${LLAMA:?set LLAMA to the folder holding bin/llama-quantize}" "${CONVERT:?set CONVERT to the converter command}"
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
mkdir ref out
cp "$here/ref/tiny-llama.imatrix.dat" ref/
for name in tiny-llama small-mistral; do
	cp -r "$here/$name" .
	$CONVERT "$name" --outtype f32 --outfile "ref/$name.f32.gguf" >"$name.log" 2>&1 || { cat "$name.log"; exit 1; }
done
quantize() { # quantize NAME OUT FLAGS... TYPE
	local name=$1 out=out/$2 type=${*: -1}
	shift 2
	"$LLAMA/bin/llama-quantize" "${@:1:$#-1}" "ref/$name.f32.gguf" "$out" "$type" 2 >"$out.log" 2>&1 || { cat "$out.log"; exit 1; }
}
quantize tiny-llama tiny-llama.TQ1_0.gguf TQ1_0
quantize tiny-llama tiny-llama.TQ2_0.gguf TQ2_0
quantize tiny-llama tiny-llama.TQ1_0.pure.gguf --pure TQ1_0
quantize tiny-llama tiny-llama.Q4_K_M.overrides.gguf --tensor-type attn_v=q8_0 --output-tensor-type q5_k --token-embedding-type q8_0 Q4_K_M
quantize tiny-llama tiny-llama.Q4_K_M.leave-output.gguf --leave-output-tensor Q4_K_M
quantize tiny-llama tiny-llama.Q6_K.pure.tensor-type.gguf --pure --tensor-type 'blk\.1\.=tq2_0' --tensor-type ffn=q5_0 Q6_K
quantize small-mistral small-mistral.TQ2_0.gguf TQ2_0
quantize small-mistral small-mistral.Q3_K_M.overrides.gguf --output-tensor-type q8_0 --tensor-type 'attn_(q|k)=q5_1' Q3_K_M
# --override-kv: every TYPE, a key set twice, keys llama-quantize itself sets
# (general.file_type, quantize.imatrix.file), and hyperparameters the rules read
quantize tiny-llama tiny-llama.Q4_K_M.override-kv.gguf --override-kv general.name=str:Renamed \
	--override-kv llama.context_length=int:4096 --override-kv llama.rope.freq_base=float:50000.5 \
	--override-kv tokenizer.ggml.add_bos_token=bool:false --override-kv general.file_type=int:99 \
	--override-kv llama.context_length=int:1024 --override-kv llama.block_count=int:16 Q4_K_M
quantize tiny-llama tiny-llama.IQ4_XS.override-kv.imatrix.gguf --imatrix ref/tiny-llama.imatrix.dat \
	--override-kv quantize.imatrix.file=str:other --override-kv llama.attention.head_count_kv=int:1 \
	--override-kv general.name=int:5 IQ4_XS
quantize small-mistral small-mistral.Q3_K_M.override-kv.gguf --override-kv llama.block_count=int:48 \
	--override-kv general.description=str:hello --override-kv tokenizer.ggml.add_eos_token=bool:false \
	--override-kv llama.expert_count=float:8 --override-kv general.quantization_version=str:two Q3_K_M
# --prune-layers: renumbered layers, block_count, the matrix looked up under the old names
quantize tiny-llama tiny-llama.Q4_K_M.prune-layers.gguf --prune-layers 1 Q4_K_M
quantize tiny-llama tiny-llama.Q4_K_M.prune-layers.imatrix.gguf --prune-layers 0 --imatrix ref/tiny-llama.imatrix.dat \
	--override-kv general.name=str:x Q4_K_M
quantize small-mistral small-mistral.IQ4_XS.prune-layers.gguf --prune-layers 0,2,7 IQ4_XS
# the Q1_0 and Q2_0 file types (small-mistral's rows of 192 have no Q1_0 fallback:
# llama-quantize refuses that file)
quantize tiny-llama tiny-llama.Q1_0.gguf Q1_0
quantize tiny-llama tiny-llama.Q2_0.gguf Q2_0
quantize tiny-llama tiny-llama.Q2_0.imatrix.gguf --imatrix ref/tiny-llama.imatrix.dat Q2_0
quantize small-mistral small-mistral.Q2_0.gguf Q2_0
# --keep-split, from GGUF files in the repository: testdata/gguf/tiny-llama.f32.gguf split
# by llama-gguf-split into parts of 8 tensors (3 parts), and whole (1 part); the f16 split
# set of testdata/gguf/split (4 parts)
gguf=$here/../gguf
"$LLAMA/bin/llama-gguf-split" --split --split-max-tensors 8 "$gguf/tiny-llama.f32.gguf" tl8 >tl8.log 2>&1 || { cat tl8.log; exit 1; }
keep() { # keep IN OUT FLAGS... TYPE
	local in=$1 out=out/$2 type=${*: -1}
	shift 2
	"$LLAMA/bin/llama-quantize" --keep-split "${@:1:$#-1}" "$in" "$out" "$type" 2 >"$out.log" 2>&1 || { cat "$out.log"; exit 1; }
}
keep tl8-00001-of-00003.gguf tiny-llama.Q4_K_M.keep-split.gguf Q4_K_M
keep "$gguf/tiny-llama.f32.gguf" tiny-llama.Q6_K.keep-split.gguf Q6_K
keep "$gguf/split/tiny-llama.f16-00001-of-00004.gguf" tiny-llama.f16.IQ4_XS.keep-split.gguf --override-kv general.name=str:x IQ4_XS
keep tl8-00001-of-00003.gguf tiny-llama.Q4_K_M.keep-split.prune-layers.gguf --prune-layers 1 Q4_K_M
keep "$gguf/split/tiny-llama.f16-00001-of-00004.gguf" tiny-llama.f16.Q4_0.keep-split.prune-layers.gguf --prune-layers 0 Q4_0
# --allow-requantize, from the quantized GGUFs of testdata/gguf (without the flag only
# where no tensor changes type: Q4_0 of the Q4_0 file, whose output stays Q8_0)
requant() { # requant IN OUT FLAGS... TYPE
	local in=$gguf/$1 out=out/$2 type=${*: -1}
	shift 2
	"$LLAMA/bin/llama-quantize" "${@:1:$#-1}" "$in" "$out" "$type" 2 >"$out.log" 2>&1 || { cat "$out.log"; exit 1; }
}
requant tiny-llama.Q8_0.gguf tiny-llama.Q8_0.Q4_K_M.requant.gguf --allow-requantize Q4_K_M
requant tiny-llama.Q4_0.gguf tiny-llama.Q4_0.Q8_0.requant.gguf --allow-requantize Q8_0
requant tiny-llama.Q8_0.gguf tiny-llama.Q8_0.F16.requant.gguf --allow-requantize F16
requant tiny-llama.Q4_0.gguf tiny-llama.Q4_0.Q4_0.gguf Q4_0
# COPY: no tensor changes; the input's general.file_type, llama-quantize's layout and edits
requant tiny-llama.Q8_0.gguf tiny-llama.Q8_0.COPY.override-kv.gguf --override-kv general.name=str:x COPY
requant tiny-llama.f32.gguf tiny-llama.f32.COPY.gguf COPY
requant tiny-llama.Q4_0.gguf tiny-llama.Q4_0.COPY.prune-layers.gguf --prune-layers 0 --override-kv general.file_type=int:3 COPY
(cd out && sha256sum *.gguf) >"$here/knobs.sha256"
