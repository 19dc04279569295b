"""Gate a CI pipeline on the delivery guarantee of an application's producer settings.

The delivery-verifier package brings the fixtures (pytest finds its plugin by itself):
`delivery` runs one of the verifier's fault scenarios on a real Kafka cluster started for
the test session, with `app.properties` (next to this file) as a producer of its own, and
judges what a Spark Structured Streaming observer read back.

    pytest examples/pytest                                  # brokers embedded, one JVM each
    pytest examples/pytest --delivery-environment docker    # brokers in containers
"""


def test_app_producer_keeps_its_promise_under_lost_acks(delivery):
    # lost acknowledgements (the proxy closes the connection after the broker appended);
    # modes=() leaves the verifier's own presets out, time_scale=0.5 halves the scenario
    result = delivery.run("ack-loss", producer_config="app.properties", modes=(),
                          time_scale=0.5)
    # judged by what the settings claim: at-least-once (nothing acknowledged is lost)
    assert result.verdict("user:app") == "PASS"
    assert result.counts("user:app")["acknowledged"] > 0
