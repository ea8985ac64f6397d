"""``python -m dpsurv_core`` and the installed ``dpsurv`` command: the same command line (:mod:`dpsurv_core.cli`)."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """Run one command of the command line on ``argv`` (``sys.argv[1:]`` when None) and return its exit status. A
    release's data file is scanned in the background (:mod:`dpsurv_core.privacy.fingerprint_prefetch`) from before the
    command line's modules are imported, so the scan and the imports overlap."""
    from dpsurv_core.privacy.fingerprint_prefetch import start

    start(sys.argv[1:] if argv is None else argv)
    from dpsurv_core.cli import main as cli_main

    return cli_main(argv)


if __name__ == "__main__":
    sys.exit(main())
