"""A user's install: the wheel, in a fresh virtual environment, outside the checkout."""

from __future__ import annotations

import subprocess
import sys
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
GOLDEN = REPO / "tests" / "golden" / "recordings" / "xid79_one_of_sixteen.jsonl"

pytestmark = pytest.mark.slow


def run(*command: str | Path, cwd: Path) -> str:
    done = subprocess.run([str(c) for c in command], cwd=cwd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{command}: {done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def test_the_wheel_installed_outside_the_checkout_finds_its_rules_and_backtests_a_golden(tmp_path):
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", tmp_path / "dist", REPO, cwd=tmp_path)
    [wheel] = (tmp_path / "dist").glob("faultstream-*.whl")
    venv.create(tmp_path / "venv", with_pip=True)
    bin_dir = tmp_path / "venv" / "bin"
    run(bin_dir / "python", "-m", "pip", "install", "-q", "--disable-pip-version-check", wheel, cwd=tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    checked = run(bin_dir / "faultstream", "rules", "check", cwd=elsewhere)
    assert " 0 failed" in checked and "site-packages" not in checked
    verdicts = run(bin_dir / "faultstream", "backtest", "-i", GOLDEN, "--format", "table", cwd=elsewhere)
    assert "Fail Hardware" in verdicts
