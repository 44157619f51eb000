"""Typed storage failures; handlers map them to Kafka error codes in one place each."""

from minikafka.protocol.errors import ErrorCode


class StorageError(Exception):
    error_code = ErrorCode.unknown_server_error


class StartupError(Exception):
    """The data directory cannot be used as it is; the message is the one line an operator sees
    (which file, what is wrong, what to do) instead of a traceback."""


class OffsetOutOfRange(StorageError):
    error_code = ErrorCode.offset_out_of_range


class MessageTooLarge(StorageError):
    error_code = ErrorCode.message_too_large


class KafkaStorageError(StorageError, OSError):
    """A disk operation failed (no space, I/O error, read-only file system) and nothing was
    written: Kafka's KAFKA_STORAGE_ERROR (56). Also an OSError, so callers that guard against any
    I/O failure (the coordinators, through their RecordLog port) catch it as one."""

    error_code = ErrorCode.kafka_storage_error


class CorruptSegment(StorageError):
    """A segment file that fails validation while it is read."""

    error_code = ErrorCode.corrupt_message
