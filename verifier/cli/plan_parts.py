"""The parts of ``verifier chaos --plan`` that every plan prints the same way
(verifier.cli.plan, verifier.cli.plan_known_bugs): the expected duration's model, each
scenario's faults and whether they can run, what the applications create and use."""

from __future__ import annotations

#: measured: a quick-profile run (14-22 s of load) took 77-91 s on the 2-core machine
#: (docs/benchmarks.md 2026-11-27): the observer's start, the drain and the verification
#: add about a minute to a run's load; a local cluster's start about half a minute
RUN_OVERHEAD_S = 65
LOCAL_CLUSTER_START_S = 30
#: measured: the known-bugs profile at --repeat 3 (132 runs, 2026-11-30, docs/benchmarks.md):
#: a run's wall time past its load was 31 s with one producer, 37-39 s with two, 51 s with
#: five side by side (the 4.1.1 cluster), 50 s with a Kafka Streams application and one
#: producer. Its runs are one mode each, lighter than a profile's four: 65 s a run put the
#: whole grid at 204 min where it took 150
KNOWN_BUG_RUN_S, KNOWN_BUG_PRODUCER_S, KNOWN_BUG_APP_S = 26, 5, 20
#: why a fault kind cannot run where the part it needs (its Kind.needs) is missing
_NEEDS = {
    "proxy": "needs the fault proxy in front of the local cluster's brokers",
    "cluster": "signals the local cluster's broker processes",
    "partition": "needs the run's own network namespace (root, ip, nft and setpriv), on "
                 "the local cluster",
}


def app_lines(apps, rid: str, partitions: int, replication: int, creates: list,
              tids: list, groups: list) -> None:
    """What ``--app``'s applications create and use (docs/applications.md): each one's
    output topic, group and transactional-id prefix; Kafka Streams' internal topics; the
    fault-free reference run of an aggregating one."""
    from verifier.rundata import app_reference as R
    from verifier.rundata import apps as A

    for app in apps:
        topics = [(A.output_topic(rid, app.name), "output")]
        if app.oracle == "reference":
            topics.append((R.reference_output(rid, app.name), "fault-free reference run's "
                                                               "output"))
        for topic, what in topics:
            creates.append(f"  topic {topic}  {partitions} partition"
                           f"{'s' if partitions != 1 else ''}, replication "
                           f"{replication}  (application {app.name}'s {what})")
        streams = bool(app.preset and app.preset.startswith("streams"))
        kind = "share group" if app.group_type == "share" else "group"
        instances = f"{app.instances} instance{'s' if app.instances != 1 else ''}"
        runs = [(A.group_id(rid, app.name), instances)]
        if app.oracle == "reference":
            runs.append((R.reference_group(rid, app.name), "its fault-free reference run"))
        for group, who in runs:
            if streams:
                creates.append(f"  topics {group}-*  (Kafka Streams' internal changelog and "
                               "repartition topics, created by Streams)")
            groups.append(f"  {kind} {group}  (application {app.name}, {who}: commits "
                          "offsets)")
        if app.guarantee == "exactly-once":  # Streams names its own: application.id-...
            prefix = (f"{A.group_id(rid, app.name)}-" if streams
                      else A.transactional_id_prefix(rid, app.name))
            tids.append(f"  transactional ids {prefix}*  (application {app.name})")


def fault_lines(scenarios, env, runs_there: set[str]) -> list[str]:
    """Each scenario's faults: runs, or cannot run here and why (``runs_there``: kinds the
    run's own network namespace adds)."""
    from verifier.harness.faults.kinds import KINDS

    skipped = env.skipped_kinds() - runs_there
    lines = ["faults:"]
    for s in scenarios:
        faults = [*s.faults, *s.broker_faults()]
        if not faults:
            lines.append(f"  {s.name}: none")
        for f in faults:
            kind = f.get("kind")
            label = f"  {s.name}: {fault_label(f)}"
            if kind not in skipped:
                what = ("changes your brokers' settings " + ", ".join(
                    f"{k}={v}" for k, v in (f.get("params") or {}).get("settings", {}).items())
                        + " for its window, then restores them"
                        if kind == "broker-config" else "runs")
                lines.append(f"{label}: {what}")
                continue
            needs = KINDS[kind].needs if kind in KINDS else None
            why = _NEEDS.get(needs, f"the {env.name} environment cannot run it")
            lines.append(f"{label}: cannot run here: {why} (skipped; the columns it "
                         "concerns say so)")
        if s.broker is not None and s.broker.apply == "start" and env.name == "external":
            lines.append(f"  {s.name}: [broker] start settings: cannot run here: the tool "
                         "cannot restart an external cluster's brokers")
    return lines


def fault_label(f: dict) -> str:
    """``producer-kill on producer:transactional at 6 s for 2 s``."""
    target = f.get("target") or {}
    on = ", ".join(f"{k} {v}" if not isinstance(v, bool) else k for k, v in target.items())
    when = f" at {f['start']} s" if f.get("start") is not None else ""
    span = f" for {f['duration']} s" if f.get("duration") else ""
    return f"{f.get('kind')}{' on ' + on if on else ''}{when}{span}"


def duration_line(runs: int, load_s: float, clusters: int, overhead_s: float | None = None,
                  each: str = f"each run adds about {RUN_OVERHEAD_S} s") -> str:
    """The expected wall time of ``runs`` runs with ``load_s`` seconds of load in all, on
    ``clusters`` local clusters the run starts (0: an external cluster): each run's load
    plus the measured overhead (``overhead_s`` in all when a plan models it per run, as
    ``each`` says)."""
    overhead = runs * RUN_OVERHEAD_S if overhead_s is None else overhead_s
    total = load_s + overhead + clusters * LOCAL_CLUSTER_START_S
    plural = "s" if runs > 1 else ""
    on = f" on {clusters} clusters" if clusters > 1 else ""
    return (f"expected duration: about {max(1, round(total / 60))} min ({runs} run{plural}"
            f"{on}, {load_s:.0f} s of load; {each} for the "
            "observer's start, the drain and the verification"
            + (f", each cluster's start about {LOCAL_CLUSTER_START_S} s" if clusters > 1
               else "") + ", measured on a 2-core machine)")


def known_bug_overhead_s(producers: int, app: bool) -> int:
    """A known-bugs run's wall time past its load (:data:`KNOWN_BUG_RUN_S`)."""
    return KNOWN_BUG_RUN_S + KNOWN_BUG_PRODUCER_S * producers + (KNOWN_BUG_APP_S if app else 0)
