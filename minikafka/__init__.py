"""minikafka: a single-node Apache Kafka-protocol broker in Python."""

__version__ = "0.1.0"
