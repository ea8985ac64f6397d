"""Who may reach the app: a single-user tool on this machine unless sign-in is configured.

By default the app listens on the loopback address only (``.streamlit/config.toml``), for the data holder at this
machine. Served on any other address (a server's interface, ``0.0.0.0``, a container's published port), anyone who
reaches the port could open the data sets on the server, see exact non-private statistics and spend or raise budgets,
so the app refuses to start there unless Streamlit's OpenID Connect sign-in (an ``[auth]`` section in
``.streamlit/secrets.toml``, see docs/deployment.md) is configured.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping

SIGN_IN_DOC = "docs/deployment.md"


def is_loopback(address: str | None) -> bool:
    """True for 127.0.0.0/8, ::1 and "localhost"; an empty address means every interface (Streamlit's default)."""
    if not address:
        return False
    if address.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(address.strip().strip("[]")).is_loopback
    except ValueError:  # a host name other than localhost: it may resolve to any interface
        return False


def refusal(address: str | None, sign_in_configured: bool) -> str | None:
    """The sentence that stops a server on a non-loopback ``address`` without sign-in, else None."""
    if is_loopback(address) or sign_in_configured:
        return None
    where = f"address {address!r}" if address else "every network interface"
    return (f"dpsurv will not listen on {where} without sign-in: anyone who reaches the port could see exact "
            "statistics and spend the budget. Serve it on 127.0.0.1 (the default, `make run`), or configure "
            f"OpenID Connect sign-in in .streamlit/secrets.toml ([auth], see {SIGN_IN_DOC}).")


def sign_in_configured(secrets: object) -> bool:
    """Whether ``st.secrets`` holds an ``[auth]`` section with a provider's metadata address (no secrets file: no)."""
    try:
        auth = secrets["auth"]  # type: ignore[index]
    except (KeyError, FileNotFoundError, AttributeError, TypeError):
        return False
    except Exception:  # noqa: BLE001 (Streamlit raises its own error when no secrets file exists)
        return False
    try:
        keys = set(auth.keys())
    except AttributeError:
        return False
    if "server_metadata_url" in keys and "client_id" in keys:
        return True
    return any(isinstance(auth.get(k), Mapping) and "server_metadata_url" in auth.get(k) for k in keys)


def provider_args(secrets: object) -> tuple[str, ...]:
    """``st.login``'s arguments: () for one provider configured in ``[auth]`` itself, (name,) for the first named
    provider (``[auth.NAME]``)."""
    try:
        auth = secrets["auth"]  # type: ignore[index]
        if "server_metadata_url" in auth:
            return ()
        return next(((str(k),) for k in auth.keys() if isinstance(auth.get(k), Mapping)), ())
    except Exception:  # noqa: BLE001 (no secrets: no provider)
        return ()


def _secrets_file_has_sign_in(path: str = ".streamlit/secrets.toml") -> bool:
    import tomllib

    try:
        with open(path, "rb") as fh:
            return sign_in_configured(tomllib.load(fh))
    except (OSError, tomllib.TOMLDecodeError):
        return False


def main(argv: list[str] | None = None) -> int:
    """``python -m dpsurv_app.serving ADDRESS``: exit 2 with the sentence when the app may not listen on ADDRESS (a launcher
    runs it before ``streamlit run``, so a container refuses at start, not at its first visitor)."""
    import sys

    args = sys.argv[1:] if argv is None else argv
    sentence = refusal(args[0] if args else "", _secrets_file_has_sign_in())
    if sentence:
        print(f"error: {sentence}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
