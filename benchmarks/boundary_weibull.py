"""Can a published Weibull record tell lung from lung without its last subject?

The attack of the publication-boundary review: an lsp-tll release stores noise-aware intervals. If they were
computed from the cohort's exact size, recomputing them from the stored released estimates for each candidate n
reproduces them only at the true n, which tells the two cohorts apart whatever the noise. The attacker here
recomputes each record's derived part for n = 228 (lung) and n = 227 (lung without its last subject) and guesses
the cohort whose n reproduces it (D when both or neither do).

Two settings, each with R real releases on each cohort (fresh release noise through the release protocol, charged
to a throw-away ledger):

* declared: ``--n-public 228`` on both (the published size, a public number): every record's intervals are a
  function of its released estimates and declared values, so the attack is a coin toss;
* accepted: ``--accept-disclosure n`` (n read off each cohort, published as read, the record not DP as run): the
  pre-boundary behaviour, which the attack separates perfectly.

Prints TPR, FPR and the empirical epsilon lower bound (95% Clopper-Pearson) beside the charge.
Run: ``python -m benchmarks.boundary_weibull [R]`` (default 60 releases per cohort and setting).
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from dpsurv_core.audit.attack import measure, point_epsilon
from dpsurv_core.cli import main
from dpsurv_core.data import datasets
from dpsurv_core.publication import derive

EPSILON = 1.0
COMMON = ["--time", "time", "--event", "status", "--mechanism", "lsp-tll", "--epsilon", str(EPSILON),
          "--horizon", "1100", "--censoring", "0.3"]
SETTINGS = {"declared": ["--n-public", "228"], "accepted": ["--accept-disclosure", "n"]}


def release(path: Path, ledger: Path, extra: list[str]) -> dict:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["weibull", "--data", str(path), *COMMON, *extra, "--ledger", str(ledger), "--json"])
    if code != 0:
        raise SystemExit(f"release failed (exit {code})")
    return json.loads(out.getvalue())["publishable"]


def guess(record: dict) -> int:
    """1 (lung) when n = 228 reproduces the record's derived part and n = 227 does not, 0 when only 227 does; 1
    otherwise (no information)."""
    def reproduces(n: int) -> bool:
        inputs = dict(record["public_inputs"], n=n)
        return derive("weibull", record["released"], inputs) == record["derived"]

    full, short = reproduces(228), reproduces(227)
    return 0 if (short and not full) else 1


def main_bench(runs: int = 60) -> None:
    lung = datasets.load("lung")
    last = int(np.argmax(lung["time"].to_numpy()))
    with tempfile.TemporaryDirectory() as tmp:
        d, d_minus = Path(tmp) / "lung.csv", Path(tmp) / "lung-minus-one.csv"
        lung.to_csv(d, index=False)
        lung.drop(index=last).to_csv(d_minus, index=False)
        print(f"lsp-tll at epsilon {EPSILON:g}, {runs} real releases on lung (n 228) and on lung without its last "
              f"subject (n 227) per setting")
        for name, extra in SETTINGS.items():
            start = time.perf_counter()
            ledger = Path(tmp) / f"{name}.sqlite3"
            s_in = np.array([guess(release(d, ledger, extra)) for _ in range(runs)], float)
            s_out = np.array([guess(release(d_minus, ledger, extra)) for _ in range(runs)], float)
            att = measure(s_in, s_out, 0.5)
            print(f"  {name:9s} guessed lung on lung {int(s_in.sum())}/{runs}, on lung minus one "
                  f"{int(s_out.sum())}/{runs}: TPR {att.tpr:.2f}, FPR {att.fpr:.2f}, point epsilon "
                  f"{point_epsilon(att.tpr, att.fpr):.2f}, empirical epsilon >= {att.epsilon_lower:.2f} (95%), "
                  f"charged {EPSILON:g}; {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main_bench(int(sys.argv[1]) if len(sys.argv) > 1 else 60)
