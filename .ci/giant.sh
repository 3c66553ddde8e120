# giant.sh: the steps shared by .ci/bench-giant and .ci/bench-giant-moe, sourced by them after
# they set name (for messages), need (bytes of free disk a run needs) and genargs (genckpt's
# flags for their checkpoint, but -o). What the steps do and measure is described at the top
# of .ci/bench-giant.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${BENCH_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/apr-$name.XXXXXX")}
mkdir -p "$dir"
[ -x /usr/bin/time ] || { echo "$name: needs GNU time (apt-get install -y time)" >&2; exit 1; }
command -v bc >/dev/null || { echo "$name: needs bc" >&2; exit 1; }
ckpt=$dir/giant
if [ ! -d "$ckpt" ]; then
	free=$(df --output=avail -B1 "$dir" | tail -1)
	[ "$free" -gt "$need" ] || { echo "$name: needs $need bytes free in $dir, has $free" >&2; exit 1; }
fi
cleanup() {
	[ "${BENCH_KEEP:-}" = 1 ] || rm -rf "$ckpt" "$dir/set" "$dir/bin"
	rm -rf "$dir/tmp" "$dir"/*.time "$dir/df.log" "$dir/convert.gguf" "$dir/convert.log"
}
trap cleanup EXIT
GOEXPERIMENT=simd go build -o "$dir/bin/" ./cmd/apr-st ./cmd/apr-quant ./cmd/apr-gguf ./testdata/hf/genckpt
PATH="$dir/bin:$PATH"
mib() { echo "$(($1 / 1024))"; }
# times FILE prints GNU time's last line (a failed command's file starts with a note).
times() { tail -1 "$1"; }
bad=0

echo "$(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(go version | cut -d' ' -f3), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "memory: $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)"
if [ ! -d "$ckpt" ]; then
	/usr/bin/time -f '%e %M' -o "$dir/gen.time" genckpt "${genargs[@]}" -o "$ckpt"
	read -r e k < <(times "$dir/gen.time")
	echo "checkpoint written by genckpt in $e s, peak RSS $(mib "$k") MiB"
fi
shards=("$ckpt"/*.safetensors)
size=$(cat "${shards[@]}" | wc -c)
echo "input: $size bytes of BF16 SafeTensors in ${#shards[@]} shards"
echo

# 1. The floor.
/usr/bin/time -f '%e %M' -o "$dir/cat.time" bash -c 'cat "$@" | wc -c >/dev/null' _ "${shards[@]}"
read -r cat_s _ < <(times "$dir/cat.time")

# 2. The pipe, watched.
rm -rf "$dir/set" "$dir/tmp"
mkdir -p "$dir/set" "$dir/tmp"
used() { df --output=used -B1 "$dir" | tail -1; }
before=$(used)
(while :; do used; sleep 1; done) >"$dir/df.log" &
sampler=$!
TMPDIR=$dir/tmp /usr/bin/time -f '%e' -o "$dir/pipe.time" bash -o pipefail -c '
	d=$1
	/usr/bin/time -f "%e %M" -o "$d/import.time" apr-st -q import "$d/giant" |
		/usr/bin/time -f "%e %M" -o "$d/quant.time" apr-quant -q q4_k_m |
		/usr/bin/time -f "%e %M" -o "$d/export.time" apr-gguf -q export --temp-dir "$d/tmp" --split-max-size 4G -o "$d/set/giant.Q4_K_M"' _ "$dir"
kill "$sampler"
wait "$sampler" 2>/dev/null || true
read -r pipe_s < <(times "$dir/pipe.time")
parts=("$dir"/set/giant.Q4_K_M-*.gguf)
out=$(cat "${parts[@]}" | wc -c)
peak=$(sort -n "$dir/df.log" | tail -1)
growth=$((peak - before))
leftover=$(find "$dir/tmp" -mindepth 1 | wc -l)

echo "| step | seconds | MB/s of checkpoint | vs cat | peak RSS MiB |"
echo "| --- | --- | --- | --- | --- |"
printf '| `cat shards \\| wc -c` | %s | %.0f | 1.00 | |\n' "$cat_s" "$(echo "$size / $cat_s / 1000000" | bc -l)"
printf '| `apr-st import DIR \\| apr-quant q4_k_m \\| apr-gguf export --split-max-size 4G -o P` | %s | %.0f | %.2f | |\n' \
	"$pipe_s" "$(echo "$size / $pipe_s / 1000000" | bc -l)" "$(echo "$cat_s / $pipe_s" | bc -l)"
for p in import quant export; do
	read -r e k < <(times "$dir/$p.time")
	printf '| &nbsp;&nbsp;%s process | %s | | | %s |\n' "$p" "$e" "$(mib "$k")"
done
echo
echo "output: ${#parts[@]} parts, $out bytes ($(basename "${parts[0]}"), ...)"
echo "disk: used bytes grew by at most $growth over the run (the set is $out); files left in the temporary directory: $leftover"
[ "$growth" -le $((out + 64 * 1048576)) ] || { echo "FAIL: the file system grew by more than the output"; bad=1; }
[ "$leftover" = 0 ] || { echo "FAIL: files left in $dir/tmp"; bad=1; }
for p in import quant export; do
	read -r _ k < <(times "$dir/$p.time")
	[ "$k" -le $((100 * 1024)) ] || { echo "FAIL: the $p process peaked at $(mib "$k") MiB, over 100 MiB"; bad=1; }
done

# 3. llama.cpp loads the set.
peer=testdata/gguf/llama-peer
[ -d "$peer/node_modules" ] || (cd "$peer" && npm install --no-save --ignore-scripts --omit=optional --no-audit --no-fund >/dev/null)
start=$(date +%s.%N)
loaded=$(cd "$peer" && PROMPT="The license" MAX_TOKENS=4 node run.mjs "${parts[0]}") || bad=1
echo "llama.cpp (node-llama-cpp) in $(printf '%.0f' "$(echo "$(date +%s.%N) - $start" | bc -l)") s: ${loaded#"$dir"/}"

# 4. llama.cpp's converter on the same checkpoint, after apr's set is removed, with a
# watchdog that stops it (its own processes only) when available memory falls under 512 MiB.
if [ -n "${LLAMA_CONVERT:-}" ]; then
	rm -rf "$dir/set"
	/usr/bin/time -f '%e %M' -o "$dir/convert.time" bash -c "$LLAMA_CONVERT '$ckpt' --outtype q8_0 --outfile '$dir/convert.gguf' >'$dir/convert.log' 2>&1" &
	conv=$!
	stopped="" low=$((1 << 62))
	while kill -0 "$conv" 2>/dev/null; do
		avail=$(awk '/MemAvailable/ {print $2}' /proc/meminfo)
		[ "$avail" -ge "$low" ] || low=$avail
		if [ "$avail" -lt 524288 ]; then
			stopped="; stopped by the benchmark: available memory fell under 512 MiB"
			pkill -f -- "^[^ ]*python[^ ]* .*--outfile $dir/convert.gguf" || true
		fi
		sleep 1
	done
	rc=0
	wait "$conv" || rc=$?
	read -r e k < <(times "$dir/convert.time")
	written=$(stat -c %s "$dir/convert.gguf" 2>/dev/null || echo 0)
	echo "convert_hf_to_gguf.py --outtype q8_0: exit $rc after $e s, peak RSS $(mib "$k") MiB, least available memory $(mib "$low") MiB, $written bytes written$stopped"
	[ "$rc" = 0 ] || tail -3 "$dir/convert.log"
fi
exit $bad
