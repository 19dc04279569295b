"""The Kafka image: built on this machine from the jars Maven resolved (no registry),
tagged with the Kafka version, reused while its inputs are unchanged."""

from __future__ import annotations

import time

import pytest

from verifier.harness.containers.image import kafka_image, remove_images
from verifier.rundata import jvm

pytestmark = pytest.mark.containers


def test_the_image_is_built_from_the_maven_jars_once_and_then_reused(docker_client):
    version = jvm.kafka_version()
    remove_images(docker_client, version)  # from nothing: the Java base and the Kafka layer
    t0 = time.monotonic()
    built = kafka_image(docker_client, version)
    print(f"\nimage build from nothing: {time.monotonic() - t0:.1f} s ({built.tag})")
    assert built.built and built.tag == f"delivery-verifier-kafka:{version}"
    assert docker_client.images.get(built.tag).labels["org.apache.kafka.version"] == version

    again = kafka_image(docker_client, version)
    assert not again.built and again.image_id == built.image_id
    assert again.seconds < 5, "reused, not rebuilt"

    libs = docker_client.containers.run(built.tag, entrypoint=["/bin/ls", "/opt/kafka/libs"],
                                        network_mode="none", remove=True)
    assert sorted(libs.decode().split()) == sorted(p.name for p in
                                                   jvm.broker_jars(version).jars())
    java = docker_client.containers.run(built.tag, entrypoint=["java", "-version"],
                                        network_mode="none", remove=True, stdout=True,
                                        stderr=True)
    assert f'version "{jvm.java_major_version()}' in java.decode()
