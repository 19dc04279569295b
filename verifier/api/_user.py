"""The user's own producer: a properties file, read for one client, and the preset whose
promise its settings claim (DESIGN §4)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from producers.properties import UserConfig, read_user_config


def derive_mode(settings: dict, client: str = "kafka-python") -> str:
    """The preset whose promise a user's producer settings claim (DESIGN §4), on
    ``client``'s defaults (librdkafka: idempotence off unless set, docs/advise.md)."""
    if settings.get("transactional_id"):
        return "transactional"
    idem = settings.get("enable_idempotence")
    if idem is None and client == "librdkafka":
        idem = False
    acks_all = settings.get("acks", -1) in (-1, "all")
    retries = settings.get("retries", 1)
    if idem is True:
        return "idempotent"
    if idem is None and acks_all and retries != 0 and \
            settings.get("max_in_flight_requests_per_connection", 5) <= 5:
        return "idempotent"  # kafka-python's default since 3.0: idempotence on
    # retries claim at-least-once: acks=1 with retries runs there (the mode at-most-once
    # refuses retries) and its losses on a leader crash fail it, as they should
    return "at-least-once" if settings.get("acks", -1) != 0 and retries != 0 else "at-most-once"


@dataclass(frozen=True)
class UserProducer:
    """A user's producer properties as one client runs them, and what they claim."""

    path: Path
    config: UserConfig
    #: the preset whose promise the settings claim (:func:`derive_mode`)
    claimed: str


def read_user_producer(path: Path, client: str = "kafka-python",
                       claim_on: str | None = None) -> UserProducer:
    """``path`` read for ``client`` (``java:3.9.1`` reads as ``java``), its claim derived
    on the defaults of ``claim_on`` (default: that client). Typos and conflicting
    settings are a :class:`~verifier.rundata.errors.UsageError`."""
    name = client.split(":")[0]
    config = read_user_config(path, name)
    return UserProducer(path, config, derive_mode(config.settings, claim_on or name))
