"""One definition per anomaly kind, in one place (docs/expectations.md §1).

Pure functions over Arrow tables and plain rows: no Spark, no Kafka, no clock. The batch
checks (:mod:`verifier.judge.checks`) run them per (topic, partition) after one Spark
shuffle; a live path (the streaming checks) imports the same functions.

=========================  ===========================================================
kind                       definition
=========================  ===========================================================
lost, unseen               :func:`kinds.lost` (completeness: ``model.Drain.incomplete``)
duplicate-same-session,    :func:`kinds.duplicates`
duplicate-cross-session
duplicate-delivery         :func:`kinds.delivery_and_inconsistent`
reorder                    :func:`kinds.reorder`
aborted-read               :func:`kinds.aborted`
torn-transaction           :func:`kinds.txn_visible` per partition, then :func:`rules.torn`
hanging-transaction        :func:`rules.hanging`
inconsistent-offset        :func:`kinds.delivery_and_inconsistent`
foreign-record             :func:`rules.undecodable` (rows), :func:`kinds.misplaced`
                           (identities no history sent, or not at their home)
=========================  ===========================================================

:mod:`frames` derives what they share: per-offset cells, placements (offset x decoded
identity, per reader), identities; :func:`kinds.run_pass` runs all of one partition;
:mod:`rules` holds the rules on one record or transaction that both paths apply.
"""

from verifier.judge.definitions import frames, kinds, rules

__all__ = ["frames", "kinds", "rules"]
