"""Errors a user can cause; the CLI and UI show their message as one line, never a traceback."""


class InfiniPotError(Exception):
    """Base of user-facing engine errors."""


class ModelError(InfiniPotError):
    """The model cannot be found, loaded, or used (e.g. it has no rotary position embedding)."""


class PotTooSmallError(InfiniPotError):
    """The pot settings leave no room for what was asked (a question, the prompt opening, reading itself)."""


class FullContextError(InfiniPotError):
    """The uncompressed method cannot hold the whole document (memory or the model's context is too small)."""


class AnswerStopped(InfiniPotError):
    """Its reader stopped the answer (the app's Stop) while the model worked on it (core.stopping)."""
