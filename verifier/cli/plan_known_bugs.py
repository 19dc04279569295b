"""`verifier chaos --profile known-bugs --plan`: the grid as it runs, not as a product.

The known-bugs profile runs each bug's documented combinations only
(verifier.orchestration.known_bugs): a fresh local cluster per version plan (a broker
version, its feature levels and, for an application's bug, the application's release),
on it that plan's scenarios with that plan's clients side by side, each ``--repeat``
times. The plan says that per cluster: its header (Kafka version, feature levels, the
application and its release, the clients), each scenario once with its repetitions
(``x3``, one run-id pattern ``-rep<i>of3-s<seed>``), the rows it decides, the names it
creates and uses, the application's names where a plan has one; then each scenario's
faults once, and the expected duration from the model every plan uses
(verifier.cli.plan_parts), summed over the clusters.
"""

from __future__ import annotations

from verifier.cli.plan_parts import (
    KNOWN_BUG_APP_S,
    KNOWN_BUG_PRODUCER_S,
    KNOWN_BUG_RUN_S,
    app_lines,
    duration_line,
    fault_lines,
    known_bug_overhead_s,
)
from verifier.rundata.naming import MARK, run_id

#: what a scenario's names are written after: each run's own prefix
RID = "<run id>"


def known_bug_plan_lines(plans, env, opts, runs_there: set[str] = frozenset()) -> list[str]:
    """The plan of the known-bugs grid as printed: pure, from the profile's version plans
    (:func:`verifier.orchestration.known_bugs.plan_known_bugs`) and the run's options."""
    n = opts.repeat
    after = " one after another" if len(plans) > 1 else ""
    lines = [f"plan of the known-bugs grid: {_count(len(plans), 'cluster')}{after}, each a "
             f"fresh local cluster ({env.spec.nodes} nodes on {env.bootstrap_servers}) "
             "removed with its data when its runs end: nothing is created until the run "
             "starts",
             f"every name below starts with the run's prefix {RID}. and every run id with "
             f"{MARK} (<start>: the run's UTC start, e.g. 20261129T150102Z)"
             + (f"; x{n}: the scenario runs {n} times, i = 1..{n}" if n > 1 else ""),
             f"every run also uses the groups {RID}.spark-* (the observer's Spark readers: "
             "join, commit nothing)", ""]
    for i, plan in enumerate(plans, 1):
        lines += _cluster_lines(plan, i, len(plans), env, opts)
    scenarios = list({s.name: s for p in plans for s in p.scenarios}.values())
    lines += [""] + fault_lines(scenarios, env, runs_there) + [""]
    runs = sum(len(p.scenarios) for p in plans) * n
    load = sum(s.workload.duration_s for p in plans for s in p.scenarios) * n
    overhead = sum(known_bug_overhead_s(len(p.clients) * len(s.workload.modes), bool(p.app))
                   for p in plans for s in p.scenarios) * n
    lines.append(duration_line(
        runs, load, len(plans), overhead,
        f"each run adds {KNOWN_BUG_RUN_S} s, {KNOWN_BUG_PRODUCER_S} s a producer and "
        f"{KNOWN_BUG_APP_S} s an application"))
    return lines


def _cluster_lines(plan, i: int, of: int, env, opts) -> list[str]:
    """One cluster's header, then each of its scenarios once with its repetitions."""
    from verifier.orchestration.known_bugs import plan_options

    levels = "".join(f", {k}={v} (feature level)" for k, v in plan.features)
    app = plan.app
    apps, release = (), ""
    if app:
        from verifier.orchestration.known_bug_apps import built, parse_app_spec, planned

        spec = parse_app_spec(app)
        apps = planned(spec)
        when = "" if built(spec) else ", not built yet: Maven builds it before the first " \
            "cluster starts"
        release = (f", application {spec.name} ({_count(apps[0].instances, 'instance')}) "
                   f"on kafka-clients and kafka-streams {spec.version or 'of the run'}{when}")
    n = opts.repeat
    runs = len(plan.scenarios) * n
    times = f" x{n} =" if n > 1 else ","
    lines = [f"cluster {i} of {of}: Kafka {plan.kafka}{levels}{release}; clients "
             f"{', '.join(plan.clients)}{' side by side' if len(plan.clients) > 1 else ''}"
             f"; {_count(len(plan.scenarios), 'scenario')}{times} {_count(runs, 'run')}, "
             f"{_count(len(plan.cells), 'row')}"]
    run_opts = plan_options(opts, plan)
    for s in plan.scenarios:
        lines += _scenario_lines(plan, s, run_opts, apps, env.spec.replication_factor)
    return lines


def _scenario_lines(plan, s, opts, apps, replication: int) -> list[str]:
    """A scenario of a cluster once: its repetitions, rows, settings and names."""
    from verifier.orchestration.planning import plan_producers

    rows: dict[str, list[str]] = {}
    for bug, combo in plan.cells:
        if bug.run_name(combo) == s.name:
            rows.setdefault(bug.id, []).append(f"{combo.client} {combo.status}")
    decides = "; ".join(f"{b}: {', '.join(r)}" for b, r in rows.items())
    settings = ""
    if s.broker is not None:
        settings = " (broker " + ", ".join(f"{k}={v}" for k, v in s.broker.settings.items()) \
            + f", {s.broker.apply})"
    each = f" x{opts.repeat}" if opts.repeat > 1 else ""
    lines = [f"  {s.name}{settings}{each}, {s.workload.duration_s:.0f} s of load"
             f"{' each, run ids' if each else ', run id'} {run_ids(s.name, opts)}: {decides}"]
    producers = plan_producers(s, RID, opts)
    topics = [p.topic.removeprefix(RID + ".") for p in producers]
    tids = [p.pid for p in producers if p.expect == "transactional"]
    copiers = [p.pid for p in producers if p.mode.split("/")[0] == "copier"]
    partitions = _count(s.workload.partitions, "partition")
    lines.append(f"    {_plural('topic', topics)} {_names(topics)}  ({partitions}, "
                 f"replication {replication})"
                 + (f"; {_plural('transactional id', tids)} {_names(tids)}" if tids else "")
                 + (f"; group {_names(copiers)} (the copier: commits offsets)"
                    if copiers else ""))
    creates: list[str] = []
    ids: list[str] = []
    groups: list[str] = []
    app_lines(apps, RID, s.workload.partitions, replication, creates, ids, groups)
    lines += [f"  {ln}" for ln in creates + ids + groups]
    return lines


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'s' if n != 1 else ''}"


def _plural(what: str, names: list) -> str:
    return what + ("s" if len(names) > 1 else "")


def _names(suffixes: list[str]) -> str:
    """``<run id>.a`` or ``<run id>.{a, b}``."""
    return f"{RID}.{suffixes[0]}" if len(suffixes) == 1 else \
        f"{RID}.{{{', '.join(suffixes)}}}"


def run_ids(name: str, opts) -> str:
    """A scenario's run ids as one pattern (``-rep<i>of3-s<i>``), or its one run id."""
    if opts.repeat == 1:
        return run_id(name, "<start>", opts.seed)
    off = opts.seed - 1  # run i's seed: the first run's, plus i - 1
    return run_id(name, f"<start>-rep<i>of{opts.repeat}", 0).removesuffix("0") + \
        ("<i>" if off == 0 else f"<i{off:+d}>")
