"""Browser timings of the app: how long the pages take in Debian chromium (not run in CI).

The browser tests in tests/e2e check what the pages show; how fast they show it depends on the machine
and on what else runs on it, so the timings are measured here instead. The script starts the app
the way the tests do (streamlit headless on a free localhost port), drives it with Playwright through
Debian's chromium (/usr/bin/chromium, or $DPSURV_CHROMIUM) and prints, over ``--repeats``
rounds (each on a freshly started app with a throw-away ledger, one browser session per flow), the best
and the median of:

* ``curves_first_render``: open the app, go to Survival curves on lung, until the chart and the
  preview's number-at-risk row are drawn (the old browser test allowed 40 s for its whole flow);
* ``curves_redraw_lung`` and ``curves_redraw_flchain``: after pressing the left arrow on the epsilon
  slider (1 -> 0.75, a new preview), until the preview's number-at-risk row changes (target about 1 s,
  the old test failed above 2 s on flchain);
* ``curves_release``: from the click on "Release these curves" until the page names the new record;
* ``tradeoff_page``: from the click on Trade-off explorer until the simulation has finished and the
  chart is drawn (the old test allowed 30 s);
* ``regression_page``: open the app, go to Regression, until the coefficient table and the forest plot
  are drawn (the old test allowed 40 s); ``regression_release``: the first fit's Release button until
  the record is named.

The releases go to a throw-away ledger (``DPSURV_LEDGER`` points into a temporary folder).
Results go to benchmarks/results/app_timing.json as well.
Run: .venv/bin/python -m benchmarks app [--repeats 3]   (or python benchmarks/app_timing.py)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"

# the flags tests/conftest.py launches chromium with
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage"]
PREVIEW_ROW = "All patients, preview"
ROWS = "[data-testid='stTable'] tr"
MAIN = "[data-testid='stMain']"
TARGETS = {"curves_first_render": "the old browser test allowed 40 s for its whole flow",
           "curves_redraw_lung": "about 1 s", "curves_redraw_flchain": "about 1 s, at most 2 s",
           "curves_release": "", "tradeoff_page": "< 30 s", "regression_page": "< 40 s", "regression_release": ""}


def chromium_path() -> str | None:
    for cand in (os.environ.get("DPSURV_CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium")):
        if cand and Path(cand).exists():
            return cand
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def running_app() -> Iterator[str]:
    """The real app, headless on a free localhost port, as the tests start it; yields its URL."""
    port = _free_port()
    tmp = tempfile.TemporaryDirectory()
    # a throw-away ledger: the benchmark's releases must not reach (or exhaust) the user's ledger
    env = {**os.environ, "DPSURV_LEDGER": str(Path(tmp.name) / "ledger.sqlite3")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.headless", "true",
         "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
         "--server.fileWatcherType", "none"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 60
        while True:
            try:
                with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                if time.time() > deadline:
                    raise RuntimeError("the app did not answer its health check within 60 s: "
                                       + proc.stderr.read().decode()[-2000:]) from None
                time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        tmp.cleanup()


def wait_for_app(pg) -> None:
    """Wait until Streamlit has finished running the script (as tests/conftest.py does)."""
    pg.wait_for_selector("[data-testid='stApp']")
    pg.wait_for_function(
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')"
        " || !document.querySelector('[data-testid=\"stStatusWidget\"]').innerText.includes('Running')",
        timeout=60_000,
    )
    pg.wait_for_timeout(300)


def _row(pg, label: str) -> str:
    return pg.locator(ROWS, has_text=label).first.inner_text()


def _choose(pg, label: str, option: str) -> None:
    pg.get_by_role("combobox", name=label, exact=True).click()
    pg.get_by_role("option", name=option, exact=True).click()


def _released(pg, button: re.Pattern[str]) -> float:
    """Seconds from a click on the Release button matching ``button`` until the page names the new record."""
    t0 = time.perf_counter()
    pg.get_by_role("button", name=button).first.click()
    pg.get_by_text(re.compile(r"Released as record \d+")).first.wait_for(timeout=90_000)
    seconds = time.perf_counter() - t0
    wait_for_app(pg)
    return seconds


def _open_curves(pg, url: str, flchain: bool = False) -> float:
    """Open the app (flchain chosen first when asked) and the Survival curves page; seconds to a drawn page."""
    t0 = time.perf_counter()
    pg.goto(url)
    wait_for_app(pg)
    if flchain:
        _choose(pg, "Bundled data set", "flchain: Serum free light chain (Olmsted County)")
        pg.get_by_text("In use: flchain").wait_for()
        wait_for_app(pg)
        t0 = time.perf_counter()
    pg.get_by_role("link", name="Survival curves").click()
    pg.get_by_text("Number at risk").wait_for(timeout=60_000)
    pg.locator("[data-testid='stPlotlyChart']").first.wait_for()
    pg.locator(ROWS, has_text=PREVIEW_ROW).first.wait_for()
    seconds = time.perf_counter() - t0
    wait_for_app(pg)
    return seconds


def _redraw(pg) -> float:
    """Seconds from the epsilon change (1 -> 0.75) until the preview's number-at-risk row changes."""
    before = _row(pg, PREVIEW_ROW)
    slider = pg.locator(MAIN).get_by_role("slider").first
    slider.focus()
    t0 = time.perf_counter()
    slider.press("ArrowLeft")
    pg.wait_for_function(
        "([sel, row, old]) => { const r = [...document.querySelectorAll(sel)].find(e => e.innerText.includes(row));"
        " return r && r.innerText !== old; }", arg=[ROWS, PREVIEW_ROW, before], timeout=30_000, polling=20)
    seconds = time.perf_counter() - t0
    wait_for_app(pg)
    return seconds


