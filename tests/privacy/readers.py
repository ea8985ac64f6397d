"""A reader for protocol tests whose plans release a plain number: derived = that number and its square."""

from typing import Any


def echo(released: dict[str, Any], inputs: dict[str, Any]) -> dict[str, Any]:
    return {"value": released["value"], "square": released["value"] ** 2, "mechanism": inputs.get("mechanism")}
