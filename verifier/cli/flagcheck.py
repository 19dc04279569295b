"""Flags mean what they say (issue 49): a ``verifier chaos`` flag that the chosen profile or
the other flags leave without effect is refused before anything starts (exit 64, naming
the flag and why), never silently ignored. ``verifier chaos --profile known-bugs
--kafka-version 4.1.1`` ran its rows on 3.5.2, 4.1.1 and 4.2.0 clusters for 12 minutes
without a word; it now stops at once and names ``--kafka-versions 4.1.1``, which keeps
only the rows on that broker.

Only what the user wrote is held to this: a flag is *given* when it is on the command
line (whatever its value, even the default's), so ``verifier shrink``, which builds its
chaos run from a run folder, is never refused for flags it set itself.
"""

from __future__ import annotations

import argparse
import shutil

from verifier.rundata.apps import GUARANTEES
from verifier.rundata.errors import UsageError

#: what is parsed but never a flag the user wrote
_NOT_FLAGS = {"command", "func", "verbose", "argv"}


def given_flags(args: argparse.Namespace) -> set[str]:
    """The option names (argparse ``dest``) of the chaos flags written on the command line
    (``args.argv``), whatever their values; empty when that command line is not a chaos
    one. Every option is parsed again with a default of None, so a flag that was written
    is exactly one whose value is not None (abbreviations and ``--flag=value`` included,
    as argparse reads them)."""
    argv = getattr(args, "argv", None)
    if not argv:
        return set()
    from verifier.cli import build_parser

    parser = build_parser()
    _defaults_to_none(parser)
    try:
        parsed = parser.parse_args(argv)
    except SystemExit:  # the real parse accepted it; a second opinion is not a usage error
        return set()
    if getattr(parsed, "command", None) != "chaos":
        return set()
    return {k for k, v in vars(parsed).items() if v is not None and k not in _NOT_FLAGS}


def _defaults_to_none(parser: argparse.ArgumentParser) -> None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                _defaults_to_none(sub)
        elif action.dest != argparse.SUPPRESS and action.default != argparse.SUPPRESS:
            action.default = None


def inert_flags(args: argparse.Namespace, profile, given: set[str]) -> list[str]:
    """Why each written flag has no effect with this profile and these flags (empty: every
    flag applies). One entry per flag, naming it and what to write instead."""
    out = []
    if profile.known_bugs:
        where = f"the {profile.name} profile runs each bug on the brokers and clients its " \
                f"rows name ({_known_bug_brokers()})"
        if "kafka_version" in given:
            out.append(f"--kafka-version {args.kafka_version} does not apply: {where}; "
                       f"--kafka-versions {args.kafka_version} keeps only the rows on that "
                       "broker")
        if "client" in given:
            out.append(f"--client {args.client} does not apply: {where}; --clients "
                       f"{args.client} keeps only the rows of that client")
    if "client" in given and "clients" in given:
        out.append("--client does not apply with --clients, which names every column's "
                   "client: give one or the other")
    if "use_my_ids" in given and "producer_config" not in given:
        out.append("--use-my-ids does not apply: it keeps --producer-config's own "
                   "transactional.id and group ids as they are; give that file")
    if "pipeline_guarantee" in given and "pipeline" not in given:
        out.append("--pipeline-guarantee does not apply: it is the guarantee the pipelines "
                   "under test are judged by; name them with --pipeline")
    out += app_problems(args, profile, given)
    if getattr(args, "bootstrap_servers", None):
        for flag in sorted(given & {"base_port", "state_dir"}):
            out.append(f"--{flag.replace('_', '-')} does not apply with --bootstrap-servers: "
                       "it is the local cluster's, and no local cluster starts")
    if "retry_not_exercised" in given:
        grid = ("the known-bugs grid" if profile.known_bugs else
                "--kafka-versions" if "kafka_versions" in given else
                f"the {profile.name} profile's version grid" if profile.kafka_versions
                else None)
        if grid:
            out.append(f"--retry-not-exercised does not apply to {grid}, which runs every "
                       "scenario on clusters of its own; use --repeat N there")
    return out


