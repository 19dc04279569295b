"""Broker settings changed for the fault's window (a scenario's dynamic ``[broker]``
table): set with the admin API on every broker at the start, the previous values
restored at the heal. Works on any cluster, the user's too.

    [[faults]]
    kind = "broker-config"
    target = { all = true }
    start = 5
    duration = 20
    params = { settings = { "min.insync.replicas" = "3" } }
"""

from __future__ import annotations

from verifier.harness.faults.kinds.base import FaultEnv, Kind, ScheduledFault, all_target
from verifier.judge.faults.config import FAMILY
from verifier.rundata.errors import UsageError


def check_params(params: dict) -> None:
    """``{"settings": {NAME: VALUE, ...}}`` with string values."""
    settings = params.get("settings")
    if set(params) != {"settings"} or not isinstance(settings, dict) or not settings or \
            not all(isinstance(k, str) and isinstance(v, str) for k, v in settings.items()):
        raise UsageError("params must be {\"settings\": {NAME: VALUE, ...}} with string "
                         f"values, not {params!r}")


def start_broker_config(fault: ScheduledFault, env: FaultEnv, state: dict) -> dict:
    from verifier.harness.broker_config import set_dynamic

    settings = fault.params["settings"]
    state["previous"] = set_dynamic(env.bootstrap_servers, settings, **env.client_config)
    return {"settings": dict(settings),
            "previous": {str(n): v for n, v in state["previous"].items()}}


def heal_broker_config(fault: ScheduledFault, env: FaultEnv, state: dict) -> dict:
    from verifier.harness.broker_config import restore_dynamic

    return {"restored": restore_dynamic(env.bootstrap_servers, state["previous"],
                                        **env.client_config)}


KINDS = (Kind("broker-config", FAMILY, start_broker_config, heal_broker_config,
              all_target("every broker"), check_params, on_brokers=True),)
