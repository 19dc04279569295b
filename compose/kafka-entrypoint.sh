#!/bin/sh
# The entrypoint of the delivery-verifier-kafka image: one combined broker+controller
# KRaft node. Its configuration comes in the environment, so the same image serves the
# tool's docker environment and compose/docker-compose.yml:
#   KAFKA_PROPERTIES        server.properties lines shared by every node
#   KAFKA_NODE_PROPERTIES   this node's lines (node.id, listeners, ...); they win
#   KAFKA_CLUSTER_ID        the id the storage is formatted with (same on every node)
#   KAFKA_HEAP_OPTS, KAFKA_JVM_OPTS  JVM options (defaults below)
# The storage (log.dirs, default /var/lib/kafka/data) is formatted on the first start
# only, so a killed or stopped container starts again on its data.
set -eu
conf=/opt/kafka/config/server.properties
printf '%s\n%s\n' "${KAFKA_PROPERTIES:-}" "${KAFKA_NODE_PROPERTIES:-}" > "$conf"
grep_log_dirs() {
  # the last log.dirs line (later lines win, as in java.util.Properties)
  dirs=/var/lib/kafka/data
  while IFS= read -r line; do
    case "$line" in log.dirs=*) dirs="${line#log.dirs=}" ;; esac
  done < "$conf"
  echo "$dirs"
}
data=$(grep_log_dirs)
mkdir -p "$data"
set -f  # the classpath wildcard is for java, not the shell
java_cmd="java ${KAFKA_HEAP_OPTS:--Xms256m -Xmx512m} ${KAFKA_JVM_OPTS:--XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:+ExitOnOutOfMemoryError -Djava.awt.headless=true} ${KAFKA_LOG4J_OPTS:-} -cp /opt/kafka/libs/*"
if [ ! -f "$data/meta.properties" ]; then
  : "${KAFKA_CLUSTER_ID:?KAFKA_CLUSTER_ID is needed to format the storage}"
  # shellcheck disable=SC2086
  $java_cmd kafka.tools.StorageTool format -t "$KAFKA_CLUSTER_ID" -c "$conf" --ignore-formatted
fi
# shellcheck disable=SC2086
exec $java_cmd kafka.Kafka "$conf"
