#!/usr/bin/env bash
# pipelines/Makefile's build as Slurm jobs (docs/SCALE.md): one array task per model,
# ordered with --dependency=afterok, every job running the Makefile's own targets.
#
#   pipelines/slurm/build.sh [--wait] [--SBATCH-OPTION=VALUE ...] OUT [VAR=VALUE ...]
#
# OUT (and this checkout, and the inputs) must be on storage every node sees at the
# same path. The jobs, all with --kill-on-invalid-dep=yes:
#
#   apr-prep     make prep: the keys (made once, the first time) and the trainer
#   apr-models   a job array per wave, task i making model i (make model-NAME): the
#                first wave after apr-prep, a later one also after the tasks of the
#                models its models are made from (the Makefile's AFTER.NAME); make
#                runs with -j the task's --cpus-per-task
#   apr-final    make all check: manifest.sha256 and sealed.sha256, then every digest,
#                signature and sealed copy checked
#
# Logs go to OUT/slurm/RUN/slurm-JOB.out (RUN is the time of submission). With --wait
# the script waits for every job, then prints a line a unit, the log of each that
# failed, and exits 1 unless the whole build succeeded. VAR=VALUE (HF, DATASETS,
# DIGITS, EPOCHS, SOURCE_DATE_EPOCH) go to every make, as on a make command line.
# --SBATCH-OPTION=VALUE (--partition=, --account=, --time=, --cpus-per-task=, --mem=)
# go to every sbatch, and so do Slurm's SBATCH_* environment variables but for those
# of options this script sets itself. The jobs get this environment (PATH with the apr
# programs included), as sbatch passes it by default.
#
# Running it again into the same OUT submits the same jobs, and make in each of them
# remakes only what is missing or out of date: after a failure, the failed models
# (and the manifests).
set -euo pipefail
shopt -s inherit_errexit # a failed sbatch in $(...) stops the script

usage() { echo "usage: $0 [--wait] [--SBATCH-OPTION=VALUE ...] OUT [VAR=VALUE ...]" >&2; exit 2; }
wait= sbopts=()
while [ $# -gt 0 ]; do
	case $1 in
	--wait) wait=1 ;;
	--*=*) sbopts+=("$1") ;;
	-*) usage ;;
	*) break ;;
	esac
	shift
done
[ $# -ge 1 ] || usage
# What this script decides for each job is not left to the environment: SBATCH_WAIT
# would block on the first job, SBATCH_ARRAY_INX make every job an array.
unset SBATCH_WAIT SBATCH_ARRAY_INX SBATCH_OUTPUT SBATCH_ERROR SBATCH_JOB_NAME SBATCH_INPUT
out=$(realpath -m "$1")
shift
for v in "$@"; do
	case $v in *=*) ;; *) usage ;; esac
done

here=$(cd "$(dirname "$0")" && pwd)
makefile=$(cd "$here/.." && pwd)/Makefile
for p in sbatch squeue make; do
	command -v "$p" >/dev/null || { echo "build.sh: $p is not installed" >&2; exit 1; }
done

# The models and the models each is made from, in the Makefile's order.
declare -A after wave index job
models=()
while read -r m deps; do
	[ -n "$m" ] || continue
	models+=("$m")
	after[$m]=$deps
