#!/usr/bin/env bash
# The sealing demo stage: make an X25519 key pair, seal a model for it in a pipe,
# inspect the sealed file (readable header, metadata and index; who can open it),
# unseal it, and check the bytes came back unchanged. A wrong key is refused with
# exit status 1 and leaves no output file.
# Needs apr-seal, apr-encode and apr-decode on PATH (make build puts them in bin/).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${DEMO_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/apr-seal.XXXXXX")}
model=${1:-}
step() { printf '\n== %s\n' "$*"; }

if [ -z "$model" ]; then
	model="$work/model.apr"
	apr-encode -c zstd <"$root/testdata/aprender/mnist_784x2.apr" >"$model"
fi

step "apr-seal keygen: an X25519 identity (mode 0600) and its age1... recipient"
rm -f "$work/owner.key" "$work/owner.key.pub" "$work/other.key" "$work/other.key.pub"
recipient=$(apr-seal keygen -o "$work/owner.key")
apr-seal keygen -o "$work/other.key" >/dev/null
echo "recipient: $recipient"

step "seal for the recipient, in a pipe"
cat "$model" | apr-seal -r "$recipient" >"$work/sealed.apr"
printf 'model %s bytes, sealed %s bytes\n' "$(wc -c <"$model" | tr -d ' ')" "$(wc -c <"$work/sealed.apr" | tr -d ' ')"

step "apr-decode inspect sealed.apr: header, metadata and index stay readable"
apr-decode inspect "$work/sealed.apr"

step "unseal with the identity and compare"
apr-seal -d -i "$work/owner.key" <"$work/sealed.apr" >"$work/unsealed.apr"
cmp "$model" "$work/unsealed.apr"
echo "unsealed bytes equal the original"

step "the wrong identity is refused, and no output file is left"
status=0
apr-seal -d -i "$work/other.key" "$work/sealed.apr" -o "$work/wrong.apr" || status=$?
if [ "$status" -ne 1 ] || [ -e "$work/wrong.apr" ]; then
	echo "seal.sh: the wrong identity was not refused properly (exit $status)" >&2
	exit 1
fi
echo "(exit status 1, no wrong.apr)"
