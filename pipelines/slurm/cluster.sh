#!/usr/bin/env bash
# A throwaway single-node Slurm on this machine, for trying pipelines/slurm/build.sh and
# for its test (TestSlurmBuild): munged, slurmctld and slurmd from the distribution's
# packages (Debian: apt-get install slurm-wlm munge), all state, sockets, logs and pid
# files under one directory, on ports nobody listens on, as root (slurmd starts jobs as
# their users).
#
#   pipelines/slurm/cluster.sh start DIR   # prints SLURM_CONF=DIR/slurm.conf when the node is idle
#   pipelines/slurm/cluster.sh stop DIR    # stops the three daemons it started there
#
# Clients find the cluster through SLURM_CONF; the packages' own configuration
# (/etc/slurm, /etc/munge) is neither read nor changed.
set -euo pipefail

usage() { echo "usage: $0 start|stop DIR" >&2; exit 2; }
[ $# -eq 2 ] || usage
cmd=$1
dir=$(realpath -m "$2")

# stop_pid FILE: SIGTERM the process whose id FILE holds, then wait (10 s) for it to go.
stop_pid() {
	local f=$1 pid
	[ -s "$f" ] || return 0
	pid=$(cat "$f")
	if kill "$pid" 2>/dev/null; then
		for _ in $(seq 100); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "$pid" 2>/dev/null; then
			echo "cluster.sh: process $pid ($f) did not stop" >&2
			return 1
		fi
	fi
	rm -f "$f"
}

# free_port: a TCP port on 127.0.0.1 that nothing accepts connections on.
free_port() {
	local p
	for _ in $(seq 50); do
		p=$((20000 + RANDOM % 20000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
	echo "cluster.sh: no free port found" >&2
	return 1
}

case $cmd in
stop)
	stop_pid "$dir/slurmd.pid"
	stop_pid "$dir/slurmctld.pid"
	stop_pid "$dir/munged.pid"
	exit 0
	;;
start) ;;
*) usage ;;
esac

if [ "$(id -u)" != 0 ]; then
	echo "cluster.sh: run as root (slurmd starts every job as its user)" >&2
	exit 1
fi
for p in munged mungekey slurmctld slurmd sinfo; do
	command -v "$p" >/dev/null || { echo "cluster.sh: $p is not installed (Debian: apt-get install slurm-wlm munge)" >&2; exit 1; }
done
if [ -e "$dir/slurm.conf" ]; then
	echo "cluster.sh: $dir already holds a cluster; stop it and remove the directory first" >&2
	exit 1
fi
mkdir -p "$dir"/{state,spool,log}
chmod 755 "$dir"

# munged: its own key and socket, so it neither needs nor touches /etc/munge.
mungekey --create --keyfile="$dir/munge.key"
munged --socket="$dir/munge.socket" --key-file="$dir/munge.key" --pid-file="$dir/munged.pid" \
	--log-file="$dir/log/munged.log" --seed-file="$dir/munged.seed"

# slurmctld checks that it runs on SlurmctldHost, and slurmd finds its node by the host
# name: both are this machine's short name, reached at 127.0.0.1.
host=$(hostname -s)
cat > "$dir/slurm.conf" <<EOF
ClusterName=apr-local
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
PlugStackConfig=$dir/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=local Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
: > "$dir/plugstack.conf"
export SLURM_CONF=$dir/slurm.conf

# -i: start from an empty state (the directory is new anyway).
slurmctld -i
slurmd
for _ in $(seq 300); do
	if [ "$(sinfo -h -o %T 2>/dev/null)" = idle ]; then
		echo "SLURM_CONF=$SLURM_CONF"
		exit 0
	fi
	sleep 0.1
done
echo "cluster.sh: the node did not become idle in 30 s; logs in $dir/log:" >&2
tail -n 20 "$dir"/log/*.log >&2 || true
sinfo >&2 || true
exit 1
