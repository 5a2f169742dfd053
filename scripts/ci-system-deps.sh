#!/usr/bin/env bash
# System packages the tests use beyond Python: iproute2 (network namespaces),
# openssh-server (the two-host test's sshd), Slurm with MUNGE (slurm-wlm, munge: the Slurm
# tests start a one-node cluster with scripts/slurm-local.sh and stop the daemons they started
# when they end), and headless Chromium (chromium-headless-shell: report.html opened offline). Installed with apt-get when missing and root; elsewhere the tests that need
# them skip with the reason.
set -euo pipefail
missing=()
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
[[ -x /usr/sbin/sshd ]] || missing+=(openssh-server)
command -v ssh-keygen >/dev/null 2>&1 || missing+=(openssh-client)
[[ -x /usr/sbin/slurmctld && -x /usr/sbin/slurmd ]] || missing+=(slurm-wlm)
[[ -x /usr/sbin/munged ]] || missing+=(munge)
command -v chromium-headless-shell >/dev/null 2>&1 || missing+=(chromium-headless-shell)
if (( ${#missing[@]} )) && [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null 2>&1; then
    echo "ci: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }; then
        echo "ci: could not install ${missing[*]}; the tests that need them skip with the reason"
    fi
fi
