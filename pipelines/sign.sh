#!/usr/bin/env bash
# Signing demo stage: make a key pair, sign a model in a pipe, verify it, re-compress
# it (the signature survives: it covers content, not encoding), add a CI signature and
# a license, watch an edited copy and an untrusted key be refused, pass a verified
# model on through a pipe, and make a detached minisign signature that minisign checks.
# Needs apr-sign, apr-encode and apr-decode on PATH (make build puts them in bin/);
# minisign is used when installed.
#
#   pipelines/sign.sh [MODEL.apr]     (default: aprender's mnist_784x2.apr, imported)
#   DEMO_DIR=dir keeps the files in dir.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${DEMO_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/apr-sign.XXXXXX")}
mkdir -p "$work"
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-1767225600} # reproducible files: 2026-01-01
step() { printf '\n== %s\n' "$*"; }
refused() { # refused WHAT COMMAND...: the command must fail with exit 1
	local what=$1 status=0
	shift
	"$@" || status=$?
	if [ "$status" -ne 1 ]; then
		echo "sign.sh: $what was not refused (exit $status)" >&2
		exit 1
	fi
	echo "(refused with exit 1, as it should be)"
}

model=${1:-}
if [ -z "$model" ]; then
	model="$work/model.apr"
	apr-encode -c zstd <"$root/testdata/aprender/mnist_784x2.apr" >"$model"
fi

step "keygen: an author key and a CI key (PKCS#8 / PKIX PEM; the private key is mode 0600)"
rm -f "$work"/author.key "$work"/author.pub "$work"/ci.key "$work"/ci.pub "$work"/stranger.key "$work"/stranger.pub
apr-sign keygen -o "$work/author"
apr-sign keygen -o "$work/ci"
apr-sign keygen -o "$work/stranger" 2>/dev/null
ls -l "$work/author.key" "$work/author.pub" | awk '{print $1, $NF}'

step "sign in a pipe: apr-sign -k author.key --comment ... < model.apr > signed.apr"
apr-sign -k "$work/author.key" --comment "release 1.0" <"$model" >"$work/signed.apr"
apr-decode inspect "$work/signed.apr" | grep -E 'flags|block'

step "verify with the author's public key"
apr-sign verify -p "$work/author.pub" "$work/signed.apr"

step "re-compress (zstd-max + shuffle), decompress to plain, and verify again: the signature survives"
apr-encode -c zstd-max --shuffle <"$work/signed.apr" >"$work/signed.zst.apr"
apr-decode plain <"$work/signed.zst.apr" >"$work/signed.plain.apr"
printf '%-22s %8s bytes\n' signed.apr "$(wc -c <"$work/signed.apr")" signed.zst.apr "$(wc -c <"$work/signed.zst.apr")" \
	signed.plain.apr "$(wc -c <"$work/signed.plain.apr")"
apr-sign verify -p "$work/author.pub" <"$work/signed.zst.apr"
apr-sign verify -p "$work/author.pub" "$work/signed.plain.apr"

step "a second signature from CI; either key verifies"
apr-sign -k "$work/ci.key" --comment "ci: tests passed" <"$work/signed.zst.apr" >"$work/signed2.apr"
apr-sign verify -q -p "$work/author.pub" "$work/signed2.apr" && echo "author: ok"
apr-sign verify -q -p "$work/ci.pub" "$work/signed2.apr" && echo "ci: ok"

step "refused: an untrusted key, and a copy whose metadata was edited"
refused "an untrusted key" apr-sign verify -p "$work/stranger.pub" "$work/signed2.apr"
apr-encode --metric accuracy=0.99 <"$work/signed.apr" >"$work/edited.apr"
refused "an edited copy" apr-sign verify -p "$work/author.pub" "$work/edited.apr"

step "a pipe that only passes verified models on: apr-sign verify --pass | apr-decode verify"
apr-sign verify -p "$work/author.pub" --pass <"$work/signed2.apr" | apr-decode verify
out=$(apr-sign verify -p "$work/stranger.pub" --pass <"$work/signed2.apr" 2>/dev/null | wc -c) || true
echo "untrusted key: $out bytes reached the next program"
if [ "$out" -ne 0 ]; then
	echo "sign.sh: an unverified model reached stdout" >&2
	exit 1
fi

step "license: issued by the author's key to Acme, checked on the re-compressed copy"
apr-sign license -k "$work/author.key" --licensee "Acme Corp" --tier pro --seats 5 --expires 365d \
	<"$work/signed2.apr" >"$work/licensed.apr"
apr-encode -c lz4 <"$work/licensed.apr" | apr-sign verify --license -p "$work/author.pub"
refused "a license from an unknown issuer" apr-sign verify --license -p "$work/ci.pub" "$work/licensed.apr"

step "detached minisign signature of the whole file: apr-sign --detached --minisign"
apr-sign --detached --minisign -k "$work/author.key" "$work/signed.apr"
apr-sign verify --minisign -p "$work/author.pub" "$work/signed.apr"
if command -v minisign >/dev/null; then
	apr-sign pubkey "$work/author.pub" >"$work/author.minisign.pub"
	minisign -V -p "$work/author.minisign.pub" -m "$work/signed.apr"
else
	echo "(minisign is not installed; skipped minisign -V)"
fi

step "done: files in $work"
