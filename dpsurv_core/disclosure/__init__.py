"""Statistical disclosure control: what registries do today (no formal guarantee), audited side by side with DP.

One module per method: :mod:`suppress_small_cells`, :mod:`rounding` (round and random-round), :mod:`cell_key`,
:mod:`smooth_steps`. Each is a curve mechanism returning the same :class:`~dpsurv_core.curves.result.CurveResult`
as the DP count mechanisms; its cost has no epsilon (``guarantee = "no formal guarantee"``).
"""
