"""Rewrite tests/slow_tests.txt from a run's ``--durations=0`` output: the tests that make test-fast leaves out.

    python -m pytest -n 2 --dist loadfile --durations=0 > /tmp/durations.txt
    python -m tests.slow_list [--seconds S] [--add] /tmp/durations.txt [more durations files]

A test whose setup, call and teardown took ``S`` seconds (default 0.2) or more in any of the runs is listed;
``--add`` keeps the tests already listed (for a run of make test-fast's tests only, which skips them);
tests/conftest.py marks the listed tests ``slow``. The list only moves tests out of make test-fast: make test runs every test either way.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

LIST = Path(__file__).with_name("slow_tests.txt")
LINE = re.compile(r"\s*([\d.]+)s (?:setup|call|teardown)\s+(tests/\S+::.+?)\s*$")  # parameter ids may hold spaces
HEADER = """\
# Tests that make test-fast leaves out (tests/conftest.py marks them slow); make test runs them all.
# Measured with `pytest -n 2 --dist loadfile --durations=0` on the 2-core machine: setup + call + teardown
# >= {seconds} s (make test-fast, 45 s at most, is what is left). Regenerate with `python -m tests.slow_list DURATIONS...`.
"""


def main(argv: list[str]) -> int:
    seconds = 0.2
    add = "--add" in argv
    argv = [a for a in argv if a != "--add"]
    if argv[:1] == ["--seconds"]:
        seconds, argv = float(argv[1]), argv[2:]
    spent: dict[str, float] = {}
    for path in argv:
        run: Counter[str] = Counter()
        for line in Path(path).read_text().splitlines():
            m = LINE.match(line)
            if m:
                run[m.group(2)] += float(m.group(1))
        for nodeid, t in run.items():
            spent[nodeid] = max(spent.get(nodeid, 0.0), t)
    listed = {line.strip() for line in LIST.read_text().splitlines() if line.strip() and not line.startswith("#")}
    slow = sorted({nodeid for nodeid, t in spent.items() if t >= seconds} | (listed if add else set()))
    LIST.write_text(HEADER.format(seconds=seconds) + "".join(f"{nodeid}\n" for nodeid in slow))
    print(f"{len(slow)} tests listed in {LIST}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
