"""The wheel works on its own: built from the sources, installed outside the repository (no
dependency downloaded), run from another directory, it composes from its own package data
(llama4spec.conf, llama4spec.runbooks), not from the repository's conf/ and runbooks/."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.helpers import REPO

# What a wheel build needs; copied so the build neither reads a stale build/ nor writes into the
# shared working tree (build/, *.egg-info).
SOURCES = ("pyproject.toml", "README.md", "llama4spec", "conf", "runbooks")
IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build", "runs", "outputs")


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("install")
    src = root / "src"
    src.mkdir()
    for name in SOURCES:
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=IGNORE)
        else:
            shutil.copy2(path, src / name)
    dist = root / "dist"
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
         "-w", str(dist), str(src)],
        capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, f"pip wheel failed\n{build.stdout}\n{build.stderr}"
    wheels = list(dist.glob("llama4spec-*.whl"))
    assert len(wheels) == 1, wheels
    site = root / "site"
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "-q", "--target", str(site),
         str(wheels[0])],
        capture_output=True, text=True, timeout=300)
    assert install.returncode == 0, f"pip install failed\n{install.stdout}\n{install.stderr}"
    elsewhere = root / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSAFEPATH")}
    env.update(PYTHONPATH=str(site), COLUMNS="160")
    return {"wheel": wheels[0], "site": site, "cwd": elsewhere, "env": env}


def _python(installed: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=installed["cwd"], env=installed["env"],
                          capture_output=True, text=True, timeout=120)


def _cli(installed: dict, *args: str) -> subprocess.CompletedProcess:
    return _python(installed, "-m", "llama4spec", *args)


def test_wheel_carries_every_config_and_runbook(installed):
    names = set(zipfile.ZipFile(installed["wheel"]).namelist())
    for directory, package in (("conf", "llama4spec/conf"), ("runbooks", "llama4spec/runbooks")):
        shipped = {f"{package}/{p.relative_to(REPO / directory).as_posix()}"
                   for p in (REPO / directory).rglob("*.yaml")}
        assert shipped, directory
        missing = sorted(shipped - names)
        assert not missing, f"the wheel lacks {missing} (pyproject.toml [tool.setuptools.package-data])"
    assert any(n.startswith("llama4spec/preflight/known_configs/") and n.endswith(".json") for n in names)


def test_the_installed_package_is_imported(installed):
    site = installed["site"].resolve()
    result = _python(installed, "-c",
                     "import llama4spec, llama4spec.conf, llama4spec.runbooks\n"
                     "for m in (llama4spec, llama4spec.conf, llama4spec.runbooks): print(m.__file__)")
    assert result.returncode == 0, result.stderr
    files = [Path(line).resolve() for line in result.stdout.split()]
    assert len(files) == 3, result.stdout
    for f in files:
        assert f.is_relative_to(site), f"{f} is not under {site}"
        assert not f.is_relative_to(REPO), f


def test_show_scout_from_the_wheel(installed):
    result = _cli(installed, "show", "experiment=scout_eagle_reference")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert "meta-llama/Llama-4-Scout-17B-16E-Instruct" in result.stdout
    assert "morgendave/EAGLE-Llama-4-Scout-17B-16E-Instruct" in result.stdout
    assert "vllm serve meta-llama/Llama-4-Scout-17B-16E-Instruct" in result.stdout


def test_validate_the_default_from_the_wheel(installed):
    result = _cli(installed, "validate")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "valid" in result.stdout


def test_run_a_shipped_runbook_by_name_from_the_wheel(installed):
    result = _cli(installed, "run", "tiny_cpu_eagle_vs_baseline", "--dry-run")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    site = str(installed["site"])
    assert f"{site}/llama4spec/runbooks/tiny_cpu_eagle_vs_baseline.yaml" in result.stdout, result.stdout
    assert str(REPO / "runbooks") not in result.stdout
    assert "eagle: serve" in result.stdout and "baseline: serve" in result.stdout
    assert not (installed["cwd"] / "runs").exists(), "a dry run wrote a run directory"


def test_every_package_of_the_source_is_in_the_wheel() -> None:
    """pyproject.toml lists the wheel's packages by hand: a new subpackage left out installs without it."""
    import tomllib

    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(REPO).parts) for p in (REPO / "llama4spec").rglob("__init__.py")}
    assert found - listed == set(), f"add to pyproject.toml's packages: {sorted(found - listed)}"
