"""Characterization tests: the report's output as it is today, recorded before the upgrade.

They say nothing about whether the output is right, only that it has not changed; the upgrade
must keep every byte of it. report.golden.txt was written by `python -m app.report` on the seed.
"""

import subprocess
import sys
import warnings
from pathlib import Path

from app.report import SALES, render_report

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).with_name("report.golden.txt")


def test_report_is_unchanged():
    assert render_report() == GOLDEN.read_text(encoding="utf-8")


def test_command_line_output_is_unchanged():
    ran = subprocess.run(
        [sys.executable, "-m", "app.report"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == GOLDEN.read_text(encoding="utf-8")


def test_one_region_renders_the_same():
    assert render_report((("none", 0, 0.0, "-"),)) == (
        "Quarterly sales\n\n"
        "region | units | growth % | manager\n"
        "-------+-------+----------+--------\n"
        "none   | 0     | 0.0      | -\n\n"
        "total units     0\n"
        "best growth  none\n"
    )


def test_rows_are_sorted_by_units():
    lines = render_report().splitlines()[4:8]
    assert [line.split()[0] for line in lines] == ["west", "north", "south", "east"]
    assert len(SALES) == 4


def test_no_deprecation_warnings():
    # Not output, but part of "unchanged": a deprecated call would break at the next major release.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        render_report()