def app_problems(args: argparse.Namespace, profile, given: set[str],
                 which=shutil.which) -> list[str]:
    """What is wrong with the ``--app`` flags (issue 47), each naming what to write
    instead; ``which``: how a program is found (shutil.which)."""
    from verifier.rundata.apps import PRESETS, plan_apps, preset_names

    app = getattr(args, "app", None)
    if app is None:
        return [f"--{f.replace('_', '-')} does not apply: it is about the applications under "
                "test; name them with --app" for f in ("app_guarantee", "app_oracle",
                                                        "app_instances", "group_protocol")
                if f in given]
    out = []
    if profile.known_bugs:
        out.append(f"--app does not apply: the {profile.name} profile runs the known bugs' "
                   "own producers; run the applications with a scenario (--scenario "
                   "instance-kill)")
    instances = getattr(args, "app_instances", None)
    if instances is not None and instances < 1:
        out.append(f"--app-instances {instances}: an application needs at least 1 instance")
    planned = plan_apps(app, args.app_guarantee, instances or 1,
                        oracle=getattr(args, "app_oracle", None))
    presets = [a for a in planned if a.preset]
    chosen = [a.preset for a in presets]
    twice = sorted({p for p in chosen if chosen.count(p) > 1})
    if twice:
        out.append(f"--app {app!r} names " + ", ".join(twice) + " twice (a preset's two "
                   "names are one application): name each once")
    if presets and "app_guarantee" in given:
        out.append(f"--app-guarantee does not apply to the presets ({app}): each claims its "
                   "own (" + ", ".join(f"{a.name}: {a.guarantee}" for a in presets) + ")")
    if presets and "app_oracle" in given:
        out.append(f"--app-oracle does not apply to the presets ({app}): each is judged by "
                   "its own oracle (" + ", ".join(f"{a.name}: {a.oracle}" for a in presets)
                   + "); it is for your own command")
    if not presets:
        argv = planned[0].argv
        if not argv:
            out.append("--app is empty: name presets (" + ", ".join(preset_names())
                       + ") or give the command that starts one instance of your application")
        elif "/" not in argv[0] and which(argv[0]) is None:
            near = [n for n in PRESETS if n in app or app in n]
            out.append(f"--app {app!r}: {argv[0]!r} is neither a preset ("
                       + ", ".join(preset_names()) + ") nor a program on PATH"
                       + (f"; did you mean {near[0]}?" if near else ""))
        elif "/" in argv[0] and which(argv[0]) is None:
            out.append(f"--app {app!r}: {argv[0]} is not an executable file")
        if args.app_guarantee is None:
            out.append(f"--app {app!r} needs --app-guarantee: what your application claims "
                       "(" + ", ".join(GUARANTEES) + ") decides what may be found in its "
                       "output")
    return out + group_problems(args, planned)


def group_problems(args: argparse.Namespace, planned: list) -> list[str]:
    """``--group-protocol`` and share groups against the clients and the broker
    (verifier.rundata.app_groups): refused before anything starts, with the reason."""
    from verifier.rundata import app_groups, jvm

    text = getattr(args, "group_protocol", None)
    try:
        protocols = app_groups.parse_protocols(text) if text is not None else ()
    except UsageError as exc:
        return [str(exc)]
    if getattr(args, "bootstrap_servers", None):
        brokers: list[str | None] = [None]  # an external cluster: its release is not known
    elif getattr(args, "kafka_versions", None):
        brokers = [v.strip() for v in args.kafka_versions.split(",") if v.strip()]
    else:
        brokers = [getattr(args, "kafka_version", None) or jvm.kafka_version()]
    out: list[str] = []
    for broker in brokers:
        # the Java presets run on kafka-clients at jvm.clients_version(), which
        # --kafka-version does not move (KAFKA_CLIENTS_VERSION, else KAFKA_VERSION)
        for problem in app_groups.refusals(planned, protocols, broker, jvm.clients_version()):
            if problem not in out:
                out.append(problem)
    return out


def _known_bug_brokers() -> str:
    """The broker versions the known-bugs rows name, for the message."""
    try:
        from verifier.orchestration.known_bugs import load_known_bugs

        versions = {c.kafka for bug in load_known_bugs() for c in bug.combinations}
    except Exception:  # noqa: BLE001 - a message must not fail on its decoration
        return "several"
    return ", ".join(sorted(versions, key=lambda v: tuple(int(x) for x in v.split(".")
                                                          if x.isdigit())))


def check_flags(args: argparse.Namespace, profile) -> None:
    """Refuse (:class:`UsageError`, exit 64) every written chaos flag that would have no
    effect, before anything starts."""
    problems = inert_flags(args, profile, given_flags(args))
    if problems:
        raise UsageError("; ".join(problems))
