"""The consumer applications under test (issue 47): their names on the cluster, the
environment contract an application is started with, the presets, and their files in a
run folder (docs/applications.md).

An application is N instances of one program in one consumer group: they read the run's
input topics and write one output topic. The tool starts each instance with the
environment of :func:`environment` and judges what the instances wrote
(verifier.judge.application). Every id the tool creates on the cluster carries the run's
id as its prefix (DESIGN §11, "never disturb a live system"): the group
``<run>.app.<name>``, the output topic ``<run>.app.<name>.out``, the transactional ids
``<run>.app.<name>.<instance>...``.

    RUN/apps/<name>/<i>.state.json      what instance i says it is doing (the presets)
    RUN/apps/<name>/output-<iso>.parquet  its output topic read back at <iso>, decoded
    RUN/apps/<name>/readback.json       how it was read back, the group's committed offsets

config.json lists the applications under ``apps``: name -> {command, guarantee,
instances, preset, oracle, group_id, output_topic, input_topics,
transactional_id_prefix}.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from verifier.rundata.app_groups import ENV_GROUP_PROTOCOL
from verifier.rundata.columns import APP_PREFIX
from verifier.rundata.pipelines import OUTPUT_SCHEMA

#: what an application claims; the expectation table's rows ``app/<guarantee>``
GUARANTEES = ("at-most-once", "at-least-once", "exactly-once")
#: how an application's output is judged (``--app-oracle``, a command's only): each input
#: record followed to the output (``identity``), or the final value per key against the
#: same command run without faults (``reference``: verifier.judge.app_reference)
ORACLES = ("identity", "reference")
#: an application's report column is ``app:<name>@<isolation>`` (verifier.rundata.columns)
COLUMN_PREFIX = APP_PREFIX
#: an instance's process is ``app/<name>/<i>``: a fault naming ``app`` hits one of them
PROCESS_PREFIX = "app"
DEFAULT_INSTANCES = 2

#: the environment contract (docs/applications.md): what every instance is given
ENV_BOOTSTRAP = "VERIFIER_BOOTSTRAP_SERVERS"
ENV_INPUTS = "VERIFIER_INPUT_TOPICS"  # comma-separated
ENV_OUTPUT = "VERIFIER_OUTPUT_TOPIC"
ENV_GROUP = "VERIFIER_GROUP_ID"
ENV_TXN_PREFIX = "VERIFIER_TRANSACTIONAL_ID_PREFIX"
ENV_INSTANCE = "VERIFIER_INSTANCE"  # 0..N-1, stable across restarts
ENV_STATE_FILE = "VERIFIER_STATE_FILE"  # where an instance may say what it is doing
CONTRACT = (ENV_BOOTSTRAP, ENV_INPUTS, ENV_OUTPUT, ENV_GROUP, ENV_TXN_PREFIX, ENV_INSTANCE,
            ENV_STATE_FILE)


#: how a preset is started: its runtime (``python``: producers.app_copier on this
#: interpreter; ``java``: producers/java-apps on the JVM, verifier.rundata.jvm.APPS_PROJECT)
RUNTIMES = ("python", "java")
JAVA_MAIN = "verifier.apps.Main"
#: JVM flags of the Java presets: a small heap, one GC thread, a quick start
JAVA_OPTS = ("-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
             "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
             # what a Kafka Streams restart did with each state store (kept at a
             # checkpoint or not: a line per store per start), the known-bugs evidence of
             # KAFKA-20685 (verifier/report/kill_evidence.py)
             "-Dorg.slf4j.simpleLogger.log.org.apache.kafka.streams.processor.internals"
             ".ProcessorStateManager=info",
             "-Dorg.slf4j.simpleLogger.showDateTime=true")


@dataclass(frozen=True)
class Preset:
    """A consume-transform-produce application the tool ships: how it is started, and what
    its users usually believe it gives (issue 47: a naive one FAILs where the belief is
    wrong)."""

    name: str
    args: tuple[str, ...]  # after the program: producers.app_copier's or verifier.apps.Main's
    claims: str
    runtime: str = "python"
    #: a second name ``--app`` takes (``streams-eos``); the column is named as typed
    short: str = ""
    #: how its output is judged: ``identity`` (each input record followed to the output)
    #: or ``reference`` (an aggregate: its final state per key against the same
    #: application run without faults, verifier.judge.app_reference)
    oracle: str = "identity"
    #: the group it runs in: ``consumer`` (a consumer group) or ``share`` (KIP-932)
    group_type: str = "consumer"

    def argv(self, python: str, java: str, classpath: str) -> tuple[str, ...]:
        if self.runtime == "java":
            return (java, *JAVA_OPTS, "-cp", classpath, JAVA_MAIN, *self.args)
        return (python, "-u", "-m", "producers.app_copier", *self.args)


#: the kafka-python copiers (producers.app_copier), one per commit strategy, their Java
#: twins (verifier.apps.Copier) and the Kafka Streams pass-through (verifier.apps.PassThrough)
PRESETS: dict[str, Preset] = {p.name: p for p in (
    # commits the batch's offsets, then writes it: a crash in between loses the batch;
    # users believe it at-least-once (auto-commit "usually works")
    Preset("copier-commit-before", ("--commit", "before"), "at-least-once"),
    # writes and flushes the batch, then commits: a crash in between writes it again
    Preset("copier-commit-after", ("--commit", "after"), "at-least-once"),
    # KIP-447: the batch and its offsets in one transaction, with the group's metadata
    Preset("copier-transactional", ("--commit", "transactional"), "exactly-once"),
    Preset("java-copier-commit-before", ("copier", "--commit", "before"), "at-least-once",
           "java"),
    Preset("java-copier-commit-after", ("copier", "--commit", "after"), "at-least-once",
           "java"),
    Preset("java-copier-transactional", ("copier", "--commit", "transactional"),
           "exactly-once", "java"),
    # Kafka Streams, stateless: input topics -> output topic (key, value, headers kept)
    Preset("streams-at-least-once", ("streams", "--guarantee", "at_least_once"),
           "at-least-once", "java", short="streams-alo"),
    Preset("streams-exactly-once-v2", ("streams", "--guarantee", "exactly_once_v2"),
           "exactly-once", "java", short="streams-eos"),
    # Kafka Streams, stateful (verifier.apps.CountPerKey): a count per key in a state
    # store, each change written out; judged by the reference oracle
    Preset("streams-count-at-least-once", ("streams", "--guarantee", "at_least_once",
                                           "--topology", "count"),
           "at-least-once", "java", short="streams-count-alo", oracle="reference"),
    Preset("streams-count-exactly-once-v2", ("streams", "--guarantee", "exactly_once_v2",
                                             "--topology", "count"),
           "exactly-once", "java", short="streams-count-eos", oracle="reference"),
    # the same at settings a user may choose (verifier.apps.StreamsTuning): a 64 KB RocksDB
    # memtable, no record cache, 3 s transactions, a key per input record; RocksDB then
    # flushes writes of an open transaction to disk (KAFKA-20685's precondition)
    Preset("streams-count-exactly-once-v2-flushing", (
        "streams", "--guarantee", "exactly_once_v2", "--topology", "count",
        "--write-buffer-kb", "64", "--cache-bytes", "0", "--commit-ms", "3000",
        "--buckets", "1000000"),
           "exactly-once", "java", short="streams-count-eos-flush", oracle="reference"),
    # KIP-932: a share group; writes and flushes, then acknowledges each record (ACCEPT):
    # at-least-once; a record past its delivery-attempt limit is archived, not lost
    Preset("java-share-copier", ("share-copier",), "at-least-once", "java",
           group_type="share"),
)}
#: every name ``--app`` takes for a preset (its name or its short one) -> the preset
_BY_NAME: dict[str, Preset] = {**PRESETS, **{p.short: p for p in PRESETS.values() if p.short}}


def preset_named(name: str) -> Preset | None:
    """The preset ``name`` (its name or its short one) names, or None."""
    return _BY_NAME.get(name.strip())


def preset_names() -> list[str]:
    """The presets as a message lists them: ``name`` or ``name (short)``."""
    return [p.name + (f" ({p.short})" if p.short else "") for p in PRESETS.values()]


def java_presets(value: str) -> list[str]:
    """The presets ``--app``'s value names that run on the JVM (to build before a run)."""
    return [n for n in (v.strip() for v in value.split(","))
            if (p := preset_named(n)) is not None and p.runtime == "java"]


