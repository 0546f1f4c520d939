"""Shared fixtures: the repository's real models, datasets and kernels, and the `dop` CLI to compare with.

DOP_BIN names the dop binary (an installed one, or build/bin/dop); without it the tests that compare the Python
package with the CLI are skipped."""
import os
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODELS = ROOT / "models" / "h100-xeon16"


@pytest.fixture(scope="session")
def dop_bin():
    path = os.environ.get("DOP_BIN") or shutil.which("dop")
    if not path:
        pytest.skip("DOP_BIN not set: no dop CLI to compare with")
    return path


def run_dop(dop_bin, *args):
    return subprocess.run([dop_bin, *map(str, args)], check=True, capture_output=True, text=True).stdout
