#!/usr/bin/env bash
# A real one-node Slurm on this machine (Debian's slurm-wlm and munge), for the Slurm tests.
#
#   bash scripts/slurm-local.sh start PIDFILE   start munged, slurmctld and slurmd where they do not
#                                               run yet; the PIDs started go to PIDFILE
#   bash scripts/slurm-local.sh stop PIDFILE    stop exactly the daemons listed in PIDFILE
#
# Needs root and the packages (scripts/ci-system-deps.sh installs them). The node gets this
# machine's CPU count and 90% of its memory, one partition "debug", no accounting (sacct answers
# "accounting storage is disabled"; jobs are followed through squeue and scontrol).
set -euo pipefail
action=${1:?start or stop}
pidfile=${2:?a file for the PIDs of the daemons started}

started() { echo "$1" >> "$pidfile"; }
# the live process of a daemon (a daemon's forking parent may linger as a zombie)
live() { ps -o pid= -o stat= -C "$1" | awk '$2 !~ /Z/ {print $1}'; }

if [[ $action == stop ]]; then
    [[ -f $pidfile ]] || exit 0
    # slurmd first, then the controller, then munge: jobs end with their node daemon
    for pid in $(tac "$pidfile"); do kill "$pid" 2>/dev/null || true; done
    for _ in $(seq 50); do
        alive=0
        for pid in $(cat "$pidfile"); do kill -0 "$pid" 2>/dev/null && alive=1; done
        (( alive )) || break
        sleep 0.2
    done
    rm -f "$pidfile"
    exit 0
fi

[[ $action == start ]] || { echo "usage: $0 start|stop PIDFILE" >&2; exit 2; }
: > "$pidfile"
host=$(hostname -s)
cpus=$(nproc)
memory=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 * 9 / 10 ))
mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm /run/munge
if [[ ! -f /etc/slurm/slurm.conf ]] || ! grep -q "^NodeName=$host " /etc/slurm/slurm.conf; then
    cat > /etc/slurm/slurm.conf <<CONF
ClusterName=local
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
KillWait=5
NodeName=$host CPUs=$cpus RealMemory=$memory State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
fi
if ! [[ -n $(live munged) ]]; then
    chown -R munge:munge /etc/munge /var/lib/munge /var/log/munge /run/munge
    su -s /bin/sh munge -c /usr/sbin/munged
    for _ in $(seq 50); do [[ -n $(live munged) ]] && break; sleep 0.1; done
    started "$(live munged)"
fi
if ! [[ -n $(live slurmctld) ]]; then
    /usr/sbin/slurmctld
    for _ in $(seq 100); do scontrol ping 2>/dev/null | grep -q UP && break; sleep 0.1; done
    started "$(live slurmctld)"
fi
if ! [[ -n $(live slurmd) ]]; then
    /usr/sbin/slurmd
    for _ in $(seq 50); do [[ -n $(live slurmd) ]] && break; sleep 0.1; done
    started "$(live slurmd)"
fi
# the node answers: idle (or mixed/allocated when jobs run already)
for _ in $(seq 150); do
    state=$(sinfo -h -N -o %t 2>/dev/null | head -n1)
    [[ $state == idle || $state == mix || $state == alloc ]] && exit 0
    [[ $state == down* || $state == drain* ]] && scontrol update nodename="$host" state=resume 2>/dev/null || true
    sleep 0.2
done
echo "slurm: node $host did not become idle (sinfo: ${state:-nothing}); see /var/log/slurm/" >&2
exit 1
