"""The package as it would be published: `python -m build` makes an sdist and a wheel from a copy of
python/ that hold the package, its metadata (name, version, license, README) and nothing else.

With BATON_PY_OFFLINE=1 (the Debian run of scripts/test-python.mjs) it builds with the venv's own
setuptools (--no-isolation); otherwise in an isolated environment from the package index, as a user's
`pip install` or a release would."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

from conftest import ROOT

SOURCE = ROOT / "python"


def version_in_source() -> str:
    found = re.search(r'^__version__ = "([^"]+)"$', (SOURCE / "baton" / "__init__.py").read_text(), re.M)
    assert found, "python/baton/__init__.py has no __version__"
    return found.group(1)


def package_files() -> set[str]:
    return {f"baton/{p.name}" for p in (SOURCE / "baton").iterdir() if p.is_file() and p.suffix != ".pyc"}


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    pytest.importorskip("build", reason="the `build` package is missing (python3-build, or pip install build)")
    tmp = tmp_path_factory.mktemp("package")
    src = tmp / "src"
    shutil.copytree(SOURCE, src, ignore=shutil.ignore_patterns("build", "dist", "*.egg-info", "__pycache__"))
    offline = ["--no-isolation"] if os.environ.get("BATON_PY_OFFLINE") == "1" else []
    env = {**os.environ, "PIP_RETRIES": "0"}
    run = subprocess.run([sys.executable, "-m", "build", *offline, "--outdir", str(tmp / "out"), str(src)],
                         capture_output=True, text=True, timeout=180, env=env)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return tmp / "out"


def test_the_wheel_holds_the_package_and_its_metadata_and_nothing_else(built: Path):
    version = version_in_source()
    (wheel,) = built.glob("*.whl")
    assert wheel.name == f"baton_client-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        meta = Parser().parsestr(z.read(f"baton_client-{version}.dist-info/METADATA").decode())
    info = f"baton_client-{version}.dist-info/"
    assert {n for n in names if not n.startswith(info)} == package_files()
    assert {n.removeprefix(info) for n in names if n.startswith(info)} <= {"METADATA", "WHEEL", "RECORD", "top_level.txt"}
    assert (meta["Name"], meta["Version"], meta["License"], meta["Requires-Python"]) == ("baton-client", version, "MIT", ">=3.11")
    # older setuptools write "websockets (>=10.4)" and single-quoted extras
    assert [re.sub(r"[ ()'\"]", "", d) for d in meta.get_all("Requires-Dist")] == ["websockets>=10.4", "opentelemetry-api<2,>=1.45;extra==otel"]
    assert meta.get_all("Provides-Extra") == ["otel"]
    assert meta["Description-Content-Type"] == "text/markdown"
    assert meta.get_payload().strip() == (SOURCE / "README.md").read_text().strip()


def test_the_sdist_holds_the_package_its_readme_and_build_files_and_nothing_else(built: Path):
    version = version_in_source()
    (sdist,) = built.glob("*.tar.gz")
    top = sdist.name.removesuffix(".tar.gz")
    assert top in (f"baton_client-{version}", f"baton-client-{version}")  # setuptools < 69 kept the dash
    with tarfile.open(sdist) as t:
        files = {m.name.removeprefix(f"{top}/") for m in t.getmembers() if m.isfile()}
    made_by_setuptools = {n for n in files if n.startswith("baton_client.egg-info/")} | {"PKG-INFO", "setup.cfg"}
    assert files - made_by_setuptools == package_files() | {"pyproject.toml", "README.md"}