def curves_lung(pg, url: str) -> dict[str, float]:
    first = _open_curves(pg, url)
    redraw = _redraw(pg)
    return {"curves_first_render": first, "curves_redraw_lung": redraw,
            "curves_release": _released(pg, re.compile(r"^Release these curves"))}


def curves_flchain(pg, url: str) -> dict[str, float]:
    _open_curves(pg, url, flchain=True)
    return {"curves_redraw_flchain": _redraw(pg)}


def tradeoff_page(pg, url: str) -> dict[str, float]:
    pg.goto(url)
    wait_for_app(pg)
    t0 = time.perf_counter()
    pg.locator("[data-testid='stSidebarNav']").get_by_text("Trade-off explorer").click()
    pg.get_by_role("heading", name="Survival curves: how far the private curve is from the real one").wait_for(
        timeout=60_000)
    wait_for_app(pg)
    pg.locator("[data-testid='stPlotlyChart']").first.locator(".main-svg").first.wait_for()
    return {"tradeoff_page": time.perf_counter() - t0}


def regression_page(pg, url: str) -> dict[str, float]:
    t0 = time.perf_counter()
    pg.goto(url)
    wait_for_app(pg)
    pg.get_by_role("link", name="Regression").click()
    pg.get_by_text("Coefficient table").wait_for(timeout=60_000)
    pg.locator(ROWS).first.wait_for()
    pg.get_by_text("Forest plot").wait_for(timeout=60_000)
    pg.locator("[data-testid='stPlotlyChart']").first.wait_for()
    seconds = time.perf_counter() - t0
    wait_for_app(pg)
    return {"regression_page": seconds, "regression_release": _released(pg, re.compile(r"^Release "))}


FLOWS: list[Callable[..., dict[str, float]]] = [curves_lung, curves_flchain, tradeoff_page, regression_page]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3, help="rounds, each on a freshly started app")
    args = ap.parse_args(argv)
    path = chromium_path()
    if path is None:
        print("Debian chromium is not installed (make chromium installs it): nothing measured.", file=sys.stderr)
        return 1
    from playwright.sync_api import sync_playwright

    measured: dict[str, list[float]] = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=path, args=CHROMIUM_FLAGS)
        try:
            # one app (and one fresh ledger) per round, so the rounds' releases never reach the budget cap
            for i in range(max(1, args.repeats)):
                with running_app() as url:
                    for flow in FLOWS:
                        ctx = browser.new_context(viewport={"width": 1500, "height": 2300})
                        pg = ctx.new_page()
                        pg.set_default_timeout(30_000)
                        try:
                            print(f"  round {i + 1}/{args.repeats}: {flow.__name__}", file=sys.stderr)
                            for key, seconds in flow(pg, url).items():
                                measured.setdefault(key, []).append(seconds)
                        finally:
                            ctx.close()
        finally:
            browser.close()
    rows = [{"name": k, "best_s": min(v), "median_s": statistics.median(v), "runs": v, "reference": TARGETS.get(k, "")}
            for k, v in measured.items()]
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "app_timing.json").write_text(json.dumps(rows, indent=2))
    print(f"\n{'measure':<24} {'best':>8} {'median':>8}  reference")
    for r in rows:
        print(f"{r['name']:<24} {r['best_s']:7.2f}s {r['median_s']:7.2f}s  {r['reference']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
