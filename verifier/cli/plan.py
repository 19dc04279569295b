"""`verifier chaos --plan`: what a run would do to a cluster, before it does anything.

The same flags as the run it plans, checked the same way (``verifier.api.prepare``: a flag
the run would refuse, the plan refuses). It then prints what the run would create (topics
with partitions and replication), use (transactional ids, group ids) and delete; the
ACLs it needs, one ``kafka-acls.sh`` line each, as an operator grants them; the faults
that can and cannot run there and why; the expected duration. On an external cluster it
reads metadata only (brokers, topic and group names): nothing is created, written or
deleted there.

Every name starts with the run's prefix, ``<run id>.`` (verifier.rundata.naming); the run
id's start time is known only when the run starts, so the plan writes ``<start>`` for it
and grants the ACLs on the prefix every run id starts with (:data:`MARK`).
"""

from __future__ import annotations

import argparse
import sys

from verifier.cli.plan_parts import app_lines, duration_line, fault_lines
from verifier.rundata.naming import MARK, USE_MY_IDS_RISK, run_id


def add_safety_flags(parser: argparse.ArgumentParser) -> None:
    """``--plan`` and ``--use-my-ids`` on ``verifier chaos``."""
    parser.add_argument("--plan", action="store_true",
                        help="print what the run would create, use and delete on the "
                             "cluster, the ACLs it needs, which faults can run there and "
                             "how long it takes; reads metadata only, changes nothing")
    parser.add_argument("--use-my-ids", action="store_true",
                        help="run --producer-config's transactional.id (and group ids) as "
                             "they are, not under the run's prefix: " + USE_MY_IDS_RISK)


def cmd_plan(args: argparse.Namespace, prepare, out=sys.stdout) -> int:
    """Check the flags as the run would (``prepare()``: the API's, on these flags), then
    print the plan."""
    prepared = prepare()
    scenarios, env, opts = prepared.scenarios, prepared.env, prepared.opts
    found = None
    if args.bootstrap_servers is not None:
        from verifier.harness import leftovers
        from verifier.harness.topics import admin

        with env:  # describes the cluster; deletes nothing (it created nothing)
            with admin(env.bootstrap_servers, timeout=20, **env.client_config) as a:
                found = leftovers.on_cluster(a)
            replication = env.replication_factor
    else:
        replication = env.spec.replication_factor
    # a run that needs a network namespace re-executes itself in one: partitions run there
    runs_there = {"network-partition"} if prepared.needs_namespace else set()
    if prepared.known_bug_plans:  # a cluster per plan, only its combinations' runs
        from verifier.cli.plan_known_bugs import known_bug_plan_lines

        lines = known_bug_plan_lines(prepared.known_bug_plans, env, opts, runs_there)
    else:
        lines = plan_lines(args, scenarios, env, opts, replication, found, runs_there)
    for line in lines:
        print(line, file=out)
    return 0


def _runs(scenarios, opts):
    """(scenario, run id with ``<start>`` for its start time) of every run."""
    for s in scenarios:
        for k in range(1, opts.repeat + 1):
            rep = f"-rep{k}of{opts.repeat}" if opts.repeat > 1 else ""
            yield s, run_id(s.name, f"<start>{rep}", opts.seed + k - 1)


def plan_lines(args, scenarios, env, opts, replication: int, found=None,
               runs_there: set[str] = frozenset()) -> list[str]:
    """The plan as printed: pure, from what ``_prepare`` made of the flags."""
    from verifier.orchestration.pipeline_plan import for_scenario, output_topic
    from verifier.orchestration.planning import plan_producers
    from verifier.orchestration.user_input import declared_topics, input_producers

    where = (f"the external cluster {args.bootstrap_servers}" if args.bootstrap_servers
             else f"the local cluster the run starts ({env.spec.nodes} nodes on "
                  f"{env.bootstrap_servers}), removed with its data when the run ends")
    lines = [f"plan of a chaos run on {where}: nothing is created until the run starts",
             f"every name below starts with the run's prefix <run id>. and every run id "
             f"with {MARK} (<start>: the run's UTC start, e.g. 20261129T150102Z)", ""]
    creates, tids, groups = [], [], []
    for s, rid in _runs(scenarios, opts):
        plans = plan_producers(s, rid, opts)
        for p in plans:
            creates.append(f"  topic {p.topic}  {s.workload.partitions} partitions, "
                           f"replication {replication}  (mode {p.mode})")
            tid = _transactional_id(p, rid)
            if tid:
                own = " (your transactional.id, prefixed)" if p.config_file else ""
                if p.config_file and opts.use_my_ids:
                    own = " (YOUR OWN transactional.id, --use-my-ids)"
                tids.append(f"  transactional id {tid}{own}")
            if p.mode.split("/")[0] == "copier":
                groups.append(f"  group {rid}.{p.pid}  (the copier: commits offsets)")
        pipes = for_scenario(opts.pipelines, s)
        declared = declared_topics(pipes, rid)
        writers = input_producers(declared, s, (opts.clients or (opts.client,))[0])
        for d, w in zip(declared, writers, strict=True):
            creates.append(f"  topic {d.cluster_topic}  {d.partitions} partitions, "
                           f"replication {replication}  (the pipelines' input {d.topic}, "
                           f"written by {w.client}, {w.expect})")
            tid = _transactional_id(w, rid)
            if tid:
                tids.append(f"  transactional id {tid}  (the writer of {d.topic})")
        for p in pipes:
            creates.append(f"  topic {output_topic(rid, p.name)}  "
                           f"{s.workload.partitions} partitions, replication {replication}"
                           f"  (pipeline {p.name}'s output)")
        app_lines(opts.apps, rid, s.workload.partitions, replication, creates, tids, groups)
        groups.append(f"  group {rid}.spark-*  (the Spark readers of the observer"
                      f"{' and pipelines' if opts.pipelines else ''}: join, commit nothing)")
    lines += ["creates:", *creates, "uses:", *tids, *groups, "deletes:",
              *_deletes(args, bool(tids)), ""]
    if args.bootstrap_servers:
        lines += _acls(args, env, scenarios, opts, bool(tids)) + [""]
    lines += fault_lines(scenarios, env, runs_there) + [""]
    versions = max(1, len(opts.kafka_versions))
    load = sum(s.workload.duration_s for s in scenarios) * opts.repeat * versions
    lines.append(duration_line(len(scenarios) * opts.repeat * versions, load,
                               0 if args.bootstrap_servers else versions))
    if found is not None:
        left = found.runs
        lines.append(f"on the cluster now: {len(left)} earlier runs of this tool"
                     + (f" ({', '.join(left)}); `verifier cleanup --bootstrap-servers "
                        f"{args.bootstrap_servers}` removes killed ones" if left else ""))
    return lines


