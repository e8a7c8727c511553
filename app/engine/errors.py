"""The one error the engine raises: bad input, named by the request field it concerns."""

from collections.abc import Iterator, Mapping
from contextlib import contextmanager


class EngineError(ValueError):
    """Input the arithmetic cannot use.

    ``field`` names the request field (``counts``, ``eta``, ``weights``…); ``message`` always
    names it too, so ``str(error)`` can be shown on its own; ``reason`` is the bare explanation.
    """

    def __init__(self, field: str, reason: str) -> None:
        self.field = field
        self.reason = reason
        self.message = reason if reason.startswith(field) else f"{field}: {reason}"
        super().__init__(self.message)


@contextmanager
def renamed_fields(names: Mapping[str, str]) -> Iterator[None]:
    """Re-raise errors of an inner call under the caller's request fields (counts → weights)."""
    try:
        yield
    except EngineError as error:
        if error.field not in names:
            raise
        raise EngineError(names[error.field], error.reason) from error
