"""The exceptions that several parts of attnlab raise and catch."""


class ParameterError(ValueError):
    """A notebook parameter has a bad name, type or value."""


class TrainingDiverged(RuntimeError):
    """The loss became NaN or infinite."""


class ArtifactError(RuntimeError):
    """An artifact could not be fetched, verified or extracted (the message says what to do)."""
