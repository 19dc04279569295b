"""A chaos run's verify phase: the verdict from the live path right after the drain,
printed and written at once; then the batch pass on the same data as its cross-check.

Both hand their outcomes to :func:`verifier.assess.finish.finish` as a
:class:`~verifier.assess.finish.Judged`: the live verdict here, finished with its
cross-check pending, for the screen; the whole run's in
:func:`verifier.orchestration.chaos.run_one`.
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import Future

from verifier.assess.batch import batch_pass, check_live
from verifier.assess.facts import read_facts
from verifier.assess.finish import PENDING, CrossCheck, Ending, Judged, finish

log = logging.getLogger(__name__)


def spark_of(spark):
    """The verification's SparkSession, given as is or as the :class:`Future` of its
    start-up (``verifier chaos`` starts it while the cluster starts)."""
    return spark.result() if isinstance(spark, Future) else spark


def verify(run) -> Judged:
    """The run's judged outcomes (``run``: a :class:`ScenarioRun` after its drain): the
    live path's document checked by the batch pass (a difference turns the columns
    concerned UNKNOWN, with the rows); the batch pass's alone without live checks."""
    live = live_verdict(run)
    run.connections_saved()
    run.spark = spark_of(run.spark)
    if live is None:
        facts = read_facts(run.run_dir)
        doc, cross = batch_pass(run.spark, facts)
        return Judged(doc, facts, cross)
    return check_live(run.spark, *live)


def live_verdict(run) -> tuple[Judged, dict] | None:
    """The live path's judged document and result (no Spark), its verdict printed and
    written as soon as the drain is done; None (the batch pass judges alone) without
    live checks or when it cannot be had, which the notes say."""
    from verifier.assess.live import live_pass
    from verifier.report import render_terminal, write_verdict

    if run.follower is None:
        return None
    try:
        facts = read_facts(run.run_dir, config=run.follower.config)
        got = live_pass(facts, run.follower)
        if got is None:
            return None
        built, result = got
        # shown before the proxy's connection log is read (4 s after 20 minutes): the
        # connection report judges no delivery column (a forbidden finding still makes
        # the exit code 1, in the finished document)
        doc = finish(Judged(built, facts, CrossCheck(dict(PENDING))),
                     Ending(connections=False))
    except Exception as exc:  # noqa: BLE001 - the batch checks still judge the run
        log.warning("live verdict", exc_info=True)
        run.notes.append(f"no verdict from the live path ({type(exc).__name__}: {exc}); "
                         "the batch pass judged the run")
        return None
    after = time.monotonic() - (run.drained_at or time.monotonic())
    timing = built["verdict_from"]  # the live pass's record, in every later document too
    timing["after_drain_s"] = round(after, 3)
    if run.drained_at is not None and run.stopped_at is not None:
        # of which stopping the observer and the other processes
        timing["stop_s"] = round(run.stopped_at - run.drained_at, 3)
    write_verdict({**doc, "phases": run.clock.to_json(), "notes": list(run.notes)},
                  run.layout.verdict)
    print(f"verdict ({after:.1f} s after the drain, from the live checks; the batch "
          f"pass now checks it on the same data):", flush=True)
    try:
        print(render_terminal(doc), flush=True)
    except (KeyError, TypeError) as exc:
        print(f"(no table: {exc})", flush=True)
    return Judged(built, facts), result
