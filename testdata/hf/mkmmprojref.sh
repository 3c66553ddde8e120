#!/usr/bin/env bash
# mkmmprojref.sh NAME...: rewrite testdata/hf/NAME.sha256 with the sums of NAME's
# files (as mkmistral3.py wrote them) and of the projector files today's
# convert_hf_to_gguf.py --mmproj writes of it for f32, f16, bf16 and q8_0
# (ref/mmproj-NAME.TYPE.gguf; the converter's, which llama.cpp refuses for want of
# v.token_embd.img_break: docs/GGUF.md), and of its text model's f32 file
# (ref/NAME.f32.gguf). CONVERT is the command that runs the
# converter with its arguments appended (README.md, "References").
set -euo pipefail
: "${CONVERT:?set CONVERT to the converter command}"
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
mkdir ref
for name in "$@"; do
	cp -r "$here/$name" .
	for t in f32 f16 bf16 q8_0; do
		$CONVERT "$name" --mmproj --outtype "$t" --outfile "ref/mmproj-$name.$t.gguf" >"$name.$t.log" 2>&1 ||
			{ cat "$name.$t.log"; exit 1; }
	done
	$CONVERT "$name" --outtype f32 --outfile "ref/$name.f32.gguf" >"$name.text.log" 2>&1 || { cat "$name.text.log"; exit 1; }
	{ (cd "$here" && sha256sum "$name"/*); sha256sum ref/mmproj-"$name".*.gguf "ref/$name.f32.gguf"; } >"$here/$name.sha256"
done
