"""KnowCode's own failures. Bad input raises built-in exceptions (FileNotFoundError, ValueError)."""


class KnowCodeError(Exception):
    """Base of every error KnowCode raises about its own state; the message says what to do next."""


class StoreError(KnowCodeError):
    """The index store cannot be opened, read or written."""


class SchemaVersionError(StoreError):
    """The store was written by a newer KnowCode than this one."""
