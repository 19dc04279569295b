"""`verifier image`: build (or reuse) the Kafka image of the docker environment and compose."""

from __future__ import annotations

import argparse

from verifier.cli.helptext import HelpFormatter, epilog
from verifier.rundata import jvm


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("image", help="build the Kafka image for --environment docker and "
                                     "compose/docker-compose.yml on this machine",
                       description="Build delivery-verifier-kafka:<version> from the broker "
                                   "jars Maven resolves (no registry: the Java base image is "
                                   "imported from this machine's JDK). Reused while its "
                                   "inputs are unchanged. Needs a Docker engine (DOCKER_HOST) "
                                   "and the docker extra.",
                       epilog=epilog(
                           ("verifier image", "the default broker version's image"),
                           ("verifier image --kafka-version 3.6.2 --force", "another "
                            "release, rebuilt even if up to date")),
                       formatter_class=HelpFormatter)
    p.add_argument("--kafka-version", default=None,
                   help=f"broker version (default $KAFKA_VERSION or {jvm.DEFAULT_KAFKA_VERSION})")
    p.add_argument("--force", action="store_true",
                   help="rebuild both images even if they are up to date")
    p.set_defaults(func=cmd_image)


def cmd_image(args: argparse.Namespace) -> int:
    import docker

    from verifier.harness.containers.engine import require_engine
    from verifier.harness.containers.image import kafka_image, remove_images

    require_engine()
    client = docker.from_env()
    try:
        if args.force:
            remove_images(client, args.kafka_version)
        built = kafka_image(client, args.kafka_version)
    finally:
        client.close()
    how = "built" if built.built else "up to date, reused"
    print(f"{built.tag} ({built.image_id[7:19]}): {how} in {built.seconds:.1f} s")
    return 0