@dataclass(frozen=True)
class PlannedApp:
    """One application of a run, as the CLI planned it."""

    name: str
    argv: tuple[str, ...]
    guarantee: str
    instances: int = DEFAULT_INSTANCES
    preset: str | None = None
    oracle: str = "identity"  # Preset.oracle
    runtime: str = ""  # a preset's (python, java); "" for a command
    #: ``consumer`` or ``share`` (verifier.rundata.app_groups)
    group_type: str = "consumer"
    #: ``classic`` or ``consumer`` under ``--group-protocol``; "" the client's default
    group_protocol: str = ""

    @property
    def label(self) -> str:
        return COLUMN_PREFIX + self.name

    @property
    def expect(self) -> str:
        return f"app/{self.guarantee}"

    def process_name(self, instance: int) -> str:
        return f"{PROCESS_PREFIX}/{self.name}/{instance}"


def plan_apps(value: str, guarantee: str | None, instances: int,
              python: str = "python", java: str = "java",
              classpath: str = ".jars/java-apps/*", oracle: str | None = None
              ) -> list[PlannedApp]:
    """``--app``'s value as applications: a comma-separated list of preset names, or one
    command (any program; ``guarantee`` is what it claims, ``oracle`` how its output is
    judged, default ``identity``; a preset's are its own). Pure: the checks that
    need the machine (the program exists, the Java presets are built: ``classpath``) are
    the CLI's."""
    names = [v.strip() for v in value.split(",")]
    if all(preset_named(n) is not None for n in names):
        out = []
        for n in names:
            p = preset_named(n)
            out.append(PlannedApp(n, p.argv(python, java, classpath), p.claims, instances,
                                  preset=p.name, oracle=p.oracle, runtime=p.runtime,
                                  group_type=p.group_type))
        return out
    return [PlannedApp("user", tuple(shlex.split(value)), guarantee or "", instances,
                       oracle=oracle or "identity")]


