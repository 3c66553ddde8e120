#!/usr/bin/env bash
# The SafeTensors stage of the apr demo: export a trained model as SafeTensors (the case
# study's layout), import it back and verify it, pipe a SafeTensors file through the
# other filters, round-trip a file written by Hugging Face's crate byte for byte, write
# and read a sharded checkpoint, and watch a truncated file be refused.
# Needs apr-st, apr-st-import, apr-st-export, apr-encode and apr-decode on PATH
# (make build puts them in bin/). DEMO_DIR reuses the demo's trained models.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${DEMO_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/apr-st-demo.XXXXXX")}
mkdir -p "$work"
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-1767225600}
step() { printf '\n== %s\n' "$*"; }
size() { wc -c <"$1" | tr -d ' '; }
header() { # the JSON header of a SafeTensors file
	local n
	n=$(od -An -t u8 -N 8 "$1" | tr -d ' ')
	tail -c +9 "$1" | head -c "$n"
	echo
}

if [ ! -f "$work/diabetes.apr" ]; then
	step "train LinearRegression on diabetes (lib/apr Go API)"
	(cd "$root" && go run ./pipelines/train -data testdata/datasets -out "$work")
fi

step "export: apr-st export diabetes.apr -o diabetes.safetensors (coefficients and intercept, F32)"
apr-st export "$work/diabetes.apr" -o "$work/diabetes.safetensors"
echo "$(size "$work/diabetes.safetensors") bytes; header:"
header "$work/diabetes.safetensors"

step "re-import and verify: apr-st import diabetes.safetensors | apr-decode verify"
apr-st import "$work/diabetes.safetensors" -o "$work/diabetes.st.apr"
apr-decode verify "$work/diabetes.st.apr"
apr-decode inspect "$work/diabetes.st.apr" | tail -3
for t in coefficients intercept; do
	apr-decode extract "$work/diabetes.apr" --tensor "$t" -o "$work/a.npy"
	apr-decode extract "$work/diabetes.st.apr" --tensor "$t" -o "$work/b.npy"
	cmp "$work/a.npy" "$work/b.npy"
done
echo "(the tensors of the re-imported model are the trained model's, bit for bit)"

step "a pipe: apr-st-import < diabetes.safetensors | apr-encode -c zstd | apr-decode inspect"
apr-st-import <"$work/diabetes.safetensors" | apr-encode -c zstd | apr-decode inspect | sed -n 1,9p

step "Hugging Face's crate wrote big_f32.safetensors: import | export gives it back byte for byte"
crate="$root/testdata/safetensors/valid/big_f32.safetensors"
apr-st-import <"$crate" | apr-st-export >"$work/big_f32.safetensors"
cmp "$crate" "$work/big_f32.safetensors"
sha256sum "$crate" "$work/big_f32.safetensors"

step "a sharded checkpoint: apr-st export --shard-size 600B -o ckpt/, then import the directory"
apr-st-import <"$crate" | apr-encode -c lz4 >"$work/big_f32.apr"
rm -rf "$work/ckpt"
apr-st export "$work/big_f32.apr" --shard-size 600B -o "$work/ckpt/"
ls "$work/ckpt"
apr-st import "$work/ckpt" | apr-decode verify

step "a truncated file is refused, and the pipeline downstream fails too"
head -c 1000 "$crate" >"$work/truncated.safetensors"
status=0
apr-st-import <"$work/truncated.safetensors" | apr-decode verify || status=$?
if [ "$status" -ne 1 ]; then
	echo "st: the truncated file was not refused (exit $status)" >&2
	exit 1
fi
echo "(exit status 1, as it should be)"

step "done: files in $work"
