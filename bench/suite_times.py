"""Where the test suite's time goes: the test time (setup, call and teardown) of a pytest JUnit XML
report, summed by directory and by file, with the run's wall time beside it.

    .venv/bin/python -m pytest -q -p no:cacheprovider -n 2 --junitxml=/tmp/suite.xml
    .venv/bin/python bench/suite_times.py /tmp/suite.xml [--files 15]

With workers, the sum of the tests' times over the wall time is how many tests ran at once on
average; a directory's sum growing between a serial and a parallel run is the workers competing
for the cores.
"""

from __future__ import annotations

import argparse
import collections
import xml.etree.ElementTree as ET
from pathlib import Path


def times(report: Path) -> tuple[float, dict[str, float]]:
    """(the run's wall time, test time by file) of a JUnit XML report."""
    root = ET.parse(report).getroot()
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    assert suite is not None, f"{report}: no testsuite element"
    by_file: dict[str, float] = collections.Counter()
    for case in suite.iter("testcase"):
        # classname: tests.fleet.test_fleet_cli[.Class]; the file is the first three parts
        by_file["/".join(case.get("classname", "").split(".")[:3]) + ".py"] += float(case.get("time", 0))
    return float(suite.get("time", 0)), dict(by_file)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("reports", nargs="+", type=Path, help="pytest --junitxml files")
    parser.add_argument("--files", type=int, default=10, help="the longest files to list")
    args = parser.parse_args()
    for report in args.reports:
        wall, by_file = times(report)
        total = sum(by_file.values())
        by_dir: dict[str, float] = collections.Counter()
        for name, seconds in by_file.items():
            by_dir[name.rsplit("/", 1)[0]] += seconds
        print(f"{report}: wall {wall:.1f} s, tests {total:.1f} s, {total / wall:.2f} tests running on average")
        for name, seconds in sorted(by_dir.items(), key=lambda item: -item[1]):
            print(f"  {seconds:7.1f} s  {name}/")
        for name, seconds in sorted(by_file.items(), key=lambda item: -item[1])[:args.files]:
            print(f"  {seconds:7.1f} s  {name}")


if __name__ == "__main__":
    main()
