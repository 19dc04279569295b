"""The Java client's producer settings, by name: what `--client java` runs verbatim and
what a typo is measured against (producers.properties, producers.checkconfig)."""

from __future__ import annotations

#: kafka-clients' producer settings (``ProducerConfig.configNames()``, kafka-clients 4.1.1):
#: on ``--client java`` each runs verbatim; a key close to one of these is a typo
JAVA_PRODUCER_KEYS = frozenset("""
acks batch.size bootstrap.servers buffer.memory client.dns.lookup client.id
compression.gzip.level compression.lz4.level compression.type compression.zstd.level
connections.max.idle.ms delivery.timeout.ms enable.idempotence enable.metrics.push
interceptor.classes key.serializer linger.ms max.block.ms
max.in.flight.requests.per.connection max.request.size metadata.max.age.ms
metadata.max.idle.ms metadata.recovery.rebootstrap.trigger.ms metadata.recovery.strategy
metric.reporters metrics.num.samples metrics.recording.level metrics.sample.window.ms
partitioner.adaptive.partitioning.enable partitioner.availability.timeout.ms
partitioner.class partitioner.ignore.keys receive.buffer.bytes reconnect.backoff.max.ms
reconnect.backoff.ms request.timeout.ms retries retry.backoff.max.ms retry.backoff.ms
sasl.client.callback.handler.class sasl.jaas.config sasl.kerberos.kinit.cmd
sasl.kerberos.min.time.before.relogin sasl.kerberos.service.name
sasl.kerberos.ticket.renew.jitter sasl.kerberos.ticket.renew.window.factor
sasl.login.callback.handler.class sasl.login.class sasl.login.connect.timeout.ms
sasl.login.read.timeout.ms sasl.login.refresh.buffer.seconds
sasl.login.refresh.min.period.seconds sasl.login.refresh.window.factor
sasl.login.refresh.window.jitter sasl.login.retry.backoff.max.ms sasl.login.retry.backoff.ms
sasl.mechanism sasl.oauthbearer.assertion.algorithm sasl.oauthbearer.assertion.claim.aud
sasl.oauthbearer.assertion.claim.exp.seconds sasl.oauthbearer.assertion.claim.iss
sasl.oauthbearer.assertion.claim.jti.include sasl.oauthbearer.assertion.claim.nbf.seconds
sasl.oauthbearer.assertion.claim.sub sasl.oauthbearer.assertion.file
sasl.oauthbearer.assertion.private.key.file
sasl.oauthbearer.assertion.private.key.passphrase sasl.oauthbearer.assertion.template.file
sasl.oauthbearer.client.credentials.client.id
sasl.oauthbearer.client.credentials.client.secret sasl.oauthbearer.clock.skew.seconds
sasl.oauthbearer.expected.audience sasl.oauthbearer.expected.issuer
sasl.oauthbearer.header.urlencode sasl.oauthbearer.jwks.endpoint.refresh.ms
sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms
sasl.oauthbearer.jwks.endpoint.retry.backoff.ms sasl.oauthbearer.jwks.endpoint.url
sasl.oauthbearer.jwt.retriever.class sasl.oauthbearer.jwt.validator.class
sasl.oauthbearer.scope sasl.oauthbearer.scope.claim.name sasl.oauthbearer.sub.claim.name
sasl.oauthbearer.token.endpoint.url security.protocol security.providers send.buffer.bytes
socket.connection.setup.timeout.max.ms socket.connection.setup.timeout.ms
ssl.cipher.suites ssl.enabled.protocols ssl.endpoint.identification.algorithm
ssl.engine.factory.class ssl.key.password ssl.keymanager.algorithm
ssl.keystore.certificate.chain ssl.keystore.key ssl.keystore.location
ssl.keystore.password ssl.keystore.type ssl.protocol ssl.provider
ssl.secure.random.implementation ssl.trustmanager.algorithm ssl.truststore.certificates
ssl.truststore.location ssl.truststore.password ssl.truststore.type transaction.timeout.ms
transaction.two.phase.commit.enable transactional.id value.serializer
""".split())
