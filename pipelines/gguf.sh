#!/usr/bin/env bash
# The GGUF stage of the apr demo: import a tiny llama (written by gguf-py) into APR,
# inspect it, quantize it to Q8_0 with apr-quant and export it back to GGUF (the
# llama.cpp chain), round-trip llama.cpp's own files byte for byte, export a classical
# model to GGUF and back, and watch damaged files be refused.
# Needs apr-gguf, apr-gguf-import, apr-gguf-export, apr-decode (and apr-quant, for the
# quantization step, which is skipped without it) on PATH; make build puts them in bin/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${DEMO_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/apr-gguf-demo.XXXXXX")}
mkdir -p "$work"
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-1767225600}
fx=$root/testdata/gguf
step() { printf '\n== %s\n' "$*"; }

step "import: apr-gguf import tiny-llama.f32.gguf -o tiny-llama.apr"
apr-gguf import "$fx/tiny-llama.f32.gguf" -o "$work/tiny-llama.apr"
apr-decode verify "$work/tiny-llama.apr"

step "inspect: every GGUF KV kept with its type and position (metadata key \"gguf\"), tokenizer arrays summarised"
apr-decode inspect "$work/tiny-llama.apr" | sed -n 1,12p | cut -c1-400
echo "  ..."

step "export: apr-gguf export tiny-llama.apr gives back the original bytes"
apr-gguf export "$work/tiny-llama.apr" -o "$work/tiny-llama.f32.gguf"
cmp "$fx/tiny-llama.f32.gguf" "$work/tiny-llama.f32.gguf"
sha256sum "$fx/tiny-llama.f32.gguf" "$work/tiny-llama.f32.gguf"

if command -v apr-quant >/dev/null; then
	step "the llama.cpp chain: apr-gguf-import < tiny-llama.f32.gguf | apr-quant q8_0 | apr-gguf-export > tiny-llama.Q8_0.gguf"
	apr-gguf-import <"$fx/tiny-llama.f32.gguf" | apr-quant q8_0 | apr-gguf-export >"$work/tiny-llama.Q8_0.gguf"
	ls -l "$work/tiny-llama.Q8_0.gguf" "$fx/tiny-llama.Q8_0.gguf" | awk '{print $5, $NF}'
	echo "(same size as llama-quantize's file; same tensor bytes and KVs, in the source's order;"
	echo " .ci/test-peers-gguf has llama.cpp load and run it)"
	apr-gguf import "$work/tiny-llama.Q8_0.gguf" | apr-decode inspect | grep -E 'flags|Q8_0' | head -4
else
	step "apr-quant not on PATH: quantization step skipped"
fi

step "llama-quantize's own files survive import | export byte for byte"
for f in tiny-llama.Q4_0.gguf small.Q6_K.gguf allkv.gguf; do
	apr-gguf-import <"$fx/$f" | apr-gguf-export >"$work/$f"
	cmp "$fx/$f" "$work/$f" && echo "  $f: identical"
done

step "a damaged file is refused, and no output file is left"
head -c 20000 "$fx/tiny-llama.f32.gguf" >"$work/truncated.gguf"
if apr-gguf import "$work/truncated.gguf" -o "$work/truncated.apr"; then
	echo "a truncated GGUF was accepted" >&2
	exit 1
fi
[ ! -e "$work/truncated.apr" ] && echo "  (exit 1, no truncated.apr)"
if apr-gguf-import <"$work/truncated.gguf" | apr-gguf-export >"$work/truncated.out.gguf"; then
	echo "a pipeline over a truncated GGUF succeeded" >&2
	exit 1
fi
echo "  (the pipeline fails too)"
echo
echo "gguf demo: OK ($work)"
