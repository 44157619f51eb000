"""Security (issue 21): listeners and their security protocols, TLS contexts, SASL authentication
and, later, the authorizer.

A room of its own. The broker's doors into it are few and narrow:
- the server asks `listeners.parse_listeners` which sockets to open and `tls.server_context` for
  the TLS ones;
- each connection holds a `session.Session` and asks it, before a request is decoded, whether the
  request may pass (`Session.admit`); the SaslHandshake and SaslAuthenticate handlers drive it;
- the SASL mechanisms (`sasl/plain.py`, `sasl/scram.py`) are pure state machines: bytes in, bytes
  out or a failure, tested without sockets.

Nothing here imports `minikafka.broker`.
"""
