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
With ``--pages``, instead: for every page (1 to 8), its first view on the bundled lung data in a fresh browser
session opened at the page's address, and one redraw on flchain after a change of the page's first slider (else its
first number input, else its first checkbox); a run counts as finished when the server has sent nothing for 0.8 s and
the status widget no longer says Running, and the time is that of its last message (targets: 3 s for a first view, 1 s for a redraw).
The Planning page simulates only when asked: its redraw is a change of a target's value (the first target's half-width,
in the targets box) after "Simulate and plan" has run and the page has filled in its kept simulations; the time of
that first plan (simulation included) is reported as its own line.
Results of ``--pages`` go to benchmarks/results/app_timing_pages.json; docs/app-timing.md quotes a run.
``--page N`` measures page N alone (first view on a freshly started app, then its redraw), results in
benchmarks/results/app_timing_pageN.json.
Run: .venv/bin/python -m benchmarks app [--repeats 3] [--pages | --page N]   (or python benchmarks/app_timing.py)
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
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "dpsurv_app" / "app.py"), "--server.headless", "true",
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
    """Seconds from the click that confirms a release (the Release button matching ``button`` opens the confirmation)
    until the page names the new record."""
    pg.get_by_role("button", name=button).first.click()
    confirm = pg.get_by_role("button", name=re.compile(r"^Confirm: release")).first
    confirm.wait_for()
    t0 = time.perf_counter()
    confirm.click()
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


# ---------------------------------------------------------------- every page: first view and one redraw
PAGE_TITLES = [path.stem.split("_", 1)[1].replace("_", " ") for path in sorted((ROOT / "dpsurv_app" / "pages").glob("[0-9]*.py"))]
QUIET_S = 0.8  # a run is over when no message came from the server for this long and the status says not running
PAGE_TARGETS = {"first view (lung)": 3.0, "redraw (flchain)": 1.0}


class Frames:
    """The websocket messages from the server, read as Streamlit's own ``ForwardMsg`` protobufs: a page has finished
    drawing when the session status says no script is running (``session_status_changed``, and ``script_finished``
    other than "finished early for a rerun"), the status widget does not say Running, and no message has come for
    :data:`QUIET_S`. The time is that of the last message.

    Reading the messages matters on a freshly started server: while it imports a page's modules it may send nothing
    for seconds, before Streamlit's status widget shows Running, and a quiet spell alone then read as finished (page 8
    opened on a fresh server counted 2.2 s that way where its last message came at 6.2 s)."""

    def __init__(self, pg) -> None:
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        self._msg = ForwardMsg
        self._done = {ForwardMsg.FINISHED_SUCCESSFULLY, ForwardMsg.FINISHED_WITH_COMPILE_ERROR,
                      ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY}
        self.pg, self.last, self.count = pg, time.perf_counter(), 0
        self.script_running = False
        pg.on("websocket", lambda ws: ws.on("framereceived", self._on))

    def _on(self, payload) -> None:
        now = time.perf_counter()
        self.last, self.count = now, self.count + 1
        if not isinstance(payload, (bytes, bytearray)):
            return
        msg = self._msg()
        try:
            msg.ParseFromString(bytes(payload))
        except Exception:  # noqa: BLE001 - not a ForwardMsg: counts as a message, says nothing about the run
            return
        kind = msg.WhichOneof("type")
        if kind == "script_finished" and msg.script_finished in self._done:
            self.script_running = False
        elif kind == "session_status_changed":
            self.script_running = msg.session_status_changed.script_is_running

    def _running(self) -> bool:
        return self.script_running or bool(self.pg.evaluate(
            "() => { const w = document.querySelector('[data-testid=\"stStatusWidget\"]');"
            " return !!w && w.innerText.includes('Running'); }"))

    def settled_after(self, t0: float, count0: int, timeout: float = 180.0) -> float:
        """Seconds from ``t0`` to the last message of the run that began after ``t0``."""
        end = time.perf_counter() + timeout
        while time.perf_counter() < end:
            self.pg.wait_for_timeout(50)
            if self.count > count0 and time.perf_counter() - self.last > QUIET_S and not self._running():
                return self.last - t0
        raise TimeoutError(f"the page did not finish within {timeout:.0f} s ({self.count - count0} messages since the "
                           f"change, the last {time.perf_counter() - self.last:.1f} s ago, running: {self._running()})")


