"""The app's colours: the report's colour-blind-safe palette (:mod:`dpsurv_core.report.palette`, Okabe & Ito 2008),
so the pages and the reports they download draw with the same eight colours."""

from dpsurv_core.report.palette import (  # noqa: F401
    BLACK,
    BLUE,
    BLUISH_GREEN,
    COLOURS,
    GREY,
    OKABE_ITO,
    ORANGE,
    REDDISH_PURPLE,
    SKY_BLUE,
    TEMPLATE,
    TEMPLATE_NAME,
    VERMILLION,
    YELLOW,
    colour,
    register_default,
    rgba,
)
