#!/usr/bin/env bash
# The quantization stage of the apr demo: quantize a generated transformer-like model
# and the demo's classical models with apr-quant, as files and through pipes; inspect,
# verify, measure the error, dequantize, and watch bad input be refused.
# Runs alone (DEMO_DIR to choose the directory) or from demo.sh. Needs apr-quant,
# apr-decode and apr-encode on PATH (make demo builds them into bin/) and Go (to train
# the models and generate the weights).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${DEMO_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/apr-quant-demo.XXXXXX")}
mkdir -p "$work"
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-1767225600}
step() { printf '\n== %s\n' "$*"; }
size() { wc -c <"$1" | tr -d ' '; }
# expect_fail CMD...: the command must exit 1 (a refusal, not a crash or a usage error).
expect_fail() {
	local status=0
	"$@" || status=$?
	if [ "$status" -ne 1 ]; then
		echo "quant demo: expected exit status 1, got $status: $*" >&2
		exit 1
	fi
	echo "(exit status 1, as it should be)"
}

step "generate: 32 MiB of F32 weights, 8 tensors of 256 rows of 4096 values (N(0, 0.02²))"
(cd "$root" && go run ./pipelines/gen -size 32 -rows 256 -o "$work/gen.apr")
apr-decode inspect "$work/gen.apr" | tail -4

step "quantize to q8_0, file to file, with the error report: apr-quant q8_0 --stats gen.apr -o gen-q8_0.apr"
apr-quant q8_0 --stats "$work/gen.apr" -o "$work/gen-q8_0.apr"

step "the same through pipes, 2 workers and 1 worker: the bytes do not depend on the worker count"
apr-quant q4_0 -j 2 <"$work/gen.apr" >"$work/gen-q4_0.apr"
cat "$work/gen.apr" | apr-quant q4_0 -j 1 | cat >"$work/gen-q4_0-j1.apr"
cmp "$work/gen-q4_0.apr" "$work/gen-q4_0-j1.apr"
echo "identical: $(size "$work/gen-q4_0.apr") bytes"

step "every type, sizes and error (JSON report, summarized)"
printf '%-6s %10s %6s %10s\n' type bytes bpw "rel rms"
for t in q8_0 q6_k q5_1 q5_0 q5_k q4_1 q4_0 q4_k q3_k q2_k f16 bf16; do
	apr-quant "$t" --json --stats-file "$work/stats-$t.json" "$work/gen.apr" -o "$work/gen-$t.apr"
	bpw=$(sed -n 's/^    "bits_per_weight": \([0-9.]*\).*/\1/p' "$work/stats-$t.json" | tail -1)
	rel=$(sed -n 's/.*"rel_rms_error": \([0-9.e-]*\).*/\1/p' "$work/stats-$t.json" | head -1)
	printf '%-6s %10s %6.3f %10.3g\n' "$t" "$(size "$work/gen-$t.apr")" "$bpw" "$rel"
done

step "inspect and verify a quantized file (the provenance records type, rules and counts)"
apr-decode inspect "$work/gen-q4_k.apr"
apr-decode verify "$work/gen-q4_k.apr"

step "dequantize back to f32 and compress for shipping: apr-quant f32 | apr-encode -c zstd"
apr-quant f32 <"$work/gen-q8_0.apr" | apr-encode -c zstd --shuffle | apr-decode verify

step "train the demo's classical models (LinearRegression on diabetes, LogisticRegression on breast_cancer)"
(cd "$root" && go run ./pipelines/train -data testdata/datasets -out "$work")

step "their tensors are 1-D: llama.cpp's rules keep them as they are"
apr-quant q8_0 --stats "$work/breast_cancer.apr" -o "$work/breast_cancer-kept.apr"

step "convert them by name with --include; rows of 10 and 30 values are not whole 32-value blocks, so f16"
apr-quant f16 --include '*' --stats "$work/diabetes.apr" -o "$work/diabetes-f16.apr"
apr-decode inspect "$work/diabetes-f16.apr" | tail -3

step "q8_0 of 10 coefficients is refused, naming the tensor (and no output file is left)"
expect_fail apr-quant q8_0 --include coefficients "$work/diabetes.apr" -o "$work/diabetes-q8_0.apr"
[ ! -e "$work/diabetes-q8_0.apr" ]

step "a K-quant falls back instead, as llama.cpp does (aprender's MNIST model: 784 coefficients)"
apr-quant q4_k --include coefficients --stats <"$root/testdata/aprender/mnist_784x2.apr" >"$work/mnist-q4_k.apr"

step "a NaN in the weights is refused with the tensor's name and position"
{
	hdr="{'descr': '<f4', 'fortran_order': False, 'shape': (2, 32), }"
	pad=$((128 - 10 - ${#hdr} - 1)) # NumPy 1.0: 10-byte preamble, header padded to 128 bytes
	printf '\x93NUMPY\x01\x00\x76\x00%s%*s\n' "$hdr" "$pad" ''
	head -c $((4 * 37)) /dev/zero
	printf '\x00\x00\xc0\x7f' # NaN at row 1, column 5
	head -c $((4 * 26)) /dev/zero
} >"$work/blk.0.ffn_up.weight.npy"
apr-encode -c none "$work/blk.0.ffn_up.weight.npy" -o "$work/nan.apr"
expect_fail apr-quant q4_0 "$work/nan.apr" -o "$work/nan-q4_0.apr"
[ ! -e "$work/nan-q4_0.apr" ]

step "quant: files in $work"
