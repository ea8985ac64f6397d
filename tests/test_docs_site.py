"""The documentation site builds with MkDocs in strict mode (no broken link, no page left out of the navigation, no
docstring mkdocstrings cannot read) and its API reference documents every public name of ``dpsurv_core``."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def test_the_docs_site_builds_strict_and_documents_every_public_name(tmp_path):
    pytest.importorskip("mkdocstrings")
    site = tmp_path / "site"
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600, env={"NO_MKDOCS_2_WARNING": "1",
                                                                            "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr[-3000:]
    reference = (site / "reference" / "index.html").read_text()
    import dpsurv_core

    public = [n for n in dpsurv_core.__all__ if not n.startswith("_")]
    assert public, "dpsurv_core names no public API"
    for name in public:
        assert re.search(rf'id="dpsurv_core\.api\.\w+\.{name}"', reference), f"{name} is not in the API reference"
        assert getattr(dpsurv_core, name).__doc__, f"{name} has no docstring"
    # every page in docs/ is in the navigation (strict mode refuses an omitted one) and none is empty
    for page in (ROOT / "docs").rglob("*.md"):
        html = site / page.relative_to(ROOT / "docs").with_suffix("") / "index.html"
        if page.name == "README.md":
            html = site / page.relative_to(ROOT / "docs").parent / "index.html"
        assert html.exists() and html.stat().st_size > 1000, page
