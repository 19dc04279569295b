"""The applications under test in a run: presets or a command, their names on the
cluster (the run's prefix on each) and the environment contract (issue 47)."""

from __future__ import annotations

from verifier.rundata import apps as A
from verifier.rundata.columns import is_app_column, run_columns


def test_a_list_of_preset_names_is_one_application_each_claiming_its_belief():
    planned = A.plan_apps("copier-commit-before,copier-transactional", None, 2, "py")
    assert [a.name for a in planned] == ["copier-commit-before", "copier-transactional"]
    assert [a.guarantee for a in planned] == ["at-least-once", "exactly-once"]
    assert planned[0].argv == ("py", "-u", "-m", "producers.app_copier", "--commit", "before")
    assert planned[1].argv[-1] == "transactional"
    assert planned[0].process_name(1) == "app/copier-commit-before/1"


def test_anything_else_is_one_command_claiming_the_given_guarantee():
    planned = A.plan_apps("java -jar my-service.jar --fast, please", "exactly-once", 3)
    assert len(planned) == 1
    app = planned[0]
    assert app.argv == ("java", "-jar", "my-service.jar", "--fast,", "please")
    assert (app.name, app.guarantee, app.instances, app.preset) == ("user", "exactly-once", 3,
                                                                    None)
    assert app.expect == "app/exactly-once" and app.label == "app:user"


def test_every_id_the_application_uses_on_the_cluster_carries_the_runs_prefix():
    env = A.environment("run-7", "user", "h:9092", ["run-7.a", "run-7.b"], 1)
    assert env == {A.ENV_BOOTSTRAP: "h:9092", A.ENV_INPUTS: "run-7.a,run-7.b",
                   A.ENV_OUTPUT: "run-7.app.user.out", A.ENV_GROUP: "run-7.app.user",
                   A.ENV_TXN_PREFIX: "run-7.app.user.", A.ENV_INSTANCE: "1"}
    assert all(v.startswith("run-7.") for k, v in env.items()
               if k in (A.ENV_OUTPUT, A.ENV_GROUP, A.ENV_TXN_PREFIX))
    assert set(env) | {A.ENV_STATE_FILE} == set(A.CONTRACT)


def test_an_application_has_a_column_per_isolation_level_after_the_others():
    class P:
        mode, expect = "idempotent", "idempotent"

    app = A.plan_apps("copier-commit-after", None, 2)[0]
    names = [c.name for c in run_columns([P()], (), [app])]
    assert names == ["idempotent", "app:copier-commit-after@read_committed",
                     "app:copier-commit-after@read_uncommitted"]
    assert is_app_column(names[1]) and not is_app_column(names[0])


def test_the_java_presets_start_the_java_apps_main_with_the_given_classpath():
    planned = A.plan_apps("java-copier-transactional,streams-exactly-once-v2", None, 2,
                          "py", java="/jdk/bin/java", classpath="/j/java-apps-4.1.1/*")
    copier, streams = planned
    assert copier.argv == ("/jdk/bin/java", *A.JAVA_OPTS, "-cp", "/j/java-apps-4.1.1/*",
                           "verifier.apps.Main", "copier", "--commit", "transactional")
    assert streams.argv[-4:] == ("verifier.apps.Main", "streams", "--guarantee",
                                 "exactly_once_v2")
    assert (copier.preset, streams.preset) == ("java-copier-transactional",
                                              "streams-exactly-once-v2")


def test_the_streams_presets_short_names_start_the_same_program_under_the_name_typed():
    short = A.plan_apps("streams-eos,streams-alo", None, 2, "py", classpath="/j/*")
    long = A.plan_apps("streams-exactly-once-v2,streams-at-least-once", None, 2, "py",
                       classpath="/j/*")
    assert [a.argv for a in short] == [a.argv for a in long]
    assert [(a.name, a.preset, a.guarantee) for a in short] == [
        ("streams-eos", "streams-exactly-once-v2", "exactly-once"),
        ("streams-alo", "streams-at-least-once", "at-least-once")]
    assert short[0].label == "app:streams-eos"
    assert A.java_presets("streams-eos,copier-commit-before") == ["streams-eos"]
    # one table: a short name is no preset of its own
    assert "streams-eos" not in A.PRESETS and A.preset_named("streams-eos") is \
        A.PRESETS["streams-exactly-once-v2"]


def test_each_preset_claims_what_its_users_believe():
    claims = {n: p.claims for n, p in A.PRESETS.items()}
    assert claims == {
        "copier-commit-before": "at-least-once", "copier-commit-after": "at-least-once",
        "copier-transactional": "exactly-once",
        "java-copier-commit-before": "at-least-once",
        "java-copier-commit-after": "at-least-once",
        "java-copier-transactional": "exactly-once",
        "streams-at-least-once": "at-least-once", "streams-exactly-once-v2": "exactly-once",
        "streams-count-at-least-once": "at-least-once",
        "streams-count-exactly-once-v2": "exactly-once",
        # the same with a small RocksDB memtable (KAFKA-20685's precondition)
        "streams-count-exactly-once-v2-flushing": "exactly-once",
        # a share group (KIP-932) acknowledges each record after writing it
        "java-share-copier": "at-least-once"}
    # the Java copier runs the same three strategies as the kafka-python one
    py = {p.args[-1] for p in A.PRESETS.values() if p.runtime == "python"}
    java = {p.args[-1] for p in A.PRESETS.values()
            if p.runtime == "java" and p.args[0] == "copier"}
    assert py == java == {"before", "after", "transactional"}


def test_the_stateful_streams_presets_count_per_key_and_are_judged_by_the_reference():
    alo, eos = A.plan_apps("streams-count-alo,streams-count-eos", None, 2, "py",
                           classpath="/j/*")
    assert alo.argv[-6:] == ("verifier.apps.Main", "streams", "--guarantee",
                             "at_least_once", "--topology", "count")
    assert eos.argv[-3:] == ("exactly_once_v2", "--topology", "count")
    assert (alo.preset, eos.preset) == ("streams-count-at-least-once",
                                        "streams-count-exactly-once-v2")
    assert (alo.oracle, eos.oracle) == ("reference", "reference")
    assert A.config_entry(eos, "r1", ["r1.t"])["oracle"] == "reference"
    # the stateless presets and the copiers follow each record: the identity oracle
    assert {p.oracle for n, p in A.PRESETS.items() if "count" not in n} == {"identity"}
    assert A.plan_apps("python svc.py", "at-least-once", 1)[0].oracle == "identity"


def test_only_the_java_presets_need_the_jvm_build():
    assert A.java_presets("copier-commit-after, streams-at-least-once,java-copier-"
                          "commit-before") == ["streams-at-least-once",
                                               "java-copier-commit-before"]
    assert A.java_presets("copier-commit-after") == []
    assert A.java_presets("java -jar streams-at-least-once.jar") == []
