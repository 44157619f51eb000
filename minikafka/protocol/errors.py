"""Kafka error codes (re-exported from kio) and the protocol layer's own exceptions."""

from typing import NamedTuple

from kio.schema.errors import ErrorCode

__all__ = ["ErrorCode", "FramingError", "UnsupportedVersion", "CorruptRecord", "InvalidRecord",
           "InvalidTimestamp", "RecordError"]


class FramingError(Exception):
    """A frame or request header/body that cannot be decoded: the connection is closed."""


class UnsupportedVersion(FramingError):
    """An API key or version the broker does not serve (ApiVersions gets a v0 error reply instead)."""

    def __init__(self, api_key: int, api_version: int, correlation_id: int) -> None:
        super().__init__(f"unsupported api_key={api_key} api_version={api_version}")
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id


class CorruptRecord(Exception):
    """A record batch whose size, magic or CRC is wrong (Kafka: CorruptRecordException)."""

    error_code = ErrorCode.corrupt_message


class RecordError(NamedTuple):
    """One refused record of a batch: Produce v8+ `record_errors` (KIP-467)."""

    batch_index: int
    message: str


class InvalidRecord(Exception):
    """A record batch that is well-formed but not acceptable (Kafka: InvalidRecordException, or a
    RecordValidationException wrapping one, which carries the per-record errors)."""

    error_code = ErrorCode.invalid_record

    def __init__(self, message: str, record_errors: tuple[RecordError, ...] = ()) -> None:
        super().__init__(message)
        self.record_errors = record_errors


class InvalidTimestamp(InvalidRecord):
    """A record timestamp outside message.timestamp.before/after.max.ms (Kafka: INVALID_TIMESTAMP)."""

    error_code = ErrorCode.invalid_timestamp
