"""The one error the engine raises: bad input, named by the request field it concerns."""


class EngineError(ValueError):
    """Input the arithmetic cannot use.

    ``field`` names the request field (``counts``, ``eta``, ``weights``…); the message always
    names it too, so ``str(error)`` can be shown on its own.
    """

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.message = message if message.startswith(field) else f"{field}: {message}"
        super().__init__(self.message)
