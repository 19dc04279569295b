"""An example consumer service for ``verifier chaos --app`` (docs/applications.md): a
kafka-python consume-transform-produce loop that knows nothing of the verifier except the
environment contract it is started with.

    verifier chaos --app ".venv/bin/python examples/apps/python_service.py" \\
        --app-guarantee at-least-once --scenario instance-kill

It reads ``VERIFIER_INPUT_TOPICS`` in the consumer group ``VERIFIER_GROUP_ID``, writes
each record's key, value and headers unchanged to ``VERIFIER_OUTPUT_TOPIC`` (the value
carries the identity the verifier judges by: transform anything else, pass it through),
and commits the consumed offsets after the output is flushed: at-least-once, which is
what it claims with ``--app-guarantee``. It stops cleanly on SIGTERM; the verifier
SIGKILLs and restarts its instances as the scenario says.
"""

import os
import signal

from kafka import KafkaConsumer, KafkaProducer

stopping = []
signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))

bootstrap = os.environ["VERIFIER_BOOTSTRAP_SERVERS"].split(",")
consumer = KafkaConsumer(*os.environ["VERIFIER_INPUT_TOPICS"].split(","),
                         bootstrap_servers=bootstrap,
                         group_id=os.environ["VERIFIER_GROUP_ID"],
                         enable_auto_commit=False, auto_offset_reset="earliest",
                         isolation_level="read_committed")
producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True)
output = os.environ["VERIFIER_OUTPUT_TOPIC"]
try:
    while not stopping:
        batch = consumer.poll(timeout_ms=200)
        for records in batch.values():
            for r in records:
                producer.send(output, key=r.key, value=r.value,
                              headers=list(r.headers or ()))
        if batch:
            producer.flush()
            consumer.commit()  # after the output is written: at-least-once
finally:
    consumer.close(autocommit=False)
    producer.close(timeout=10)
