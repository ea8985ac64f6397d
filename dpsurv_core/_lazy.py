"""Lazy re-exports for the sub-packages (PEP 562, as SciPy and scikit-image load theirs: SPEC 1).

A sub-package names its public API in ``__all__`` and says which of its modules defines each name; the module is
imported when the name is first used (``from dpsurv_core.curves import LaplaceCounts``), not when the package is.
Importing ``dpsurv_core.privacy.ledger`` therefore does not import the rest of ``privacy`` (the command line's
start-up time stays as it was), and a package's ``__init__`` adds no import cycle between sub-packages. Type checkers
and the API reference read the names from the ``if TYPE_CHECKING:`` imports beside ``__all__``.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any


def attach(package: str, public: Iterable[str], homes: Mapping[str, Iterable[str]]
           ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``, which re-export each name of ``homes`` from its module.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    public : iterable of str
        The package's ``__all__``: it must name exactly the names of ``homes``.
    homes : mapping of str to iterable of str
        Module name (relative to ``package``) to the public names defined in it.

    Returns
    -------
    tuple of callable
        ``(__getattr__, __dir__)`` for the package's namespace.

    Raises
    ------
    ImportError
        When ``public`` and ``homes`` disagree, or a name is also one of the package's modules (the module would
        shadow it once imported).

    References
    ----------
    .. [1] PEP 562, Module ``__getattr__`` and ``__dir__``.
    .. [2] Scientific Python SPEC 1, Lazy loading of submodules and functions.
    """
    home = {name: module for module, names in homes.items() for name in names}
    if set(home) != set(public) or len(home) != sum(len(list(n)) for n in homes.values()):
        raise ImportError(f"{package}: __all__ and the re-exported names differ: "
                          f"{sorted(set(home) ^ set(public))}")
    if clash := sorted(set(home) & set(homes)):
        raise ImportError(f"{package}: {clash} would be shadowed by the module of the same name.")

    def __getattr__(name: str) -> Any:
        module = home.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        setattr(sys.modules[package], name, value)  # found directly the next time
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(home))

    return __getattr__, __dir__
