"""Retake the README's screenshots: every page of the app (1 to 8) on the bundled lung data, 1400 px wide, saved as
``docs/screenshots/<n>-<page>.png``.

    .venv/bin/python tools/screenshots.py [--out docs/screenshots] [--max-height 5000]

Starts the app headless on a free port with a throw-away ledger (nothing is released, the user's ledger is never
touched), drives Debian's chromium through Playwright with the browser tests' helpers (tests/e2e/helpers.py), waits
until each page has drawn (its table or chart, not a spinner, no "Simulating" bar left) and photographs the whole
page: the window is made as tall as the page's main block (up to ``--max-height`` pixels)."""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.conftest import CHROMIUM_FLAGS, chromium_path, launch_app, wait_for_app  # noqa: E402
from tests.e2e.helpers import MAIN, PAGES, no_exception, open_page  # noqa: E402

WIDTH = 1400


def _settle(pg, timeout: float = 180.0) -> None:
    """Wait until no progress bar says 'Simulating' and the script has stopped running."""
    deadline = time.time() + timeout
    while "Simulating" in pg.locator(MAIN).inner_text() and time.time() < deadline:
        pg.wait_for_timeout(1000)
    wait_for_app(pg)


def take(out: Path, max_height: int) -> list[Path]:
    """Photograph pages 1 to 8 on lung into ``out``; returns the files written."""
    from playwright.sync_api import sync_playwright

    browser_path = chromium_path()
    if browser_path is None:
        raise SystemExit("Screenshots need Debian's chromium (/usr/bin/chromium): install it with `make test` first.")
    out.mkdir(parents=True, exist_ok=True)
    written = []
    with tempfile.TemporaryDirectory() as tmp, launch_app(Path(tmp) / "ledger.sqlite3") as url, \
            sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=browser_path, args=CHROMIUM_FLAGS)
        pg = browser.new_page(viewport={"width": WIDTH, "height": 1000})
        pg.set_default_timeout(120_000)
        pg.goto(url)
        wait_for_app(pg)
        pg.get_by_text("In use: lung").wait_for()
        for name, stem in PAGES:
            pg.set_viewport_size({"width": WIDTH, "height": 1000})
            open_page(pg, name, timeout=180_000)
            _settle(pg)
            height = pg.evaluate("(sel) => document.querySelector(sel).scrollHeight", MAIN)
            pg.set_viewport_size({"width": WIDTH, "height": int(min(max(height, 1000), max_height))})
            pg.wait_for_timeout(1500)  # charts redraw at the new size
            _settle(pg)
            no_exception(pg, name)
            path = out / f"{stem}.png"
            pg.screenshot(path=str(path))
            written.append(path)
            print(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: {name}")
        browser.close()
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots", help="folder for the PNG files")
    parser.add_argument("--max-height", type=int, default=5000, help="tallest picture, in pixels")
    args = parser.parse_args(argv)
    take(args.out, args.max_height)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