def _on_cluster(name: str) -> str:
    """An application's name as ids on the cluster take it: a topic name allows only
    ``[a-zA-Z0-9._-]``, so ``copier[consumer]`` is ``copier-consumer`` there."""
    return name.replace("[", "-").replace("]", "")


def group_id(run_id: str, name: str) -> str:
    return f"{run_id}.app.{_on_cluster(name)}"


def output_topic(run_id: str, name: str) -> str:
    return f"{run_id}.app.{_on_cluster(name)}.out"


def transactional_id_prefix(run_id: str, name: str) -> str:
    return f"{run_id}.app.{_on_cluster(name)}."


def client_prefixes(run_id: str, name: str) -> tuple[str, ...]:
    """How the client ids and transactional ids of the application's instances begin:
    the presets' ``<group>.<i>.consumer`` / ``.producer`` / ``<group>.<i>``, Kafka
    Streams' ``<application.id>-<process id>-StreamThread-1-...`` (application.id is
    the group id); a user's service that names its clients otherwise is not
    recognised (its proxy faults concern its columns only through these)."""
    group = group_id(run_id, name)
    return (group + ".", group + "-")


def environment(run_id: str, name: str, bootstrap_servers: str, input_topics: list[str],
                instance: int, state_file: Path | None = None,
                group_protocol: str = "") -> dict[str, str]:
    """The environment an instance of application ``name`` is started with
    (``group_protocol``: ``VERIFIER_GROUP_PROTOCOL``, under ``--group-protocol``)."""
    env = {ENV_BOOTSTRAP: bootstrap_servers, ENV_INPUTS: ",".join(input_topics),
           ENV_OUTPUT: output_topic(run_id, name), ENV_GROUP: group_id(run_id, name),
           ENV_TXN_PREFIX: transactional_id_prefix(run_id, name), ENV_INSTANCE: str(instance)}
    if state_file is not None:
        env[ENV_STATE_FILE] = str(state_file)
    if group_protocol:
        env[ENV_GROUP_PROTOCOL] = group_protocol
    return env