def _transactional_id(p, rid: str) -> str | None:
    """The transactional id a column's generator uses (None: not transactional)."""
    own = p.overrides.get("transactional_id") or p.overrides.get("transactional.id")
    if own:
        return str(own)
    return f"{rid}.{p.pid}" if p.expect == "transactional" else None


def _deletes(args, transactional: bool) -> list[str]:
    out = []
    if args.bootstrap_servers and getattr(args, "keep_topics", False):
        out.append("  nothing: --keep-topics keeps the topics (`verifier cleanup "
                   "--bootstrap-servers ... --run RUN_ID` removes them later)")
    elif args.bootstrap_servers:
        out.append("  the topics above, when the run ends (after an error or a Ctrl-C "
                   "too); after a kill -9, `verifier cleanup --bootstrap-servers "
                   f"{args.bootstrap_servers}` does")
    else:
        out.append("  the whole local cluster, when the run ends")
    if transactional and args.bootstrap_servers:
        out.append("  never the transactional ids: the cluster expires them "
                   "(transactional.id.expiration.ms, 7 days by default)")
    return out


def _principal(security: dict) -> str:
    """The principal the cluster sees: the SASL user, the client certificate's subject
    (Kafka's default SSL mapping), or ANONYMOUS."""
    if security.get("sasl_plain_username"):
        return f"User:{security['sasl_plain_username']}"
    certfile = security.get("ssl_certfile")
    if certfile:
        try:
            from cryptography import x509

            cert = x509.load_pem_x509_certificates(open(certfile, "rb").read())[0]
            return f"User:{cert.subject.rfc4514_string()}"
        except (OSError, ValueError, IndexError):
            return "User:<your client certificate's subject>"
    return "User:ANONYMOUS"


def _acls(args, env, scenarios, opts, transactional: bool) -> list[str]:
    """One kafka-acls.sh line per ACL the run needs (prefixed resources)."""
    from verifier.harness.faults import kinds as K

    principal = _principal(env.client_config)
    base = (f"kafka-acls.sh --bootstrap-server {args.bootstrap_servers} --add "
            f"--allow-principal '{principal}'")
    kinds = {f.get("kind") for s in scenarios for f in (*s.faults, *s.broker_faults())}
    topic_ops = ["Create", "Write", "Read", "Delete"]
    if kinds & set(K.of_family("retention")):
        topic_ops.append("AlterConfigs")  # the retention fault
    acl = [(op, f"--topic {MARK} --resource-pattern-type prefixed") for op in topic_ops]
    if transactional:
        acl.append(("Write", f"--transactional-id {MARK} --resource-pattern-type prefixed"))
        if opts.use_my_ids and opts.user_settings.get("transactional_id"):
            acl.append(("Write", f"--transactional-id {opts.user_settings['transactional_id']}"))
    acl += [("Read", f"--group {MARK} --resource-pattern-type prefixed"),
            ("Delete", f"--group {MARK} --resource-pattern-type prefixed")]
    if kinds & set(K.of_family("config")):
        acl += [("DescribeConfigs", "--cluster"), ("AlterConfigs", "--cluster")]
    lines = [f"ACLs it needs (principal {principal}; Describe comes with each):"]
    lines += [f"  {base} --operation {op} {resource}" for op, resource in acl]
    lines.append("  (Delete on the groups: for `verifier cleanup` only; brokers before "
                 "Kafka 3.0 also want IdempotentWrite on --cluster)")
    return lines


