"""KIP-1050's error classes per client on the real cluster (issue 50, docs/clients.md
"KIP-1050 error classes per client").

KIP-1050 ("Consistent error handling for Transactions") sorts a transactional producer's
errors into retriable, abortable (TransactionAbortableException, error
TRANSACTION_ABORTABLE = 120), application-recoverable and fatal. Where a kafka-clients
release changed what an application sees, this runs each client's transactional
generator through the shared cluster's proxy, every transaction meant to abort, and
answers the generator's first EndTxn **abort** with TRANSACTION_ABORTABLE, refused (it
never reaches the coordinator): KAFKA-19250 (kafka-clients 4.1.0) turned that answer
from abortable (TransactionAbortableException, the application may retry the abort)
into fatal (KafkaException "Failed to abort transaction": a new producer). 4.0.0 is
the last line without it (4.0.1 and 4.0.2 neither), 4.4.0 the pinned one;
kafka-python 3.0.12 and librdkafka (confluent-kafka as pinned) have their own
handling of an EndTxn error they do not know.

What the application saw is read from the generator's history (the abort that did not
end ok, its outcome and error text) and from its process log, where each client's
generator says "transactional.id ...:" once per producer it initialized (a second one:
it closed the producer and initialized a new one; the proxy's count of InitProducerId
requests would not tell, librdkafka retries one answered COORDINATOR_LOAD_IN_PROGRESS
or CONCURRENT_TRANSACTIONS). Each client's expectation is a row of :data:`EXPECTED`.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

import pytest

from producers.clients import JAVA_MAIN, JAVA_OPTS, require_built
from tests.integration.producers.helpers import generator, history, run_to_end
from verifier.harness.procs import ManagedProcess
from verifier.harness.topics import create_topics
from verifier.rundata import jvm
from verifier.rundata.jvm import PROJECT_ROOT

pytestmark = pytest.mark.integration

#: the generator's load: 3 transactions of 10 records, each meant to abort (so every
#: EndTxn is an abort and the rule's first answer lands on one)
LOAD = ("--count", "30", "--txn-size", "10", "--abort-fraction", "1.0", "--seed", "1")


@dataclass(frozen=True)
class Expected:
    """What a client's application sees when its first EndTxn(abort) is answered
    TRANSACTION_ABORTABLE."""

    #: the history's ``error`` text of that abort starts with this (the class first)
    error: str
    #: the abort's outcome in the client's table
    outcome: str
    #: producers the generator initialized over the run: 1 (it went on with the same
    #: producer) or 2 (it closed it and initialized a new one)
    inits: int


#: client spec -> what it showed (2026-11-30, the shared 4.4.0 cluster; docs/clients.md)
EXPECTED = {
    "java:4.0.0": Expected("TransactionAbortableException: The server encountered an error "
                           "with the transaction", "info", 2),
    "java:4.4.0": Expected("KafkaException: Failed to abort transaction", "info", 2),
    "kafka-python": Expected("KafkaError: KafkaError: Unhandled error in EndTxnResponse: "
                             "[Error 120] TransactionAbortableError", "info", 2),
    "librdkafka": Expected("KafkaError TRANSACTION_ABORTABLE: EndTxn abort failed", "info", 2),
}


def _process(client: str, run_dir, bootstrap: str, topic: str, pid: str) -> ManagedProcess:
    if client.startswith("java:"):
        version = client.partition(":")[2]
        require_built(client)  # built on first use against that kafka-clients (Maven)
        argv = [jvm.java_executable(), *JAVA_OPTS, "-cp",
                jvm.java_generator_jars(version).classpath(), JAVA_MAIN,
                "--run-dir", str(run_dir), "--run-id", "it", "--mode", "transactional",
                "--pid", pid, "--topic", topic, "--bootstrap-servers", bootstrap, *LOAD]
        return ManagedProcess(pid, argv, run_dir / "logs" / f"{pid}.log", cwd=PROJECT_ROOT)
    if client == "librdkafka":
        pytest.importorskip("confluent_kafka")
        return generator(pid, run_dir, bootstrap, topic, "transactional", pid, *LOAD,
                         module="producers.rdkafka")
    return generator(pid, run_dir, bootstrap, topic, "transactional", pid, *LOAD)


# ids without ":" (the topic is named after the test, and Kafka refuses a ":" in it)
@pytest.mark.parametrize("client", sorted(EXPECTED), ids=lambda c: c.replace(":", "-"))
def test_an_abort_answered_transaction_abortable(client, bootstrap, proxies, topic_name,
                                                 tmp_path):
    expected = EXPECTED[client]
    pid = f"kip1050-{client.replace(':', '-').replace('.', '')}-{uuid.uuid4().hex[:6]}"
    txn_id = f"it.{pid}"  # the generator's default transactional id: <run id>.<pid>
    create_topics(bootstrap, {topic_name: 3}, replication_factor=3)
    proc = _process(client, tmp_path, bootstrap, topic_name, pid)
    refuse = proxies.add_rule(kind="error_answer", api="end-txn", error="TRANSACTION_ABORTABLE",
                              variant="refuse", next=1, transactional_id=txn_id)
    run_to_end(proc, timeout=120)
    refused = proxies.remove_rule(refuse["id"])

    assert (refused["hits"], refused["unforged"]) == (1, 0), refused
    ends = [e for e in history(tmp_path, pid).events
            if e.get("f") in ("abort", "commit") and e["type"] != "invoke"]
    assert ends and all(e["f"] == "abort" for e in ends), ends  # every transaction aborts
    failed = [e for e in ends if e["type"] != "ok"]
    assert len(failed) == 1, failed
    assert failed[0]["type"] == expected.outcome, failed[0]
    assert failed[0]["error"].startswith(expected.error), failed[0]
    inits = re.findall(rf"^transactional\.id {re.escape(txn_id)}: ",
                       proc.log_path.read_text(), re.M)
    assert len(inits) == expected.inits, proc.log_tail(30)
