"""Broker settings through the admin API: what a broker runs with, and dynamic changes.

A scenario's ``[broker]`` table (verifier.orchestration.scenario) applies either at start
(the local cluster's ``server.properties``; :func:`check_known` then asks each broker
whether it knows every key, since a broker only warns about one it does not) or
dynamically: :func:`set_dynamic` sets the keys on every broker with
IncrementalAlterConfigs (kafka-python's admin client refuses a key that is not dynamic
for the broker's version) and returns what to restore; :func:`restore_dynamic` puts the
earlier values back, or deletes the keys a broker had no dynamic value for.

Per broker rather than the cluster-wide default: kafka-python addresses broker resources
by id, and a cluster-wide setting may also be set per broker.
"""

from __future__ import annotations

from kafka.admin import ConfigResource, ConfigResourceType

from verifier.harness.topics import admin
from verifier.rundata.errors import BrokerConfigError
from verifier.rundata.waiting import WaitTimeout, wait_until

DYNAMIC_SOURCES = ("DYNAMIC_BROKER_CONFIG", "DYNAMIC_DEFAULT_BROKER_CONFIG")
#: how long a dynamic change may take to show on every broker (KRaft applies it when the
#: broker replays the metadata log, after the admin call has returned)
APPLY_TIMEOUT_S = 30.0


def _broker_ids(a) -> list[int]:
    try:
        return sorted(int(b["broker_id"]) for b in a.describe_cluster()["brokers"])
    except KeyError:
        # kafka-python 3.0.12 reads DescribeCluster v0 (Kafka < 3.7) wrongly
        # ('endpoint_type'); the brokers its bootstrap metadata listed are the same set
        return sorted(b.node_id for b in a._manager.cluster.brokers())


def _describe(a, node: int, keys) -> dict[str, dict]:
    resource = ConfigResource(ConfigResourceType.BROKER, str(node), dict.fromkeys(keys))
    got = a.describe_configs([resource], config_filter="all")
    return got.get("broker", {}).get(str(node), {})


def check_known(bootstrap_servers: str, settings: dict[str, str], version: str = "",
                **client_config) -> dict[int, dict[str, str | None]]:
    """Every broker's value of each key; a key some broker does not define is not a
    setting of its version (a broker only warns about it at start and runs without it):
    :class:`BrokerConfigError`."""
    out: dict[int, dict[str, str | None]] = {}
    with admin(bootstrap_servers, **client_config) as a:
        for node in _broker_ids(a):
            seen = _describe(a, node, settings)
            # a key of server.properties the version does not define comes back typed
            # UNKNOWN (value hidden as if sensitive); one never given does not come back
            unknown = sorted(k for k in settings
                             if k not in seen or seen[k].get("config_type") == "UNKNOWN")
            if unknown:
                of = f"Kafka {version}" if version else f"broker {node}"
                raise BrokerConfigError(f"{of} does not know the setting(s) {unknown} of the "
                                        "scenario's [broker] table")
            out[node] = {k: seen[k].get("value") for k in settings}
    return out


def set_dynamic(bootstrap_servers: str, settings: dict[str, str],
                **client_config) -> dict[int, dict[str, str | None]]:
    """Set ``settings`` on every broker; return per broker the earlier dynamic value of
    each key (None: it had none, healing deletes it)."""
    previous: dict[int, dict[str, str | None]] = {}
    with admin(bootstrap_servers, **client_config) as a:
        nodes = _broker_ids(a)
        for node in nodes:
            seen = _describe(a, node, settings)
            previous[node] = {k: (seen[k].get("value")
                                  if seen.get(k, {}).get("config_source") in DYNAMIC_SOURCES
                                  else None) for k in settings}
        resources = [ConfigResource(ConfigResourceType.BROKER, str(n), dict(settings))
                     for n in nodes]
        try:
            result = a.alter_configs(resources, incremental=True)
        except ValueError as exc:  # kafka-python: a key that is not dynamic here
            raise BrokerConfigError(f"the brokers refuse a dynamic change of "
                                    f"{sorted(settings)}: {exc}") from None
    _check_result(result, "set", settings)
    _wait_applied(bootstrap_servers, {n: dict(settings) for n in previous}, client_config)
    return previous


def restore_dynamic(bootstrap_servers: str, previous: dict[int, dict[str, str | None]],
                    **client_config) -> dict:
    """Undo :func:`set_dynamic`: earlier values back, keys that had none deleted."""
    resources = []
    for node, keys in previous.items():
        ops = {k: ("SET", v) if v is not None else ("DELETE", None) for k, v in keys.items()}
        resources.append(ConfigResource(ConfigResourceType.BROKER, str(node), ops))
    with admin(bootstrap_servers, **client_config) as a:
        result = a.alter_configs(resources, raise_on_unknown=False, incremental=True)
    _check_result(result, "restore", {k for keys in previous.values() for k in keys})
    _wait_applied(bootstrap_servers, previous, client_config)
    return {str(n): keys for n, keys in previous.items()}


def _norm(value) -> str:
    return str(value).strip().lower()


def _wait_applied(bootstrap_servers: str, expect: dict[int, dict[str, str | None]],
                  client_config: dict) -> None:
    """Until every broker describes each key as ``expect`` says (a value: that dynamic
    value; None: no dynamic value left). The admin call returns before a KRaft broker has
    applied the change, and a fault that starts before its setting holds never ran."""
    def probe():
        off = []
        with admin(bootstrap_servers, **client_config) as a:
            for node, keys in expect.items():
                seen = _describe(a, node, keys)
                for k, want in keys.items():
                    got = seen.get(k, {})
                    dynamic = got.get("config_source") in DYNAMIC_SOURCES
                    if (want is None and dynamic) or (want is not None and (
                            not dynamic or _norm(got.get("value")) != _norm(want))):
                        off.append(f"broker {node} {k}={got.get('value')}")
        return not off, "; ".join(off)

    try:
        wait_until(probe, timeout=APPLY_TIMEOUT_S, what="dynamic broker settings",
                   expected="in effect on every broker", interval=0.1, max_interval=1.0)
    except WaitTimeout as exc:
        raise BrokerConfigError(f"dynamic broker settings not in effect after "
                                f"{APPLY_TIMEOUT_S:.0f} s: {exc}") from None


def _check_result(result: dict, what: str, keys) -> None:
    bad = {n: r for n, r in (result.get("broker") or {}).items() if r != "OK"}
    if bad:
        raise BrokerConfigError(f"could not {what} {sorted(keys)}: {bad}")
