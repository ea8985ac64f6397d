"""Privacy: the mechanism catalogue, the ledger, the release protocol, noise sources and fingerprints.

Every mechanism is a :class:`Mechanism` that knows its :class:`PrivacyCost`; a release is a :class:`Plan` run by
:func:`dpsurv_core.privacy.release.release`, which checks the cost against the data set's budget in the
:class:`LedgerStore`, draws from :class:`ReleaseNoise` and records the charge (hash-chained); previews and simulations
draw from :class:`SimulationNoise` and are never recorded. A data set's budget is keyed by its content fingerprint
(:func:`fingerprint_file`, :func:`fingerprint_source`). Names are imported on first use.
"""

from typing import TYPE_CHECKING

from dpsurv_core._lazy import attach

if TYPE_CHECKING:
    from dpsurv_core.privacy.accounting import Ledger, LedgerEntry
    from dpsurv_core.privacy.catalogue import Entry
    from dpsurv_core.privacy.chain import ChainBrokenError
    from dpsurv_core.privacy.cost import PrivacyCost
    from dpsurv_core.privacy.fingerprint import fingerprint_file, fingerprint_source
    from dpsurv_core.privacy.ledger import LedgerStore, record_outputs
    from dpsurv_core.privacy.mechanism import Mechanism, check_epsilon
    from dpsurv_core.privacy.noise import NoiseSource, ReleaseNoise, SimulationNoise
    from dpsurv_core.privacy.release import Plan, Released, cli_command, option_words, preview, stored_release
    from dpsurv_core.privacy.roles import Actor, NotAllowedError, load_roles

__all__ = ["Actor", "ChainBrokenError", "Entry", "Ledger", "LedgerEntry", "LedgerStore", "Mechanism", "NoiseSource",
           "NotAllowedError", "Plan", "PrivacyCost", "ReleaseNoise", "Released", "SimulationNoise", "check_epsilon",
           "cli_command", "fingerprint_file", "fingerprint_source", "load_roles", "option_words", "preview",
           "record_outputs", "stored_release"]

__getattr__, __dir__ = attach(__name__, __all__, {
    "accounting": ["Ledger", "LedgerEntry"],
    "catalogue": ["Entry"],
    "chain": ["ChainBrokenError"],
    "cost": ["PrivacyCost"],
    "fingerprint": ["fingerprint_file", "fingerprint_source"],
    "ledger": ["LedgerStore", "record_outputs"],
    "mechanism": ["Mechanism", "check_epsilon"],
    "noise": ["NoiseSource", "ReleaseNoise", "SimulationNoise"],
    "release": ["Plan", "Released", "cli_command", "option_words", "preview", "stored_release"],
    "roles": ["Actor", "NotAllowedError", "load_roles"],
})