def _sidebar_link(pg, title: str):
    return pg.locator("[data-testid='stSidebarNav']").get_by_role("link", name=title, exact=True)


def _redraw_widget(pg, frames: Frames, slider: bool = True) -> tuple[float, str]:
    """Change the page's first slider (left arrow), else its first number input (up arrow, Enter), else its first
    toggle or checkbox; seconds until the rerun has finished drawing, and which widget was changed. ``slider``: the
    page has one (waited for: a page still drawing would otherwise be read as having none, and a number input
    already at its maximum, such as the RMST time, would not rerun at all)."""
    main = pg.locator(MAIN)
    sliders = main.get_by_role("slider")
    if slider:
        sliders.first.wait_for(timeout=60_000)
    numbers = main.locator("input[type='number']")
    checks = main.get_by_role("checkbox")
    count0 = frames.count
    if sliders.count():
        sliders.first.focus()
        t0 = time.perf_counter()
        sliders.first.press("ArrowLeft")
        what = "first slider"
    elif numbers.count():
        numbers.first.focus()
        numbers.first.press("ArrowUp")
        t0 = time.perf_counter()
        numbers.first.press("Enter")
        what = "first number input"
    elif checks.count():
        t0 = time.perf_counter()
        checks.first.click(force=True)
        what = "first checkbox"
    else:
        return float("nan"), "no widget"
    return frames.settled_after(t0, count0), what


PLANNING = "Planning"
NO_SLIDER = ("Data", "Ledger and report")  # their redraw steps their first number input
PLANNING_TARGETS = "Targets, one per line"


def _planning_redraw(pg, frames: Frames) -> tuple[float, float, str]:
    """The Planning page: press "Simulate and plan" and wait for the plan and the kept simulations to be filled in
    (seconds), then change the first target's value (its last number, e.g. survival:365:0.08 to 0.07) and submit it;
    (seconds of the first plan, seconds of the redraw after the target change, what was changed)."""
    main = pg.locator(MAIN)
    count0 = frames.count
    t0 = time.perf_counter()
    main.get_by_role("button", name="Simulate and plan").click()
    # the end of the filling-in (the sentence that replaces its progress bar): a quiet spell alone can come in the
    # middle of a simulation
    main.get_by_text(re.compile("^Kept for quick changes")).wait_for(timeout=300_000)
    planned = frames.settled_after(t0, count0)
    box = main.get_by_role("textbox", name=PLANNING_TARGETS, exact=True)
    lines = box.input_value().splitlines()
    head, _, value = lines[0].rpartition(":")
    lines[0] = f"{head}:{float(value) * 0.875:g}"
    box.fill("\n".join(lines))
    count0 = frames.count
    t0 = time.perf_counter()
    box.press("Control+Enter")
    main.get_by_text(re.compile("^Read from the simulations kept")).wait_for()
    return planned, frames.settled_after(t0, count0), f"target {lines[0]}"


