"""The documentation site builds with MkDocs in strict mode (no broken link, no page left out of the navigation, no
docstring mkdocstrings cannot read) and its API reference documents every public name of ``dpsurv_core`` and of each
sub-package (its ``__all__``), each with a docstring."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest

import dpsurv_core

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = sorted(m.name for m in pkgutil.iter_modules(dpsurv_core.__path__) if m.ispkg)


# public functions whose numpydoc Parameters / Returns sections are still to be written: remove a name once its
# docstring has them (none left)
SECTIONS_PENDING: dict[str, set[str]] = {}


def public_names(package: str) -> list[str]:
    """The names sub-package ``package`` of ``dpsurv_core`` declares public."""
    return list(importlib.import_module(f"dpsurv_core.{package}").__all__)


@pytest.mark.parametrize("package", PACKAGES)
def test_every_sub_package_names_its_public_api_each_name_documented(package):
    """``__all__`` names what a user imports from the sub-package: each name is there (imported on first use), is not
    one of its modules (which would shadow it), and a class or function has its own docstring; a function has
    numpydoc Parameters (when it takes any) and Returns sections."""
    mod = importlib.import_module(f"dpsurv_core.{package}")
    names = getattr(mod, "__all__", None)
    assert names, f"dpsurv_core.{package} has no __all__"
    assert len(set(names)) == len(names), f"dpsurv_core.{package}.__all__ repeats a name"
    modules = {m.name for m in pkgutil.iter_modules(mod.__path__)}
    for name in names:
        assert name not in modules, f"dpsurv_core.{package}.{name} is also a module of the package"
        obj = getattr(mod, name)
        assert not inspect.ismodule(obj), f"dpsurv_core.{package}.{name} is a module"
        if not (inspect.isclass(obj) or inspect.isfunction(obj)):
            continue  # a constant: documented by the docstring after its assignment (checked in the built reference)
        own = obj.__dict__.get("__doc__") if inspect.isclass(obj) else obj.__doc__
        assert own and not own.startswith(f"{obj.__name__}("), f"dpsurv_core.{package}.{name} has no docstring"
        if inspect.isfunction(obj) and name not in SECTIONS_PENDING.get(package, ()):
            sections = re.findall(r"^\s*(\w+)\n\s*-{3,}$", own, flags=re.M)
            takes = [p for p in inspect.signature(obj).parameters if p not in ("self", "cls")]
            assert "Parameters" in sections or not takes, f"dpsurv_core.{package}.{name} has no Parameters section"
            assert "Returns" in sections, f"dpsurv_core.{package}.{name} has no Returns section"
    assert sorted(dir(mod)) == sorted(set(dir(mod))) and set(names) <= set(dir(mod))


@pytest.mark.slow
@pytest.mark.parametrize("package", PACKAGES)
def test_a_sub_package_imports_alone_in_a_fresh_process(package):
    """No import cycle: each sub-package imports first in a fresh interpreter, and its names resolve there."""
    code = f"import dpsurv_core.{package} as p; [getattr(p, n) for n in p.__all__]"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.slow
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
    for package in PACKAGES:  # each sub-package's names, under the name a user imports them by (or their module's)
        for name in public_names(package):
            assert re.search(rf'id="dpsurv_core\.{package}(\.\w+)?\.{name}"', reference), \
                f"dpsurv_core.{package}.{name} is not in the API reference"
    # a class's constructor renders as the Parameters table of its docstring (test_class_parameters), every parameter
    # in its first table
    from tests.test_class_parameters import CLASSES, signature

    for cls in CLASSES:
        start = reference.find(f'id="dpsurv_core.{cls.__module__.split(".")[1]}.{cls.__name__}"')
        assert start >= 0, f"{cls.__name__} is not in the API reference"
        table = reference[start:reference.find("</table>", start)].split('<div class="doc doc-object doc-class">')[0]
        if signature(cls):
            assert "Parameters:" in table, f"{cls.__name__}'s reference has no Parameters table"
            for name in signature(cls):
                assert f"<code>{name}</code>" in table, f"{cls.__name__}'s Parameters table has no {name}"
    # every page in docs/ is in the navigation (strict mode refuses an omitted one) and none is empty
    for page in (ROOT / "docs").rglob("*.md"):
        html = site / page.relative_to(ROOT / "docs").with_suffix("") / "index.html"
        if page.name == "README.md":
            html = site / page.relative_to(ROOT / "docs").parent / "index.html"
        assert html.exists() and html.stat().st_size > 1000, page


def test_lazy_re_exports_refuse_a_name_without_home_and_one_a_module_would_shadow():
    from dpsurv_core._lazy import attach

    with pytest.raises(ImportError, match="differ"):
        attach("dpsurv_core.curves", ["LaplaceCounts", "Extra"], {"laplace_counts": ["LaplaceCounts"]})
    with pytest.raises(ImportError, match="shadowed"):
        attach("dpsurv_core.curves", ["counts"], {"counts": ["counts"]})
    getattr_, dir_ = attach("dpsurv_core.curves", ["count"], {"counts": ["count"]})
    assert getattr_("count").__module__ == "dpsurv_core.curves.counts" and "count" in dir_()
    with pytest.raises(AttributeError):
        getattr_("LaplaceCounts")
