# Sourced by the .ci/bench-* scripts: measure NAME BYTES FLOOR CMD runs the bash string
# CMD $runs times (pipefail on, stdout discarded, $dir/out removed before each run) and
# prints a Markdown row: median wall seconds, MB/s of BYTES, the ratio of the row named
# FLOOR's median to this one's (1.00 = as fast as the floor; empty without a floor), and
# the peak RSS in MiB of the largest process (GNU time's %M). Needs $runs, $dir, GNU
# time and bc.
declare -A secs
measure() {
	local name=$1 bytes=$2 floor=$3 cmd=$4 t=() m=0 e k ratio=""
	for _ in $(seq "$runs"); do
		rm -rf "$dir/out"
		sync
		/usr/bin/time -f '%e %M' -o "$dir/time" bash -o pipefail -c "$cmd" >/dev/null
		read -r e k <"$dir/time"
		t+=("$e")
		[ "$k" -gt "$m" ] && m=$k
	done
	secs[$name]=$(printf '%s\n' "${t[@]}" | sort -g | sed -n "$(((runs + 1) / 2))p")
	if [ -n "$floor" ]; then
		ratio=$(printf '%.2f' "$(echo "${secs[$floor]} / ${secs[$name]}" | bc -l)")
	fi
	printf '| `%s` | %s | %.0f | %s | %.1f |\n' "${name//|/\\|}" "${secs[$name]}" \
		"$(echo "$bytes / ${secs[$name]} / 1000000" | bc -l)" "$ratio" "$(echo "$m / 1024" | bc -l)"
}
