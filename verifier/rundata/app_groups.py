"""Group protocols as a dimension of the application columns, and share groups (issue 47;
docs/applications.md, "Group protocols and share groups").

``--group-protocol classic,consumer`` runs every consumer-group application once per
protocol, side by side on one cluster in one run, each a column of its own named
``<app>[<protocol>]`` (``app:java-copier-transactional[consumer]@read_committed``): the
classic protocol (JoinGroup / SyncGroup, the client assigns) and the consumer protocol of
KIP-848 (``group.protocol=consumer``: ConsumerGroupHeartbeat, the broker assigns; brokers
4.0+, the Java client 4.x). An instance is told its protocol in ``VERIFIER_GROUP_PROTOCOL``.

A share-group application (KIP-932, ``KafkaShareConsumer``: records acquired and
acknowledged one by one, any member may get any record) is no consumer group: the
dimension does not multiply it. Share groups are production-ready from Kafka 4.2
(``share.version=1``, on by default on a cluster formatted at 4.2 or later).

Pure: what the CLI refuses is said here, with the reason, before anything starts.
"""

from __future__ import annotations

from dataclasses import replace

from verifier.rundata.errors import UsageError

CLASSIC, CONSUMER = "classic", "consumer"
#: the values of ``--group-protocol``, in column order
PROTOCOLS = (CLASSIC, CONSUMER)
#: what an instance is told (absent: the client's default, classic)
ENV_GROUP_PROTOCOL = "VERIFIER_GROUP_PROTOCOL"
#: the group kinds an application runs in (config.json ``apps[<name>].group_type``)
CONSUMER_GROUP, SHARE_GROUP = "consumer", "share"
#: the first broker release of each: KIP-848 GA in 4.0, KIP-932 production-ready in 4.2
CONSUMER_PROTOCOL_SINCE = (4, 0)
SHARE_GROUPS_SINCE = (4, 2)

#: why a preset's client cannot take the consumer protocol (its runtime or its kind)
KAFKA_PYTHON_LACKS = (
    "kafka-python 3.0.12 has no group.protocol setting: its KafkaConsumer joins only by "
    "the classic JoinGroup/SyncGroup (kafka/coordinator/base.py); use its Java twin "
    "(java-copier-*)")
STREAMS_LACKS = (
    "Kafka Streams takes no group.protocol=consumer (its main consumer's protocol is "
    "Streams' own); its broker-side protocol is group.protocol=streams (KIP-1071, "
    "production-ready core in 4.2, streams.version=1 on by default from 4.2), which this "
    "dimension does not offer yet")


def parse_protocols(text: str) -> tuple[str, ...]:
    """``--group-protocol``'s value: comma-separated protocols, each once."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in PROTOCOLS]
    if not names or unknown:
        raise UsageError(f"--group-protocol {text!r}: name " + " and/or ".join(PROTOCOLS)
                         + (f" ({', '.join(unknown)} is neither)" if unknown else ""))
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise UsageError(f"--group-protocol {text!r} names {', '.join(twice)} twice")
    return tuple(names)


def column_name(app: str, protocol: str) -> str:
    """The application's name in one protocol: ``copier[consumer]``."""
    return f"{app}[{protocol}]"


def expand(apps: list, protocols: tuple[str, ...]) -> list:
    """Each consumer-group application once per protocol (PlannedApp ``name`` and
    ``group_protocol`` set), a share-group one as it is; ``protocols`` empty: unchanged."""
    if not protocols:
        return list(apps)
    out = []
    for app in apps:
        if app.group_type == SHARE_GROUP:
            out.append(app)
            continue
        out += [replace(app, name=column_name(app.name, p), group_protocol=p)
                for p in protocols]
    return out


def _version(text: str | None) -> tuple[int, ...] | None:
    try:
        return tuple(int(x) for x in str(text).split(".")[:2])
    except ValueError:
        return None


def refusals(apps: list, protocols: tuple[str, ...], broker: str | None,
             client: str | None = None) -> list[str]:
    """Why the applications cannot run as asked (empty: they can). ``apps``: as planned,
    before :func:`expand`; ``broker``: the cluster's Kafka release (None: an external
    cluster, unknown: not refused here); ``client``: the Java presets' kafka-clients
    release (None: the broker's)."""
    out = []
    have = _version(broker)
    java = _version(client) if client else have
    if CONSUMER in protocols:
        for app in apps:
            if app.group_type == SHARE_GROUP:
                continue
            if app.runtime == "python" and app.preset:
                out.append(f"--group-protocol {CONSUMER} with {app.name}: {KAFKA_PYTHON_LACKS}")
            elif app.runtime == "java" and app.preset and app.preset.startswith("streams"):
                out.append(f"--group-protocol {CONSUMER} with {app.name}: {STREAMS_LACKS}")
        if have is not None and have < CONSUMER_PROTOCOL_SINCE:
            out.append(f"--group-protocol {CONSUMER} needs a 4.0 or later broker (KIP-848 is "
                       f"GA from 4.0), not {broker}")
        elif java is not None and java < CONSUMER_PROTOCOL_SINCE and any(
                a.runtime == "java" and a.preset for a in apps):
            out.append(f"--group-protocol {CONSUMER} needs kafka-clients 4.0 or later for the "
                       f"Java presets, not {client}")
    shares = [a.name for a in apps if a.group_type == SHARE_GROUP]
    if shares and have is not None and have < SHARE_GROUPS_SINCE:
        out.append(f"{', '.join(shares)} runs in a share group (KIP-932), production-ready "
                   f"from Kafka 4.2 (share.version=1, on by default when a cluster is "
                   f"formatted at 4.2+; on 4.1 a preview), not {broker}: add "
                   f"--kafka-version 4.4.0")
    elif shares and java is not None and java < SHARE_GROUPS_SINCE:
        out.append(f"{', '.join(shares)} needs kafka-clients 4.2 or later (KafkaShareConsumer "
                   f"production-ready), not {client}")
    return out


__all__ = ["CLASSIC", "CONSUMER", "CONSUMER_GROUP", "CONSUMER_PROTOCOL_SINCE",
           "ENV_GROUP_PROTOCOL", "KAFKA_PYTHON_LACKS", "PROTOCOLS", "SHARE_GROUP",
           "SHARE_GROUPS_SINCE", "STREAMS_LACKS", "column_name", "expand", "parse_protocols",
           "refusals"]
