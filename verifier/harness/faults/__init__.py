"""Fault injection: the Kafka-aware proxy, process faults, network partitions, and the
nemesis that runs a seeded schedule of declarative fault specs (docs/faults.md)."""