done < <(make -s -f "$makefile" OUT="$out" "$@" list-models)
if [ ${#models[@]} -eq 0 ]; then
	echo "build.sh: make list-models printed no models" >&2
	exit 1
fi

# Waves: a model goes one wave after the latest of the models it is made from.
waves=0
for _ in "${models[@]}"; do
	for m in "${models[@]}"; do
		w=0
		for d in ${after[$m]}; do
			[ -n "${wave[$d]-}" ] || { w=; break; }
			[ $((wave[$d] + 1)) -le "$w" ] || w=$((wave[$d] + 1))
		done
		[ -z "$w" ] || wave[$m]=$w
		[ -z "$w" ] || [ "$w" -lt "$waves" ] || waves=$((w + 1))
	done
done
for m in "${models[@]}"; do
	if [ -z "${wave[$m]-}" ]; then
		echo "build.sh: model $m is made from ${after[$m]}, which never gets built (a cycle, or no such model)" >&2
		exit 1
	fi
done

run=$out/slurm/$(date -u +%Y%m%dT%H%M%SZ)
if [ -e "$run" ]; then
	echo "build.sh: $run exists: another build into $out started this second" >&2
	exit 1
fi
mkdir -p "$run"

# submit NAME [sbatch options...] -- UNITS: submit job.sh for UNITS, print the job id.
submit() {
	local name=$1 opts=() id
	shift
	while [ "$1" != -- ]; do
		opts+=("$1")
		shift
	done
	id=$(sbatch --parsable --job-name="$name" --kill-on-invalid-dep=yes "${sbopts[@]}" "${opts[@]}" \
		"$here/job.sh" "$run" "$makefile" "$out" "$2" "${vars[@]}")
	id=${id%%;*}
	if ! [[ $id =~ ^[0-9]+$ ]]; then
		echo "build.sh: sbatch printed no job id for $name" >&2
		return 1
	fi
	echo "$id"
}
vars=("$@")

prep=$(submit apr-prep --output="$run/slurm-%j.out" -- prep)
job[prep]=$prep
jobs=$prep
all=
for ((w = 0; w < waves; w++)); do
	list=() deps=afterok:$prep
	for m in "${models[@]}"; do
		[ "${wave[$m]}" = "$w" ] || continue
		index[$m]=${#list[@]}
		list+=("$m")
		for d in ${after[$m]}; do
			deps+=:${job[$d]}
		done
	done
	units=$(IFS=,; echo "${list[*]}")
	id=$(submit apr-models --array=0-$((${#list[@]} - 1)) --dependency="$deps" \
		--output="$run/slurm-%A_%a.out" -- "$units")
	for m in "${list[@]}"; do
		job[$m]=${id}_${index[$m]}
	done
	jobs+=,$id
	all+=:$id
done
final=$(submit apr-final --dependency="afterok$all" --output="$run/slurm-%j.out" -- final)
job[final]=$final
jobs+=,$final

units=(prep "${models[@]}" final)
for u in "${units[@]}"; do
	echo "$u ${job[$u]}"
done > "$run/jobs"
echo "build.sh: submitted ${#models[@]} models in $waves wave(s): jobs $jobs; logs in $run"
[ -n "$wait" ] || exit 0

# Wait until no job of the run is pending or running. squeue forgets a job some
# minutes (MinJobAge) after it ended, and then says its id is invalid: that is done
# too. Any other failure is retried, but not forever: the jobs are left to run.
fails=0
while :; do
	if left=$(squeue -h -o %i -j "$jobs" 2>"$run/squeue.err"); then
		fails=0
		[ -n "$left" ] || break
	elif grep -q "Invalid job id" "$run/squeue.err"; then
		break
	else
		cat "$run/squeue.err" >&2
		if [ $((++fails)) -ge 10 ]; then
			echo "build.sh: squeue failed 10 times in a row; stopped waiting for jobs $jobs" >&2
			exit 1
		fi
	fi
	sleep 1
done
rm -f "$run/squeue.err"

# log JOB: the Slurm log of a job (ID) or array task (ID_TASK).
log() { echo "$run/slurm-$1.out"; }
failed=0
for u in "${units[@]}"; do
	if [ -e "$run/$u.ok" ]; then
		echo "build.sh: $u: done (job ${job[$u]})"
	elif [ -s "$(log "${job[$u]}")" ]; then
		failed=1
		echo "build.sh: $u: FAILED (job ${job[$u]}), log $(log "${job[$u]}"):"
		tail -n 20 "$(log "${job[$u]}")" | sed 's/^/    /'
	else
		failed=1
		echo "build.sh: $u: not run (job ${job[$u]}; a job it waits for failed)"
	fi
done
if [ $failed = 0 ]; then
	echo "build.sh: built ${#models[@]} models into $out; manifest $out/manifest.sha256"
else
	echo "build.sh: the build failed; run the same command again to remake only what is missing" >&2
	exit 1
fi
