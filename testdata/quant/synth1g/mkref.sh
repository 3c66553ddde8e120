#!/usr/bin/env bash
# mkref.sh: rewrite this folder's imatrix.dat and sums.sha256 from today's llama-quantize.
#
# The input is the 1 GiB synth of .ci/bench-vs-llama: `gengguf -f32 4`, four F32
# matrices blk.N.ffn_up.weight of 16384 rows x 4096 (N(0, 0.02), PCG seed 1,2), made
# the same on every machine. imatrix.dat is a legacy importance matrix for those four
# tensors (mkimatrix.py: positive weights over two decades, a few zero columns, one
# call). Each preset of issue 28 is quantized without and with that matrix,
#   llama-quantize [--imatrix imatrix.dat] synth.gguf OUT PRESET 2
# in a folder holding synth.gguf and imatrix.dat (quantize.imatrix.file records the
# path as given), and MXFP4_MOE also with --pure (every matrix MXFP4: on a dense model
# the preset writes Q8_0). A preset llama-quantize refuses without a matrix is listed
# as "refused" instead of a sum. .ci/test-synth1g checks apr-quant against this file.
#
# Environment: LLAMA_QUANTIZE (today's llama-quantize: ../shared/peers/llama-current.sh).
set -euo pipefail
: "${LLAMA_QUANTIZE:?set LLAMA_QUANTIZE to the llama-quantize of today (llama-current.sh)}"
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
work=${SYNTH_DIR:-$(mktemp -d)}
python3 "$here/mkimatrix.py" "$here/imatrix.dat"
[ -f "$work/synth.gguf" ] || (cd "$root" && go run ./lib/ggufconv/internal/gengguf -f32 4 -o "$work/synth.gguf")
cp "$here/imatrix.dat" "$work/"
cd "$work"
out=$here/sums.sha256.new
: >"$out"
for spec in $(cat "$here/presets"); do
	p=${spec%%+*} args=()
	case $spec in *+imatrix*) args+=(--imatrix imatrix.dat) ;; esac
	case $spec in *+pure*) args+=(--pure) ;; esac
	if "$LLAMA_QUANTIZE" "${args[@]}" synth.gguf out.gguf "$p" 2 >log 2>&1; then
		echo "$(sha256sum out.gguf | cut -d' ' -f1)  $spec" >>"$out"
	elif grep -q "requires an imatrix" log; then
		echo "refused  $spec" >>"$out"
	else
		cat log >&2
		exit 1
	fi
	rm -f out.gguf
	echo "$spec done" >&2
done
mv "$out" "$here/sums.sha256"
