"""The observe room (issue 22): what the broker is doing, for people and for Prometheus.

- meters.py: the only part the hot paths touch (Produce, Fetch, the connection loop, the
  transaction coordinator's listeners add to plain counters);
- ports.py / model.py: the one read-only door into the broker (implemented by
  broker/observation.py) and the frozen values it answers with;
- metrics.py: `/metrics` with Apache Kafka's names as the Prometheus JMX exporter renders them;
- console/: the web console (server-rendered pages, refreshed in place), read-only but for two
  actions behind `--console-actions`;
- server.py: the opt-in HTTP server on the broker's event loop;
- dashboards/minikafka.json: a Grafana dashboard over these metrics only.

The room imports nothing of the broker, storage or coordinators (tests/unit/test_architecture.py);
prometheus_client, aiohttp and Jinja are imported only when an endpoint is switched on, so a
broker without them starts as fast as before.
"""
