"""The layers of dpsurv_core: the lower families (the data, privacy accounting, the analyses and their mechanisms) import
nothing of the higher ones (reports, audits, publication records, planning, the Python API, the command line), which
read records of every family. Every import counts, a lazy one inside a function too (the parse sees it), and a
``TYPE_CHECKING`` import as well. The exceptions left are listed below, each with its reason; a new upward import, or an
exception that is gone, fails here."""

from __future__ import annotations

import ast
from pathlib import Path

import dpsurv_core

PACKAGE = Path(dpsurv_core.__file__).parent
LOWER = {"data", "privacy", "curves", "weibull", "regression", "disclosure", "engines"}
HIGHER = {"report", "audit", "publication", "planning", "api", "cli"}

# (importing module, imported module): why it stays
EXCEPTIONS = {
    ("dpsurv_core.privacy.release", "dpsurv_core.publication"):
        "the release protocol (Plan.publication, the ledger's record, enforce on the declared disclosures) is built "
        "on the publication record: Publication, publish and enforce are its core, not a helper to move down. "
        "publication's modules import nothing of dpsurv_core but errors (its readers registry names the families' "
        "readout modules, imported by name when a record is read); placing publication below privacy, or the "
        "protocol above it, is a decision of its own",
    ("dpsurv_core.curves.result", "dpsurv_core.publication"):
        "drawn() puts a release in the record's JSON normal form (publication.jsonable, lazily), so a release and its "
        "stored record read the same; jsonable is defined with the record it normalises and documented under "
        "dpsurv_core.publication, and privacy.release imports the package anyway (above)",
}


def upward_imports() -> set[tuple[str, str]]:
    """Every (module, imported dpsurv_core module) pair where a lower family's module imports a higher one."""
    found = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        if len(parts) < 2 or parts[0] not in LOWER:
            continue
        module = ".".join(("dpsurv_core", *parts)).removesuffix(".__init__")
        package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:  # relative: resolved against the module's package
                    base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                    target = f"{base}.{node.module}" if node.module else base
                else:
                    target = node.module or ""
                # ``from dpsurv_core import report`` names the sub-package in the alias
                names = [f"{target}.{alias.name}" for alias in node.names] if target == "dpsurv_core" else [target]
            else:
                continue
            for name in names:
                words = name.split(".")
                if words[0] == "dpsurv_core" and len(words) > 1 and words[1] in HIGHER:
                    found.add((module, name))
    return found


def test_the_scan_sees_an_upward_import_lazy_or_not():
    """The parse finds an import inside a function body as well as at the top."""
    source = "def f():\n    from dpsurv_core.report.text import plain_label\n"
    nodes = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ImportFrom)]
    assert [n.module for n in nodes] == ["dpsurv_core.report.text"]


def test_lower_families_import_nothing_of_the_higher_ones():
    found = upward_imports()
    new = sorted(found - EXCEPTIONS.keys())
    assert not new, "a lower family imports a higher one (move the function down, or list it with its reason):\n" + \
        "\n".join(f"  {a} imports {b}" for a, b in new)
    gone = sorted(EXCEPTIONS.keys() - found)
    assert not gone, f"listed exceptions no longer found, drop them from EXCEPTIONS: {gone}"


def test_the_families_are_all_named():
    """Every sub-package is a lower or a higher family, so a new one is placed on purpose."""
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert packages == LOWER | HIGHER, packages ^ (LOWER | HIGHER)


def test_the_core_imports_neither_the_app_nor_streamlit():
    """dpsurv_core is the library and the command line: the app (dpsurv_app) sits above it and Streamlit is the app's
    extra, so no core module imports either, lazily or not."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            else:
                continue
            found += [f"{path.relative_to(PACKAGE)}: {n}" for n in names
                      if n.split(".")[0] in {"dpsurv_app", "streamlit"}]
    assert not found, found
