#!/usr/bin/env bash
# mkfp8ref.sh NAME: the reference sums of the FP8 checkpoint testdata/hf/NAME. Today's
# converter cannot read FP8 on Debian's torch 1.13, so fp8ref.py writes the converter's
# arithmetic (E4M3 decoded, times its block scale, in float32) into a BF16 twin of the
# checkpoint, exact, named NAME too (general.name comes from the folder's name), and
# mkref.sh makes the twin's references (LLAMA and CONVERT as for mkref.sh). NAME.sha256 keeps
# the FP8 checkpoint's own files' sums and gets the twin's references and, as
# "dequant/TENSOR", the sums of fp8ref.py's float32 values.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
name=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 "$here/fp8ref.py" "$here/$name" "$work/$name" >"$work/dequant.txt"
cp "$here/mkref.sh" "$work/"
grep "  $name/" "$here/$name.sha256" >"$work/$name.sha256"
bash "$work/mkref.sh" "$name"
{
	cat "$work/$name.sha256"
	sed 's|  *|  dequant/|' "$work/dequant.txt"
} >"$here/$name.sha256"
