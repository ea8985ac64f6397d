"""Engines on registries that outgrow memory: private KM and log-rank from 10^6 to 10^8 rows.

``python -m benchmarks.engines [--rows 1e6,1e7] [--dir DIR] [--spark] [--release] [--repeat N] [--keep]``

1. :func:`generate` writes a synthetic cohort of any size as Parquet in chunks (bounded memory): integer
   days of follow-up up to 3650, two groups (hazard ratio 1.3), about 30% censored.
2. Each job runs in its own process; the whole-process wall time, the child's CPU time (user and system, every
   thread: on a shared machine the wall time follows it) and its peak resident memory (``os.wait4``, the whole process to its exit) are
   measured, with the load average printed before and after:
   - ``bare``: a bare DuckDB query computing the same counts (group x event/censoring x 20 bins) on the file, in a
     script that ends as the command line does (its connection closed, output flushed, no interpreter teardown:
     :func:`dpsurv_core.__main__.exit_now`), so that the ratios compare the work and not the ending;
   - ``km``: ``python -m dpsurv_core km --engine duckdb`` (laplace-counts, two groups, 20-bin public grid,
     epsilon 1, seeded simulation: the compute path of a release without the ledger);
   - ``logrank``: the same with the calibrated log-rank test (999 null draws);
   - ``km-spark`` / ``logrank-spark`` with ``--spark``: the same jobs on Spark local mode;
   - with ``--release``: ``release``, a real charged ``km`` release (no ``--seed``: the content fingerprint computed by
     DuckDB with an empty fingerprint cache, the ledger's check-and-charge, release noise), ``release-cached``, the
     same release again (the fingerprint read from the per-file cache), and ``fingerprint``, the fingerprint alone;
   - ``bare-weibull``: a bare DuckDB query of the Weibull statistics (distinct times capped at the horizon with
     their counts and events) and ``weibull``: ``python -m dpsurv_core weibull --mechanism lsp-tll --engine duckdb``
     (horizon 3650, epsilon 1, seeded simulation; ratio to ``bare-weibull``); ``weibull-spark`` with ``--spark``.
3. The table (ratios to ``bare``; seconds are for this machine only) is printed as Markdown for docs/engines.md.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
GRID = "0:3650:20"
CHUNK = 5_000_000


def generate(path: str | Path, rows: int, seed: int = 14, chunk: int = CHUNK) -> Path:
    """A cohort of ``rows`` subjects as Parquet, written ``chunk`` rows at a time (memory bounded by the chunk)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    rng = np.random.default_rng(seed)
    schema = pa.schema([("time", pa.int32()), ("status", pa.int8()), ("group", pa.string())])
    labels = pa.array(["A", "B"])
    with pq.ParquetWriter(path, schema, compression="zstd") as writer:
        done = 0
        while done < rows:
            n = min(chunk, rows - done)
            g = rng.integers(0, 2, n)
            event = rng.exponential(1500.0 / np.where(g == 1, 1.3, 1.0))
            censor = rng.uniform(0, 6000, n)
            t = np.ceil(np.minimum(np.minimum(event, censor), 3650.0)).astype(np.int32)
            d = (event <= np.minimum(censor, 3650.0)).astype(np.int8)
            table = pa.table({"time": t, "status": d, "group": labels.take(pa.array(g))}, schema=schema)
            writer.write_table(table, row_group_size=1_000_000)
            done += n
    return path


BARE = """
import os, sys, duckdb
con = duckdb.connect()
rows = con.execute('''
SELECT "group", status, LEAST(GREATEST(CASE WHEN status = 1 THEN CAST(CEIL(time / 182.5) AS INTEGER)
       ELSE CAST(FLOOR(time / 182.5) AS INTEGER) + 1 END, 1), 21) AS bin, COUNT(*)
FROM read_parquet(?) GROUP BY ALL''', [sys.argv[1]]).fetchall()
print(len(rows))
con.close()
sys.stdout.flush()
os._exit(0)  # the command line's ending (dpsurv_core.__main__.exit_now): no interpreter teardown
"""

