"""Peak memory of reading a CSV upload through ``read_table(bytes, filename)`` (not part of the test suite).

    .venv/bin/python -m benchmarks.read_memory [--mb 200] [--crlf]

Writes a synthetic cohort CSV of about ``--mb`` megabytes (time, status, age, sex, group) to a temporary file,
then, in a fresh child process with the caps lifted, reads its bytes (as Streamlit's ``UploadedFile.getvalue()`` hands them over) and
parses them with :func:`dpsurv_core.data.io.read_table`. Reports the child's peak resident memory
(``ru_maxrss``), the baseline after imports and the bytes alone, and the frame's size.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

CHILD = r"""
import resource, sys, time
import pandas as pd
from dpsurv_core.data.io import read_table
def peak():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
base = peak()
raw = open(sys.argv[1], "rb").read()
with_bytes = peak()
t0 = time.perf_counter()
df, warnings = read_table(raw, "upload.csv")
seconds = time.perf_counter() - t0
print(f"{len(raw) / 2**20:.0f} MB CSV, {len(df):,} rows: peak RSS {peak():.0f} MB (after imports {base:.0f} MB, "
      f"with the bytes {with_bytes:.0f} MB; frame {df.memory_usage(deep=True).sum() / 2**20:.0f} MB; {seconds:.1f} s)")
"""


def write_csv(path: Path, megabytes: float, crlf: bool) -> None:
    rng = np.random.default_rng(0)
    end = "\r\n" if crlf else "\n"
    block = 200_000
    with path.open("w", newline="") as fh:
        fh.write(f"time,status,age,sex,group{end}")
        while fh.tell() < megabytes * 2**20:
            t = rng.exponential(400, block).round(1)
            d = rng.integers(0, 2, block)
            a = rng.integers(30, 90, block)
            s = rng.choice(["F", "M"], block)
            g = rng.choice(["arm A", "arm B", "arm C"], block)
            pd.DataFrame({"time": t, "status": d, "age": a, "sex": s, "group": g}).to_csv(
                fh, header=False, index=False, lineterminator=end)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mb", type=float, default=200.0, help="size of the CSV in megabytes (default 200)")
    p.add_argument("--crlf", action="store_true", help="Windows line ends")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "upload.csv"
        write_csv(path, args.mb, args.crlf)
        # lift the caps for the measurement: a 200 MB file of narrow rows is past the default row cap
        env = {**os.environ, "DPSURV_MAX_UPLOAD_MB": str(int(args.mb) + 50), "DPSURV_MAX_ROWS": "1000000000"}
        subprocess.run([sys.executable, "-c", CHILD, str(path)], check=True, env=env,
                       cwd=Path(__file__).resolve().parents[1])


if __name__ == "__main__":
    main()
