#!/usr/bin/env bash
# The apr demo: train two classical models on real data, save them as .apr, and run
# them through the Unix-filter programs: inspect, re-compress, verify, extract,
# import an aprender file, and watch a tampered copy be refused.
# Needs apr-encode and apr-decode on PATH (make demo builds them into bin/).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${DEMO_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/apr-demo.XXXXXX")}
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-1767225600} # reproducible files: 2026-01-01
step() { printf '\n== %s\n' "$*"; }
size() { wc -c <"$1" | tr -d ' '; }

step "train: LinearRegression on diabetes, LogisticRegression on breast_cancer (lib/apr Go API)"
(cd "$root" && go run ./pipelines/train -data testdata/datasets -out "$work")

step "inspect: apr-decode inspect diabetes.apr"
apr-decode inspect "$work/diabetes.apr"

step "import aprender's own file (APRN v1, LogisticRegression, 784 features) and re-compress it in pipes"
apr-encode -c none <"$root/testdata/aprender/mnist_784x2.apr" >"$work/mnist.apr"
apr-decode inspect "$work/mnist.apr"
for c in zstd lz4; do
	apr-encode -c "$c" <"$work/mnist.apr" >"$work/mnist.$c.apr"
done
apr-encode -c zstd-max --shuffle --metric demo_run=1 <"$work/mnist.apr" >"$work/mnist.zst.apr"
printf '%-18s %6s bytes\n' plain "$(size "$work/mnist.apr")" zstd "$(size "$work/mnist.zstd.apr")" \
	lz4 "$(size "$work/mnist.lz4.apr")" zstd-max+shuffle "$(size "$work/mnist.zst.apr")"

step "verify, three ways: a file, a pipe, and a decompress-then-verify chain"
apr-decode verify "$work/mnist.zst.apr"
apr-decode verify <"$work/mnist.zst.apr"
cat "$work/mnist.zst.apr" | apr-decode plain | apr-encode -c lz4 | apr-decode verify

step "extract the coefficients to NumPy: apr-decode extract diabetes.apr --tensor coefficients"
apr-decode extract "$work/diabetes.apr" --tensor coefficients -o "$work/coefficients.npy"
apr-decode extract "$work/breast_cancer.apr" -o "$work/breast_cancer.npz"
printf 'coefficients.npy  %s bytes\nbreast_cancer.npz %s bytes\n' "$(size "$work/coefficients.npy")" "$(size "$work/breast_cancer.npz")"

step "rebuild a model from the extracted arrays: apr-encode -t LinearRegression coefficients.npy intercept.npy"
apr-decode extract "$work/diabetes.apr" --tensor intercept -o "$work/intercept.npy"
apr-encode -t LinearRegression --name rebuilt "$work/coefficients.npy" "$work/intercept.npy" -o "$work/rebuilt.apr"
apr-decode inspect "$work/rebuilt.apr" | tail -3

step "a tampered copy is refused (one flipped byte in the weights)"
cp "$work/mnist.apr" "$work/tampered.apr"
off=$(apr-decode inspect --json "$work/tampered.apr" | sed -n 's/.*"data_offset": \([0-9]*\).*/\1/p' | head -1)
printf '\x7f' | dd of="$work/tampered.apr" bs=1 seek=$((off + 5)) conv=notrunc status=none
status=0
apr-decode verify "$work/tampered.apr" || status=$?
if [ "$status" -ne 1 ]; then
	echo "demo: the tampered file was not refused (exit $status)" >&2
	exit 1
fi
echo "(exit status 1, as it should be: the error names the tensor, offset, expected and actual CRC)"

# The later stages: quantization, SafeTensors, GGUF, signing, sealing, distillation.
# Each is a script of its own that also runs alone.
for stage in quant st gguf sign seal distill; do
	script="$root/pipelines/$stage.sh"
	[ -f "$script" ] || continue
	mkdir -p "$work/$stage"
	DEMO_DIR="$work/$stage" bash "$script"
done

step "done: files in $work"