BARE_WEIBULL = """
import os, sys, duckdb
con = duckdb.connect()
rows = con.execute('''
SELECT LEAST(CAST(time AS DOUBLE), 3650.0) AS u, COUNT(*), SUM(status) FROM read_parquet(?) GROUP BY u ORDER BY u''',
                   [sys.argv[1]]).fetchall()
print(len(rows))
con.close()
sys.stdout.flush()
os._exit(0)  # the command line's ending (dpsurv_core.__main__.exit_now): no interpreter teardown
"""


def run_job(argv: list[str], env: dict[str, str], timeout: float = 3600.0) -> tuple[float, float, str, float]:
    """Wall seconds, peak RSS (MB), status and CPU seconds (user + system, every thread) of one child process, CPU and
    memory read from the operating system's accounting of the finished child (``os.wait4``: start-up and teardown
    included). The wall time runs until the child has exited and its output streams are closed, so a JVM that Spark
    started and that outlives the Python driver for a moment is waited for, as the old ``subprocess.run`` did; a job
    still running after ``timeout`` seconds is killed with its process group."""
    cmd = [sys.executable, *(argv if argv[0].endswith(".py") else ["-m", *argv])]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ROOT,
                            start_new_session=True)
    streams: dict[str, bytes] = {}
    readers = [threading.Thread(target=lambda name=name, f=f: streams.__setitem__(name, f.read()), daemon=True)
               for name, f in (("out", proc.stdout), ("err", proc.stderr))]
    for r in readers:
        r.start()
    timed_out = threading.Event()

    def kill() -> None:
        timed_out.set()
        os.killpg(proc.pid, signal.SIGKILL)

    killer = threading.Timer(timeout, kill)
    killer.start()
    try:
        _, status, usage = os.wait4(proc.pid, 0)
        for r in readers:
            r.join()
    except BaseException:  # Ctrl-C: the job is in a session of its own, so the terminal's signal did not reach it
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(proc.pid, 0)
        raise
    finally:
        killer.cancel()
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    stderr = streams.get("err", b"").decode(errors="replace")
    last = (stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
    if timed_out.is_set():
        last = f"killed after the {timeout:g} s timeout"
    return wall, usage.ru_maxrss / 1024, "ok" if proc.returncode == 0 else last[:200], usage.ru_utime + usage.ru_stime


FINGERPRINT = """
import sys
from dpsurv_core.privacy.fingerprint import fingerprint_file
print(fingerprint_file(sys.argv[1], refresh=True))
"""


def jobs(path: Path, spark: bool, release: bool = False) -> dict[str, list[str]]:
    common = ["--data", str(path), "--time", "time", "--event", "status", "--group", "group", "--grid", GRID,
              "--epsilon", "1", "--seed", "1", "--json"]
    bare = Path(tempfile.gettempdir()) / "dpsurv_bare_duckdb.py"
    bare.write_text(BARE)
    bare_w = Path(tempfile.gettempdir()) / "dpsurv_bare_weibull.py"
    bare_w.write_text(BARE_WEIBULL)
    weibull = ["dpsurv_core", "weibull", "--data", str(path), "--time", "time", "--event", "status", "--horizon", "3650",
               "--mechanism", "lsp-tll", "--epsilon", "1", "--seed", "1", "--json"]
    out = {"bare": [str(bare), str(path)],
           "km": ["dpsurv_core", "km", *common, "--engine", "duckdb"],
           "logrank": ["dpsurv_core", "logrank", *common, "--engine", "duckdb"]}
    if release:
        seed = common.index("--seed")
        real = [*common[:seed], *common[seed + 2:], "--cap", "1000000", "--categories", "group:A,B"]
        fp = Path(tempfile.gettempdir()) / "dpsurv_fingerprint_only.py"
        fp.write_text(FINGERPRINT)
        out["release"] = ["dpsurv_core", "km", *real, "--engine", "duckdb"]
        out["release-cached"] = out["release"]
        out["fingerprint"] = [str(fp), str(path)]
    if spark:
        out["km-spark"] = ["dpsurv_core", "km", *common, "--engine", "spark"]
        out["logrank-spark"] = ["dpsurv_core", "logrank", *common, "--engine", "spark"]
    out["bare-weibull"] = [str(bare_w), str(path)]
    out["weibull"] = [*weibull, "--engine", "duckdb"]
    if spark:
        out["weibull-spark"] = [*weibull, "--engine", "spark"]
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.engines")
    p.add_argument("--rows", default="1e6,1e7", help="comma-separated cohort sizes (1e8 needs about 1 GB of disk)")
    p.add_argument("--dir", default=None, help="where the Parquet files go (default a temporary folder)")
    p.add_argument("--spark", action="store_true", help="also time the Spark local-mode jobs")
    p.add_argument("--keep", action="store_true", help="keep the generated files")
    p.add_argument("--release", action="store_true",
                   help="also time real charged releases (cold and cached fingerprint) and the fingerprint alone")
    p.add_argument("--only", default=None, help="comma-separated jobs to run (e.g. bare-weibull,weibull)")
    p.add_argument("--repeat", type=int, default=1,
                   help="run the jobs this many rounds, interleaved, and report each job's median seconds and its "
                        "largest peak (a shared machine's load then shifts every job alike)")
    args = p.parse_args(argv)
    folder = Path(args.dir or tempfile.mkdtemp(prefix="dpsurv_engines_"))
    folder.mkdir(parents=True, exist_ok=True)
    cache = folder / "fingerprints.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DPSURV_LEDGER": str(folder / "ledger.sqlite3"),
           "DPSURV_FINGERPRINT_CACHE": str(cache)}
    print(f"<!-- load average {' '.join(f'{x:.1f}' for x in os.getloadavg())} at the start -->")
    print("| rows | job | seconds | ratio to bare DuckDB | CPU seconds | CPU ratio | peak memory (MB) | status |")
    print("|---:|---|---:|---:|---:|---:|---:|---|")
    for text in args.rows.split(","):
        rows = int(float(text))
        path = folder / f"cohort_{rows}.parquet"
        if not path.exists():
            t0 = time.perf_counter()
            # in a child process: Linux keeps a process's peak memory across fork and exec, so generating here would
            # become every job's peak
            subprocess.run([sys.executable, "-c", f"from benchmarks.engines import generate; generate({str(path)!r}, {rows})"],
                           check=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
            gen = time.perf_counter() - t0
            print(f"<!-- generated {rows:,} rows in {gen:.1f} s, {path.stat().st_size / 2**20:.0f} MB -->", flush=True)
        only = set(args.only.split(",")) if args.only else None
        todo = {n: c for n, c in jobs(path, args.spark, args.release).items() if only is None or n in only}
        runs: dict[str, list[tuple[float, float, str, float]]] = {n: [] for n in todo}
        for _ in range(max(args.repeat, 1)):
            for name, cmd in todo.items():
                if name == "release":
                    cache.unlink(missing_ok=True)  # a cold fingerprint: computed in full by DuckDB
                runs[name].append(run_job(cmd, env))
        times = {n: float(np.median([r[0] for r in rs])) for n, rs in runs.items()}
        cpus = {n: float(np.median([r[3] for r in rs])) for n, rs in runs.items()}
        for name, rs in runs.items():
            wall, peak = times[name], max(r[1] for r in rs)
            status = next((r[2] for r in rs if r[2] != "ok"), "ok")
            base = "bare-weibull" if "weibull" in name else "bare"
            ratio = wall / times.get(base, wall)
            cpu_ratio = cpus[name] / cpus[base] if cpus.get(base) else float("nan")
            print(f"| {rows:,} | {name} | {wall:.2f} | {ratio:.2f} | {cpus[name]:.2f} | {cpu_ratio:.2f} | {peak:.0f} | "
                  f"{status} |", flush=True)
        print(f"<!-- load average {' '.join(f'{x:.1f}' for x in os.getloadavg())} at the end -->", flush=True)
        if not args.keep:
            path.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