def config_entry(app: PlannedApp, run_id: str, input_topics: list[str]) -> dict:
    """config.json ``apps[<name>]``."""
    return {"command": list(app.argv), "guarantee": app.guarantee,
            "instances": app.instances, "preset": app.preset, "oracle": app.oracle,
            "group_id": group_id(run_id, app.name),
            "output_topic": output_topic(run_id, app.name), "input_topics": list(input_topics),
            "transactional_id_prefix": transactional_id_prefix(run_id, app.name),
            "group_type": app.group_type, "group_protocol": app.group_protocol or None}


#: an application's output read back: the decoded identity of every output record (as a
#: pipeline's, OUTPUT_SCHEMA) and where it was in the output topic (its order)
READBACK_SCHEMA = pa.schema([*OUTPUT_SCHEMA, ("out_topic", pa.string()),
                             ("out_partition", pa.int32()), ("out_offset", pa.int64())])


@dataclass(frozen=True)
class AppLayout:
    """The paths of one application of a run. Building one touches nothing on disk."""

    run_dir: Path
    name: str

    @property
    def root(self) -> Path:
        return Path(self.run_dir) / "apps" / self.name

    def state_file(self, instance: int) -> Path:
        return self.root / f"{instance}.state.json"

    def output(self, isolation: str) -> Path:
        return self.root / f"output-{isolation}.parquet"

    @property
    def readback(self) -> Path:
        return self.root / "readback.json"

    def log_name(self, instance: int) -> str:
        return f"app-{self.name}-{instance}"


READBACK_FORMAT = "app-readback"


def write_readback(where: AppLayout, rows: dict[str, pa.Table], info: dict) -> None:
    """The output read back per isolation level (``rows``), then the document that says
    they are complete (``info``: ``committed``, the group's offset per input
    ``"topic-partition"``; ``error`` when it could not be read)."""
    import pyarrow.parquet as pq

    from verifier.rundata.formats import write_json

    where.root.mkdir(parents=True, exist_ok=True)
    for iso, table in rows.items():
        tmp = where.output(iso).with_name(f".{where.output(iso).name}.tmp")
        pq.write_table(table.select(READBACK_SCHEMA.names).cast(READBACK_SCHEMA), tmp)
        tmp.replace(where.output(iso))
    write_json(where.readback, READBACK_FORMAT,
               {**info, "rows": {iso: t.num_rows for iso, t in rows.items()}})


def read_readback(where: AppLayout, isolation: str) -> tuple[pa.Table, dict]:
    """(rows at ``isolation``, readback.json) of one application; RunFormatError when it
    was never read back."""
    import pyarrow.parquet as pq

    from verifier.rundata.formats import RunFormatError, read_json

    info = read_json(where.readback, READBACK_FORMAT)
    if info.get("error"):
        raise RunFormatError(where.readback, f"its output could not be read back: "
                                             f"{info['error']}")
    try:
        rows = pq.read_table(where.output(isolation)).cast(READBACK_SCHEMA)
    except (OSError, pa.ArrowInvalid) as exc:
        raise RunFormatError(where.output(isolation), f"unreadable: {exc}") from None
    return rows, info


__all__ = ["COLUMN_PREFIX", "CONTRACT", "DEFAULT_INSTANCES", "GUARANTEES", "JAVA_MAIN",
           "JAVA_OPTS", "ORACLES", "PRESETS", "PROCESS_PREFIX", "READBACK_FORMAT",
           "READBACK_SCHEMA", "RUNTIMES", "AppLayout", "PlannedApp", "Preset",
           "client_prefixes", "config_entry",
           "environment", "group_id", "java_presets", "output_topic", "plan_apps",
           "preset_named", "preset_names", "read_readback", "transactional_id_prefix",
           "write_readback"]
