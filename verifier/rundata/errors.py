"""The project's one error tree.

Every error the CLI reports to a user derives from :class:`VerifierError`. Exceptions
carry objects (what was expected, what was seen, which command failed); the message is
rendered from them, so callers can still inspect the parts.
"""

from __future__ import annotations

from dataclasses import dataclass, field


class VerifierError(Exception):
    """Base of every error this project raises on purpose."""

    #: process exit code the CLI uses for this error (DESIGN §7: 2 = could not complete)
    exit_code: int = 2


class UsageError(VerifierError):
    """Bad input from the user: bad config, bad flags, bad files."""

    exit_code = 64


class EnvironmentProblem(VerifierError):
    """The machine lacks something the tool needs (Java, Maven, a free port, jars)."""


@dataclass
class CommandFailed(EnvironmentProblem):
    """An external command (mvn, java) failed."""

    command: list[str]
    returncode: int
    output_tail: str = ""
    hint: str = ""

    def __str__(self) -> str:
        cmd = " ".join(self.command)
        text = f"command failed (exit {self.returncode}): {cmd}"
        if self.output_tail:
            text += f"\n--- last output ---\n{self.output_tail.rstrip()}"
        if self.hint:
            text += f"\n{self.hint}"
        return text


@dataclass
class WaitTimeout(VerifierError):
    """A condition did not hold before its deadline."""

    what: str
    expected: str
    observed: str
    seconds: float
    details: dict = field(default_factory=dict)

    def __str__(self) -> str:
        return (
            f"timed out after {self.seconds:.0f}s waiting for {self.what}: "
            f"expected {self.expected}; observed {self.observed}"
        )


class ClusterError(VerifierError):
    """The local cluster cannot be started, found or controlled."""


class Interrupted(KeyboardInterrupt):
    """The tool was asked to stop by a signal (SIGTERM, SIGINT, SIGHUP): not an error of
    the run, so not a :class:`VerifierError`; every ``except KeyboardInterrupt`` treats it
    as Ctrl-C. The run heals and stops, its folder says so, the CLI exits 130."""
