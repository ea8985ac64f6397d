"""One specification per mechanism option: the command line's flags and the pages' widgets are both made from it.

A catalogue entry lists the options it takes with their defaults (``Entry.options``); :data:`OPTIONS` says, for each
option name, what kind of value it is, its bounds and its words. ``Option.parse`` is the command line's argparse type
and the bounds are the widget's, so a flag and a widget can never disagree on what is allowed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from dpsurv_core.errors import ParameterError


@dataclass(frozen=True)
class Option:
    """A mechanism option: ``kind`` is "float", "int" or "choice"; numbers lie in [low, high] (``high`` None: no upper
    bound on the command line, ``widget_high`` on a page); ``label`` names it on a page, ``help`` says what it does."""

    name: str
    kind: str
    label: str
    help: str
    low: float | None = None
    high: float | None = None
    step: float = 1.0
    widget_high: float | None = None
    choices: tuple[str, ...] = ()
    metavar: str | None = None
    group: str = ""

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def parse(self, text: str) -> Any:
        """The value of ``text`` (the command line's words), checked against the bounds."""
        if self.kind == "choice":
            if text not in self.choices:
                raise ParameterError(f"{self.flag} takes one of {', '.join(self.choices)}, got {text!r}")
            return text
        try:
            value: float = int(text) if self.kind == "int" else float(text)
        except ValueError:
            raise ParameterError(f"{self.flag} takes {'a whole number' if self.kind == 'int' else 'a number'}, got "
                                 f"{text!r}") from None
        if not math.isfinite(value) or (self.low is not None and value < self.low) or (
                self.high is not None and value > self.high):
            raise ParameterError(f"{self.flag} must be {self.bounds_words()}, got {text}")
        return value

    def bounds_words(self) -> str:
        low = "" if self.low is None else f"{self.low:g}"
        if self.high is None:
            return f"at least {low}" if low else "a finite number"
        return f"between {low} and {self.high:g}"

    def widget(self) -> tuple[str, str, tuple, str]:
        """(label, kind, (low, high, step) or the choices, help) for a page's widget."""
        if self.kind == "choice":
            return self.label, "choice", self.choices, self.help
        high = self.high if self.high is not None else self.widget_high
        return self.label, self.kind, (self.low, high, self.step), self.help


TIME_INDEXED = "time-indexed (Veeraragavan et al. 2024)"
DISCLOSURE = "disclosure control (no formal guarantee)"

OPTIONS: dict[str, Option] = {o.name: o for o in (
    Option("alpha", "float", "Decay alpha", "Later grid points get less noise: step i spends e(1 + alpha i).",
           0.0, None, 0.1, widget_high=5.0, group=TIME_INDEXED),
    Option("tau_start", "float", "Clip at start (tau start)", "Clipping threshold at the start of the grid.",
           0.0, 1.0, 0.05, group=TIME_INDEXED),
    Option("tau_end", "float", "Clip at end (tau end)", "Clipping threshold at the end of the grid.", 0.0, 1.0, 0.05,
           group=TIME_INDEXED),
    Option("window", "int", "Smoothing window (grid points)", "Rolling-mean window in grid points.", 1, None, 1,
           widget_high=15, group=TIME_INDEXED),
    Option("edge_mode", "choice", "Smoothing at the edges",
           "mean: average of the values in the window; as-published: the paper divides by the full window even at "
           "the ends.", choices=("mean", "as-published"), group=TIME_INDEXED),
    Option("threshold", "int", "Smallest count shown (threshold)",
           "Counts from 1 to threshold - 1 are withheld and shown as '<threshold'; the usual rule is 5 or 10.",
           2, None, 1, widget_high=100, metavar="K", group=DISCLOSURE),
    Option("base", "int", "Rounding base", "Every count is rounded to a multiple of this number (often 5 or 10).",
           2, None, 1, widget_high=100, metavar="B", group=DISCLOSURE),
    Option("k", "int", "Events per step (k)",
           "Adjacent time bins are merged until each step of the curve holds at least k events.", 2, None, 1,
           widget_high=100, metavar="K", group=DISCLOSURE),
)}


def takers(name: str, family: str) -> list[str]:
    """The catalogue ids of ``family`` whose entries take option ``name``."""
    from dpsurv_core.privacy import catalogue

    return [i for i in catalogue.ids(family) if name in catalogue.get(family, i).options]


def defaults(name: str, family: str) -> Any:
    """The option's default as the entries that take it declare it (they agree: a test checks)."""
    from dpsurv_core.privacy import catalogue

    values = {repr(catalogue.get(family, i).options[name]) for i in takers(name, family)}
    if len(values) != 1:
        raise ParameterError(f"The catalogue's entries disagree on the default of {name}: {sorted(values)}")
    return catalogue.get(family, takers(name, family)[0]).options[name]
