"""What a connection knows about the client at its other end: the client id of its requests and
the software name and version it sent in ApiVersions (v3+, KIP-511). Used to say who asked when a
client asks for an API or version the broker does not serve (one warning per connection)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class ClientInfo:
    client_id: str | None = None
    software_name: str | None = None
    software_version: str | None = None
    warned_unsupported: bool = False

    def saw_request(self, api_key: int, client_id: str | None, body: object) -> None:
        if client_id is not None:
            self.client_id = client_id
        if api_key == 18:  # ApiVersions: the client names its software (empty before v3)
            self.software_name = getattr(body, "client_software_name", None) or self.software_name
            self.software_version = getattr(body, "client_software_version", None) or self.software_version
