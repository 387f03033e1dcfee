"""The exceptions that several parts of attnlab raise and catch."""


class ParameterError(ValueError):
    """A notebook parameter has a bad name, type or value."""


class TrainingDiverged(RuntimeError):
    """The loss became NaN or infinite."""


class ArtifactError(RuntimeError):
    """An artifact could not be fetched, verified or extracted (the message says what to do)."""


class DataUnavailable(ArtifactError):
    """An artifact's registry no longer serves it and no copy is on disk: what needs it cannot run here (the
    message says why and where a copy would go). Experiments catch it and report the part as not testable,
    quoting ``reason`` (short, and the same on every machine: no paths)."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason

    def __reduce__(self) -> tuple[type, tuple[str, str]]:  # intact across processes (worker -> notebook)
        return type(self), (str(self), self.reason)


class CorruptFile(RuntimeError):
    """A file the project wrote earlier fails its check on reading: its SHA-256 differs from the one recorded
    when it was written, its checksum record is missing, or it cannot be parsed. The message names the file
    and what to do; callers that can rebuild the file from a verified source catch it and do so."""

    def __init__(
        self, path: object, problem: str, remedy: str = "delete it and run again to rebuild it"
    ) -> None:
        self.path = path
        self.problem = problem
        self.remedy = remedy
        super().__init__(f"{path}: {problem}; {remedy}")

    def __reduce__(self) -> tuple[type, tuple[object, str, str]]:  # intact across processes
        return type(self), (self.path, self.problem, self.remedy)


class ConfigError(ValueError):
    """A configuration field has a bad type or value; the message names the class and the field."""
