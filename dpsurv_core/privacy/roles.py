"""Who may do what to a ledger: the person acting, their role, and the acts each role allows.

Three roles, as a hospital separates them:

- ``custodian``: sets, raises and lowers caps, allows label-only and disclosure-control releases, releases, sees the
  rows and the non-private numbers;
- ``analyst``: previews and releases within the cap, sees the rows and the non-private numbers (their own data
  work), reads the ledger and its reports;
- ``reviewer``: reads the ledger, its records and reports and audit results; never the rows or a non-private number,
  and releases nothing.

The ledger store checks the act itself (:meth:`Actor.require`), so a page that forgot to hide a button still cannot
change a cap for an analyst. On one's own machine (the command line, or the app on 127.0.0.1 with no sign-in) the
person at the keyboard holds the data and every role: :data:`LOCAL`. A served app maps signed-in users to roles with a
roles file (:func:`load_roles`).
"""

from __future__ import annotations

import getpass
import os
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from dpsurv_core.errors import DpsurvError, ParameterError

CUSTODIAN, ANALYST, REVIEWER = "custodian", "analyst", "reviewer"
ROLES = (CUSTODIAN, ANALYST, REVIEWER)

# acts a role may perform
CHANGE_CAP, ALLOW, RELEASE, SEE_DATA, READ_LEDGER = "change the cap", "allow a kind of release", "release", \
    "see rows and non-private numbers", "read the ledger"
ACTS: dict[str, frozenset[str]] = {
    CUSTODIAN: frozenset({CHANGE_CAP, ALLOW, RELEASE, SEE_DATA, READ_LEDGER}),
    ANALYST: frozenset({RELEASE, SEE_DATA, READ_LEDGER}),
    REVIEWER: frozenset({READ_LEDGER}),
}

ROLES_ENV = "DPSURV_ROLES"


class NotAllowedError(DpsurvError):
    """The person acting has no role that allows this act; nothing was computed or recorded."""


@dataclass(frozen=True)
class Actor:
    """The person acting: ``name`` is what records name (a signed-in user's e-mail or subject, or the local user),
    ``role`` one of :data:`ROLES`, ``signed_in`` whether a provider vouched for the name."""

    name: str
    role: str
    signed_in: bool = False

    def may(self, act: str) -> bool:
        return act in ACTS.get(self.role, frozenset())

    def require(self, act: str) -> None:
        """Refuse (:class:`NotAllowedError`) an act this actor's role does not allow."""
        if not self.may(act):
            allowed = [r for r in ROLES if act in ACTS[r]]
            raise NotAllowedError(f"{self.name} ({self.role}) may not {act}: only the {' or '.join(allowed)} role "
                                  "may; ask the data set's custodian.")


def local_actor() -> Actor:
    """The data holder at this machine (command line, or the app on loopback without sign-in): every role."""
    try:
        name = getpass.getuser()
    except (KeyError, OSError):  # no login name in a container with an arbitrary uid
        name = f"uid {os.getuid()}"
    return Actor(f"{name} (local)", CUSTODIAN, False)


@dataclass(frozen=True)
class RoleMap:
    """Roles by user (e-mail or subject, compared case-insensitively) and by group (a ``groups`` claim)."""

    users: Mapping[str, str] = field(default_factory=dict)
    groups: Mapping[str, str] = field(default_factory=dict)

    def role_of(self, names: Iterable[str], groups: Iterable[str] = ()) -> str | None:
        """The role of a user known by ``names`` (e-mail, subject) in ``groups``: a user's own entry first, then the
        most powerful of their groups' roles; None when the file names neither."""
        users = {k.strip().lower(): v for k, v in self.users.items()}
        for n in names:
            if n and n.strip().lower() in users:
                return users[n.strip().lower()]
        found = [self.groups[g] for g in groups if g in self.groups]
        return next((r for r in ROLES if r in found), None)


def parse_roles(data: Mapping[str, object], source: str = "the roles file") -> RoleMap:
    """A :class:`RoleMap` from ``{"users": {name: role}, "groups": {group: role}}``; unknown roles are refused."""
    out: dict[str, dict[str, str]] = {}
    for section in ("users", "groups"):
        table = data.get(section, {}) or {}
        if not isinstance(table, Mapping):
            raise ParameterError(f"{source}: [{section}] must map names to roles ({', '.join(ROLES)}).")
        for name, role in table.items():
            if role not in ROLES:
                raise ParameterError(f"{source}: {name!r} has role {role!r}; a role is one of {', '.join(ROLES)}.")
        out[section] = {str(k): str(v) for k, v in table.items()}
    unknown = set(data) - {"users", "groups"}
    if unknown:
        raise ParameterError(f"{source}: unknown section(s) {', '.join(sorted(unknown))}; use [users] and [groups].")
    return RoleMap(out["users"], out["groups"])


def load_roles(path: str | Path | None = None) -> RoleMap:
    """The roles file (TOML; ``$DPSURV_ROLES``, else ``.streamlit/roles.toml``): no file means nobody has a role.

    Parameters
    ----------
    path : str or pathlib.Path, optional
        The roles file; default ``$DPSURV_ROLES``, else ``.streamlit/roles.toml``.

    Returns
    -------
    RoleMap
        Each signed-in user's roles (empty without a file).

    Raises
    ------
    dpsurv_core.errors.ParameterError
        When the file cannot be read or parsed.
    """
    path = Path(path or os.environ.get(ROLES_ENV) or ".streamlit/roles.toml")
    if not path.exists():
        return RoleMap()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ParameterError(f"The roles file {str(path)!r} cannot be read ({exc}).") from None
    return parse_roles(data, f"The roles file {str(path)!r}")
