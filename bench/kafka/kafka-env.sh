# Sourced by the scripts in bench/kafka (not executable on its own).
# Sets: KAFKA_HERE, KAFKA_VERSION, KAFKA_CACHE, KAFKA_BROKER_LIBS, KAFKA_TOOLS_LIBS
#   KAFKA_VERSION  default: the <kafka.version> in pom-broker.xml
#   KAFKA_CACHE    default: <repo>/.cache/kafka (git-ignored); jars go to $KAFKA_CACHE/<version>/{broker,tools}
KAFKA_HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [ -z "${KAFKA_VERSION:-}" ]; then
  KAFKA_VERSION=$(sed -n 's:.*<kafka.version>\([^<]*\)</kafka.version>.*:\1:p' "$KAFKA_HERE/pom-broker.xml" | head -n 1)
fi
KAFKA_CACHE=${KAFKA_CACHE:-$(cd "$KAFKA_HERE/../.." && pwd)/.cache/kafka}
KAFKA_BROKER_LIBS=$KAFKA_CACHE/$KAFKA_VERSION/broker
KAFKA_TOOLS_LIBS=$KAFKA_CACHE/$KAFKA_VERSION/tools
export KAFKA_VERSION KAFKA_CACHE

kafka_require_java() {
  if ! command -v java >/dev/null 2>&1; then
    echo "kafka: java not found on PATH (Kafka 4.x needs Java 17+)" >&2
    return 1
  fi
  local v
  v=$(java -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java\.specification\.version = //p')
  case "$v" in
    1.*|9|1[0-6]) echo "kafka: Java $v found, Kafka 4.x needs Java 17+" >&2; return 1 ;;
  esac
}
