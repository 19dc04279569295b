"""One home for the verdict: a run folder read once, judged, finished, its exit code set.

- :mod:`~verifier.assess.facts`: the run folder read once into a :class:`RunFacts` (the
  plan, the drain, the nemesis history, the generators that never started, the
  interruption, the clients and the broker version), and what is derived from it once
  (exposure, connection report, the pipelines' outcomes);
- :mod:`~verifier.assess.follow`: the run's files followed while it goes;
- :mod:`~verifier.assess.live`: the live pass, the verdict right after the drain;
- :mod:`~verifier.assess.batch`: the batch pass on Spark, its cross-check of the live
  result, and `verifier analyze`;
- :mod:`~verifier.assess.finish`: the one function that finishes a document (cross-check,
  exposure, interruption, skipped faults, connections, advice, self-test);
- :mod:`~verifier.assess.exitcodes`: every exit code of a verdict, a grid or a profile;
- :mod:`~verifier.assess.outputs`: the documents written, a matrix from those in memory.

The orchestration (a chaos run, the pytest plugin, shrink) and the CLI call these; the
judge below decides each column from the expectation table, the report renders. The
package imports nothing itself: `verifier.assess.exitcodes` loads without Spark.
"""
