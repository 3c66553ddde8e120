#!/usr/bin/env bash
# The batch script of every job pipelines/slurm/build.sh submits: one unit of the build
# of pipelines/Makefile, made by make itself.
#
#   job.sh RUN MAKEFILE OUT UNITS [VAR=VALUE ...]
#
# UNITS is a comma-separated list; a job array's task takes the one at its index
# (SLURM_ARRAY_TASK_ID, or JOB_COMPLETION_INDEX in a Kubernetes Indexed Job), a plain
# job the first. A unit is "prep" (make prep),
# "final" (make all check: the manifests, then every digest, signature and sealed
# copy checked) or a model name (make model-NAME). Make decides what is out of date,
# so a rerun into the same OUT only remakes what is missing. On success the job
# writes RUN/UNIT.ok, which build.sh reads to report the run; its output (make's)
# is the Slurm log build.sh points at when it failed.
set -euo pipefail

if [ $# -lt 4 ]; then
	echo "usage: job.sh RUN MAKEFILE OUT UNITS [VAR=VALUE ...]" >&2
	exit 2
fi
run=$1 makefile=$2 out=$3 list=$4
IFS=, read -r -a units <<< "$list"
shift 4

i=${SLURM_ARRAY_TASK_ID:-${JOB_COMPLETION_INDEX:-0}}
if ! [[ $i =~ ^[0-9]+$ ]] || [ "$i" -ge ${#units[@]} ]; then
	echo "job.sh: no unit $i in $list" >&2
	exit 2
fi
unit=${units[$i]}
case $unit in
prep) targets=(prep) ;;
final) targets=(all check) ;;
*) targets=("model-$unit") ;;
esac

# A task may use every CPU it was given (sbatch --cpus-per-task) for the model's
# independent targets.
jobs=${SLURM_CPUS_PER_TASK:-1}
echo "apr slurm: $unit (make -j$jobs ${targets[*]}) on $(hostname) in job ${SLURM_JOB_ID:-?}${SLURM_ARRAY_TASK_ID:+, array $SLURM_ARRAY_JOB_ID task $SLURM_ARRAY_TASK_ID}"
rm -f "$run/$unit.ok"
if make -f "$makefile" -j "$jobs" OUT="$out" "$@" "${targets[@]}"; then
	touch "$run/$unit.ok"
	echo "apr slurm: $unit done"
else
	code=$?
	echo "apr slurm: $unit failed (make exit $code)"
	exit "$code"
fi
