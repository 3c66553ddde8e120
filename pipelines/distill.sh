#!/usr/bin/env bash
# Distillation stage of the apr demo: fit a teacher network on the real digits set,
# distil a small student from it (and from a softmax-regression teacher), and read the student's provenance back with
# apr-decode inspect. Needs apr-distill and apr-decode on PATH (make build puts them
# in bin/). DEMO_DIR keeps the files; SOURCE_DATE_EPOCH makes them reproducible.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${DEMO_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/apr-distill.XXXXXX")}
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-1767225600} # 2026-01-01
data="$root/testdata/digits/digits.csv.gz"               # 1797 rows, 64 pixels 0..16, digit last
epochs=${DISTILL_EPOCHS:-60}
step() { printf '\n== %s\n' "$*"; }

step "fit a teacher 64-128-128-10 on digits ($epochs epochs, Adam, the issue's stratified 75/25 split: 25% held out)"
apr-distill fit --data "$data" --scale 0.0625 --student 64-128-128-10 \
	--val-split 0.25 --epochs "$epochs" --seed 1 --name digits-teacher -o "$work/teacher.apr"

step "distil a 64-16-16-10 student from it (T=3, alpha=0.7), validated on the same held-out rows"
apr-distill "$work/teacher.apr" --data "$data" --scale 0.0625 --student 64-16-16-10 \
	--temperature 3 --alpha 0.7 --val-split 0.25 --epochs "$epochs" --seed 2 --name digits-student -o "$work/student.apr"

step "the student's provenance: apr-decode inspect student.apr"
apr-decode inspect "$work/student.apr"
apr-decode verify "$work/student.apr"

step "a softmax regression (multinomial LogisticRegression) as teacher: fit it on the same split, distil the same student"
apr-distill fit-logistic --data "$data" --scale 0.0625 --val-split 0.25 --name digits-softmax -o "$work/softmax.apr"
apr-distill "$work/softmax.apr" --data "$data" --scale 0.0625 --student 64-16-16-10 \
	--temperature 3 --alpha 0.7 --val-split 0.25 --epochs "$epochs" --seed 2 --name digits-student-lr -o "$work/student-lr.apr"

step "data wider than the teacher's input is refused (labels read as a 65th feature), and no file is written"
status=0
apr-distill "$work/teacher.apr" --data "$data" --label-column none --student 65-8-10 -o "$work/refused.apr" || status=$?
if [ "$status" -ne 1 ] || [ -e "$work/refused.apr" ]; then
	echo "distill.sh: a bad run succeeded or left a file (exit $status)" >&2
	exit 1
fi
echo "(exit status $status, no output file)"

step "done: files in $work"
