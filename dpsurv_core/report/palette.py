"""One colour-blind-safe palette for every chart: Okabe and Ito's eight colours (Okabe & Ito, 2008, "Color
Universal Design"), distinguishable with the common forms of colour blindness.

Chart builders take colours from here: :data:`COLOURS` (the order for groups and mechanisms; black is left out, it
is kept for reference lines), :func:`colour` for the i-th series, :func:`rgba` for bands. The reports draw with
it; the app (``dpsurv_app/palette.py``) registers :data:`TEMPLATE` as plotly's default template, so a figure that sets no
colours uses the palette too.
"""

from __future__ import annotations

import plotly.graph_objects as go
import plotly.io as pio

BLACK = "#000000"
ORANGE = "#E69F00"
SKY_BLUE = "#56B4E9"
BLUISH_GREEN = "#009E73"
YELLOW = "#F0E442"
BLUE = "#0072B2"
VERMILLION = "#D55E00"
REDDISH_PURPLE = "#CC79A7"
GREY = "#999999"  # for non-private references and neutral marks (not an Okabe-Ito colour)

OKABE_ITO = (BLACK, ORANGE, SKY_BLUE, BLUISH_GREEN, YELLOW, BLUE, VERMILLION, REDDISH_PURPLE)
# series order: strong contrasts first, yellow (weak on white) last
COLOURS = (BLUE, VERMILLION, BLUISH_GREEN, ORANGE, REDDISH_PURPLE, SKY_BLUE, YELLOW)
TEMPLATE_NAME = "dpsurv"


def colour(i: int) -> str:
    """The colour of the i-th series (cycling)."""
    return COLOURS[i % len(COLOURS)]


def rgba(hex_colour: str, alpha: float) -> str:
    """``#RRGGBB`` as ``rgba(r,g,b,alpha)`` (for bands)."""
    h = hex_colour.lstrip("#")
    r, g, b = (int(h[i:i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r},{g},{b},{alpha})"


TEMPLATE = go.layout.Template(pio.templates["plotly_white"])
TEMPLATE.layout.colorway = list(COLOURS)


def register_default() -> None:
    """Make the palette plotly's default (``plotly_white`` with the Okabe-Ito colorway) in this process."""
    pio.templates[TEMPLATE_NAME] = TEMPLATE
    pio.templates.default = TEMPLATE_NAME
