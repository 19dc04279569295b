"""The pipelines' own input in a chaos run (issue 46): the topics a pipeline file's
``INPUT`` declares, created under the run's prefix, and one producer per topic writing
``make_record``'s (or its SAMPLES file's) records (producers.user_records) with their
identity in a header (and in the value's ID_FIELD when the file names one).

A declared topic ``orders`` is ``<run>.in.orders`` on the cluster; its producer's column
is ``input:orders``, judged by the producer-side checks like any mode's (its mode: the
scenario's idempotent one when it runs one, else its first; its client: the run's first,
kafka-python, Java or librdkafka). Pipelines that declare no
input read the run's own topics, never a declared one.
"""

from __future__ import annotations

from dataclasses import dataclass

from verifier.rundata.errors import UsageError
from verifier.rundata.pipeline_file import TRIED, input_topic
from verifier.rundata.plan import PlannedProducer
from verifier.rundata.vocab import COPIER

COLUMN_PREFIX = "input:"
#: the declared topics keep every record whatever its timestamp: a user's records may
#: carry event times older than the broker's retention (orders.jsonl's are from January),
#: which its retention check deletes seconds after the write (the observer and the
#: pipelines then fail on data lost), and the reference oracle reads the log from its start
INPUT_CONFIGS = {"retention.ms": "-1"}
#: the generator of the declared topics when the run names no client
CLIENT = "kafka-python"


@dataclass(frozen=True)
class DeclaredTopic:
    topic: str  # as the pipeline file names it
    partitions: int
    spec: str  # the pipeline file that makes its records
    cluster_topic: str


def declared_topics(pipelines, run_id: str) -> list[DeclaredTopic]:
    """Every topic the run's pipelines declare, once (the first file's make_record makes
    its records: :func:`check_shared` checked that the others make the same)."""
    out: dict[str, DeclaredTopic] = {}
    for p in pipelines:
        for topic, parts in (p.inputs or {}).items():
            seen = out.get(topic)
            if seen is not None:
                if seen.partitions != parts:
                    raise UsageError(f"input topic {topic!r}: {seen.spec} declares "
                                     f"{seen.partitions} partitions, {p.spec} {parts}")
                continue
            out[topic] = DeclaredTopic(topic, parts, p.spec, input_topic(run_id, topic))
    return list(out.values())


def check_shared(loaded) -> None:
    """Pipelines (streaming.pipelines.contract.Pipeline) that declare the same topic must
    make the same records there: they read one topic, written once. Checked on the
    records the contract tries (verifier.rundata.pipeline_file.TRIED)."""
    first: dict[str, object] = {}
    for p in loaded:
        for topic in p.file.inputs:
            other = first.setdefault(topic, p)
            if other is p:
                continue
            if other.file.id_field != p.file.id_field:
                raise UsageError(
                    f"input topic {topic!r} is declared by {other.spec} (ID_FIELD "
                    f"{other.file.id_field!r}) and {p.spec} (ID_FIELD {p.file.id_field!r}),"
                    " whose records differ: give one another name")
            for i in TRIED:
                a = other.file.encode(topic, i)
                b = p.file.encode(topic, i)
                if a != b:
                    raise UsageError(
                        f"input topic {topic!r} is declared by {other.spec} and {p.spec}, "
                        f"whose make_record({topic!r}, {i}) differ: give one another name")


def _mode(scenario) -> str:
    """The mode of the declared topics' producers: the scenario's idempotent one if it runs
    one, else its first; idempotent when it runs none (a run of the user's producer file
    or pipeline alone, whose input still needs writing without duplicates)."""
    modes = [m for m in scenario.workload.modes if m != COPIER]
    return "idempotent" if "idempotent" in modes or not modes else modes[0]


def input_producers(declared: list[DeclaredTopic], scenario,
                    client: str = CLIENT) -> list[PlannedProducer]:
    """One producer per declared topic (its pid ``in-<topic>-0``), on ``client`` (a
    ``--clients`` spec: the run's first; every client writes a user's records,
    producers.user_records)."""
    from producers.clients import check_client, client_version

    if not declared:
        return []
    mode = _mode(scenario)
    return [PlannedProducer(f"in-{_slug(d.topic)}-0", COLUMN_PREFIX + d.topic, mode,
                            d.cluster_topic, dict(scenario.clients),
                            client=check_client(client), client_version=client_version(client),
                            client_spec=client) for d in declared]


def plan_entries(declared: list[DeclaredTopic]) -> dict:
    """config.json ``user_input``: pid -> what its generator makes (producers.user_records)."""
    return {f"in-{_slug(d.topic)}-0": {"spec": d.spec, "topic": d.topic,
                                       "partitions": d.partitions} for d in declared}


def topic_sizes(declared: list[DeclaredTopic]) -> dict[str, int]:
    return {d.cluster_topic: d.partitions for d in declared}


def create_declared(env, declared: list[DeclaredTopic], security: dict) -> None:
    """The declared topics on the run's cluster, with :data:`INPUT_CONFIGS`; owned by the
    run (deleted with it where the environment deletes what a run created)."""
    from verifier.harness.topics import create_topics

    sizes = topic_sizes(declared)
    if sizes:
        create_topics(env.bootstrap_servers, sizes, env.replication_factor, INPUT_CONFIGS,
                      **security)
        env.own_topics(list(sizes))


def _slug(topic: str) -> str:
    return topic.replace(".", "-").replace("_", "-").lower()


__all__ = ["COLUMN_PREFIX", "INPUT_CONFIGS", "DeclaredTopic", "check_shared",
           "create_declared", "declared_topics", "input_producers",
           "plan_entries", "topic_sizes"]
