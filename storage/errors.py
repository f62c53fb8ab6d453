"""Storage errors: a damaged tensor file, and a document or conversation that is not stored."""


class StorageError(Exception):
    """Base of storage errors whose message can be shown to the user as one line."""


class DamagedFile(StorageError):
    """A tensor file that is missing, truncated or fails its checksum; `reason` says which, in a few words."""

    def __init__(self, path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class NotStored(StorageError):
    """A document, pot or conversation id that names nothing in the database."""
