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
