"""Spark's own failures, the pure parts (issue 34): the task hold's decision, an
executor's identity from its command line, what an executor or worker kill's exposure
counts, and the evidence that tells a task retry from a batch replay."""

from __future__ import annotations

from streaming.pipelines.hold import HOLD_AFTER_ROWS, claim_stage, task_hold
from verifier.harness.spark_standalone import EXECUTOR_CLASS, parse_executor, pipeline_conf
from verifier.judge import exposure as E
from verifier.judge.faults.facts import Batch, ColumnSpec, RunFacts
from verifier.judge.task_attempts import BATCH_REPLAY, TASK_RETRY, cause, evidence

T0 = 1_000_000


def test_the_task_hold_lets_rows_through_then_holds_the_first_task_to_claim_its_stage():
    state: dict = {}
    held = [task_hold(state, task=7) for _ in range(HOLD_AFTER_ROWS + 3)]
    assert held == [False] * HOLD_AFTER_ROWS + [True, False, False]  # the first rows through
    # another task, or a retried attempt, of a stage already held: no hold
    assert not any(task_hold(state, task=8, claim=lambda: False) for _ in range(200))
    # the next task of the worker counts afresh (the state keeps the current task only)
    assert [task_hold(state, task=12) for _ in range(HOLD_AFTER_ROWS + 1)][-1] is True
    assert list(state) == [12]


def test_a_stage_holds_once_whichever_attempt_gets_there_first(tmp_path):
    """A task whose first attempt failed before its row 101 (a Kafka fetch timed out) holds
    in its retry; the retry of a task a kill took while it held does not hold again."""
    marker = tmp_path / "holding"

    def rows(task: int, n: int) -> bool:
        state: dict = {}
        return any(task_hold(state, task, lambda: claim_stage(marker, "run-a", 3))
                   for _ in range(n))

    assert not rows(41, 50)  # the first attempt failed at its row 50
    assert rows(42, HOLD_AFTER_ROWS + 1)  # its retry holds at its row 101
    assert not claim_stage(marker, "run-a", 3)  # its retry after the kill, another task
    assert claim_stage(marker, "run-a", 4)  # the next batch's stage
    assert [p.name for p in tmp_path.iterdir()] == ["holding.claim-run-a-4"]  # 3's removed
    assert claim_stage(marker, "run-b", 4)  # the query restarted: its stage ids again


def test_an_executor_is_known_by_its_command_line():
    argv = ["/usr/bin/java", "-cp", "x", EXECUTOR_CLASS, "--driver-url", "spark://d",
            "--executor-id", "3", "--hostname", "127.0.0.1", "--cores", "1", "--app-id",
            "app-20261128-0001", "--worker-url", "spark://w"]
    e = parse_executor(42, argv, 17)
    assert (e.pid, e.app, e.executor_id, e.worker) == (42, "app-20261128-0001", "3", 17)
    assert parse_executor(42, ["/usr/bin/java", "org.apache.spark.deploy.worker.Worker"],
                          1) is None
    assert parse_executor(42, [EXECUTOR_CLASS, "--app-id"], 1) is None  # cut short


def test_a_pipeline_takes_one_executor_of_one_core_on_each_worker():
    assert pipeline_conf(2) == {"spark.cores.max": "2", "spark.executor.cores": "1",
                                "spark.executor.memory": "640m",
                                "spark.task.maxFailures": "16"}


def _kill(kind, start, detail):
    target = {"process": "pipeline/p"}
    return [{"type": "invoke", "f": "start", "fault": kind, "target": target, "id": 1,
             "t": start},
            {"type": "ok", "f": "start", "fault": kind, "target": target, "id": 1,
             "t": start, "detail": detail},
            {"type": "ok", "f": "heal", "fault": kind, "target": target, "id": 1,
             "t": start + 3_000, "detail": {}}]


def _exposure(nemesis):
    batches = [Batch(0, T0 - 5_000, T0 - 4_000, {("run.t", 0): (0, 100)}),
               Batch(1, T0 - 1_000, T0 + 500, {("run.t", 0): (100, 130)})]
    pipe = ColumnSpec(name="pipeline:p", mode="pipeline:p", pids=(), topics=("run.t",),
                        pipeline="p", isolations=("read_committed",))
    return E.exposure(RunFacts(nemesis=nemesis, columns=[pipe],
                                 batches={"pipeline/p": batches}))["pipeline:p"]


def test_an_executor_kill_counts_the_batch_its_task_was_writing():
    detail = {"app": "app-1", "executor": "0", "task": {"stage": 4, "partition": 0,
                                                        "attempt": 0, "task": 31},
              "rows_written": 4, "batch": 1, "mid_batch": True}
    got = _exposure(_kill("executor-kill", T0, detail))
    (entry,) = got["faults"]
    assert got["exercised"] is True and entry["acted"] == 30
    assert "executor 0 of app-1 ran task 0 attempt 0 (stage 4) of batch 1" in entry["what"]
    assert "4 rows of it written" in entry["what"]


def test_an_executor_or_worker_kill_between_batches_is_not_exercised():
    for kind in ("executor-kill", "worker-kill"):
        got = _exposure(_kill(kind, T0 - 3_000, {"app": "app-1", "executor": "1"}))
        assert got["exercised"] is False, kind
        assert "acted on none" in got["reasons"][0]


def test_copies_of_two_attempts_of_one_task_are_a_task_retry():
    copies = [(5, "12.0.0"), (5, "12.0.1")]
    assert cause(copies) == TASK_RETRY
    ev = evidence(copies)
    assert ev["output_tasks"] == ["batch 5 task 0 attempt 0 (stage 12)",
                                  "batch 5 task 0 attempt 1 (stage 12)"]
    assert ev["cause"] == TASK_RETRY


def test_copies_of_one_batch_from_two_runs_are_a_batch_replay():
    assert cause([(5, "12.0.0"), (5, "3.0.0")]) == BATCH_REPLAY  # a restarted driver
    assert cause([(5, "12.0.0"), (6, "13.1.0")]) is None  # not one batch: unknown
    assert evidence([(5, None), (5, None)]) == {}  # a sink that does not say


def test_executor_and_worker_kills_are_the_advice_tables_executor_loss():
    from verifier.judge import advice_rules as R
    from verifier.judge.advice import fault_classes

    kills = [{"kind": k, "target": {"process": "pipeline"}}
             for k in ("executor-kill", "worker-kill")]
    assert fault_classes(kills) == {R.EXECUTOR_LOSS}
    assert R.SCENARIO[R.EXECUTOR_LOSS] == "executor-loss"


def test_the_run_s_cluster_is_refused_where_it_cannot_serve():
    from types import SimpleNamespace as NS

    from verifier.orchestration.spark_cluster import problems

    kill = NS(name="executor-loss", faults=[{"kind": "executor-kill"}])
    plain = NS(name="baseline", faults=[])
    pipe = NS(name="delta", spark_version=None)
    opts = NS(spark_cluster="standalone", spark_master=None, pipelines=(pipe,))
    assert problems(kill, opts) == []
    assert "--spark-cluster standalone" in problems(kill, NS(**{**vars(opts),
                                                                "spark_cluster": None}))[0]
    assert "--pipeline" in problems(plain, NS(**{**vars(opts), "pipelines": ()}))[0]
    assert "one or the other" in problems(plain, NS(**{**vars(opts),
                                                        "spark_master": "spark://h:7077"}))[0]
    older = NS(name="delta@spark-3.5.7", spark_version="3.5.7")
    assert "--spark-version 3.5.7" in problems(plain, NS(**{**vars(opts),
                                                            "pipelines": (older,)}))[0]