def every_page(pg_factory, url: str, only: int | None = None) -> dict[str, float]:
    """Per page: the first view on lung in a fresh browser session opened at the page's address (server up, its
    caches warm or cold as the order leaves them), then, in a session on flchain, one redraw after a widget change.
    ``only`` (1 to 8) measures that page alone, on a server that has shown no page yet (its imports cold)."""
    out: dict[str, float] = {}
    pages = [(i, t) for i, t in enumerate(PAGE_TITLES) if only is None or i + 1 == only]
    for i, title in pages:
        pg = pg_factory()
        frames = Frames(pg)
        path = "" if i == 0 else title.replace(" ", "_")
        t0 = time.perf_counter()
        pg.goto(f"{url}/{path}")
        out[f"page {i + 1} {title}: first view (lung)"] = frames.settled_after(t0, 0)
        print(f"    page {i + 1} {title}: first view {out[f'page {i + 1} {title}: first view (lung)']:.2f} s",
              file=sys.stderr, flush=True)
        pg.context.close()
    for i, title in pages:
        pg = pg_factory()
        frames = Frames(pg)
        pg.goto(url)
        frames.settled_after(time.perf_counter(), 0)
        _choose(pg, "Bundled data set", "flchain: Serum free light chain (Olmsted County)")
        pg.get_by_text("In use: flchain").wait_for(timeout=60_000)
        frames.settled_after(time.perf_counter(), frames.count - 1)
        if i:
            c0 = frames.count
            _sidebar_link(pg, title).click()
            frames.settled_after(time.perf_counter(), c0)
        if title == PLANNING:
            planned, seconds, what = _planning_redraw(pg, frames)
            out[f"page {i + 1} {title}: simulate and plan, once per declaration"] = planned
        else:
            try:
                seconds, what = _redraw_widget(pg, frames, slider=title not in NO_SLIDER)
            except TimeoutError as exc:  # one page's failure is reported, the others are still measured
                shot = Path(tempfile.gettempdir()) / f"dpsurv_timing_page{i + 1}.png"
                pg.screenshot(path=str(shot), full_page=True)
                print(f"    page {i + 1} {title}: redraw failed: {exc} (screenshot {shot})", file=sys.stderr,
                      flush=True)
                seconds, what = float("nan"), "failed"
        out[f"page {i + 1} {title}: redraw (flchain, {what})"] = seconds
        print(f"    page {i + 1} {title}: redraw ({what}) {seconds:.2f} s", file=sys.stderr, flush=True)
        pg.context.close()
    return out


FLOWS: list[Callable[..., dict[str, float]]] = [curves_lung, curves_flchain, tradeoff_page, regression_page]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3, help="rounds, each on a freshly started app")
    ap.add_argument("--pages", action="store_true",
                    help="only the per-page table: first view of pages 1-8 on lung, one redraw on flchain")
    ap.add_argument("--page", type=int, metavar="N", choices=range(1, len(PAGE_TITLES) + 1),
                    help="with --pages: only page N (its first view on a freshly started app, so the modules it "
                         "imports are loaded cold, then its redraw on flchain)")
    args = ap.parse_args(argv)
    if args.page is not None:
        args.pages = True
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
                    if args.pages:
                        def factory():
                            ctx = browser.new_context(viewport={"width": 1500, "height": 2300})
                            page = ctx.new_page()
                            page.set_default_timeout(60_000)
                            return page

                        print(f"  round {i + 1}/{args.repeats}: " + (f"page {args.page}" if args.page else "every page"),
                              file=sys.stderr)
                        for key, seconds in every_page(factory, url, args.page).items():
                            measured.setdefault(key, []).append(seconds)
                        continue
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
    def reference(name: str) -> str:
        if args.pages:
            target = next((v for k, v in PAGE_TARGETS.items() if k.split(" (")[0] in name), None)
            return "" if target is None else f"target <= {target:g} s"
        return TARGETS.get(name, "")

    rows = [{"name": k, "best_s": min(v), "median_s": statistics.median(v), "runs": v, "reference": reference(k)}
            for k, v in measured.items()]
    RESULTS.mkdir(parents=True, exist_ok=True)
    name = (f"app_timing_page{args.page}.json" if args.page else "app_timing_pages.json") if args.pages \
        else "app_timing.json"
    (RESULTS / name).write_text(json.dumps(rows, indent=2))
    width = max(24, *(len(r["name"]) for r in rows))
    print(f"\n{'measure':<{width}} {'best':>8} {'median':>8}  reference")
    for r in rows:
        print(f"{r['name']:<{width}} {r['best_s']:7.2f}s {r['median_s']:7.2f}s  {r['reference']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
