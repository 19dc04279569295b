"""The project's one error tree.

Every error the CLI reports to a user derives from :class:`VerifierError`; its
``exit_code`` is the command's (DESIGN §7: 2 could not complete, 64 usage). Exceptions
carry objects (what was expected, what was seen, which command failed); the message is
rendered from them, so callers can still inspect the parts. The tree::

    VerifierError (2)
    ├── UsageError (64)          bad input: config, flags, files, scenarios
    │   ├── PipelineError        a pipeline under test breaks its contract
    │   │                        (streaming.pipelines.contract)
    │   └── PipelineFileError    a pipeline file whose INPUT, make_record, SAMPLES or
    │                            oracle names break the contract
    │                            (verifier.rundata.pipeline_file)
    ├── EnvironmentProblem       the machine lacks something (Java, a port, jars)
    │   └── CommandFailed        an external command (mvn, java) failed
    ├── WaitTimeout              a condition did not hold before its deadline
    ├── ClusterError             the local cluster cannot be started or controlled
    ├── ClusterUnreachable       a load generator could not reach Kafka
    ├── ProcessError             a managed child process could not be started or controlled
    ├── BrokerConfigError        a broker refused or does not know a setting
    ├── TargetError              a fault's target could not be resolved
    │                            (verifier.harness.faults.targets)
    ├── ProxyControlError        the fault proxy's control interface refused a call
    │                            (verifier.harness.faults.control)
    ├── HistoryError             a history file cannot be read or appended to
    │                            (verifier.rundata.history)
    └── RunFormatError           a run file is missing, corrupt or of an unknown format
                                 (verifier.rundata.formats)
    Interrupted                  a signal asked the tool to stop (a KeyboardInterrupt, 130)

The few exceptions outside the tree never reach a user: each is caught by the code that
called for it, within its package, to end a loop or mark one input (a shrink's spent
budget, a wait's probe giving up, a record value that is not the tool's, bytes that are
not a Kafka frame, a proxy rule's bad parameters, answered as a refusal).
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


class ClusterUnreachable(VerifierError):
    """A load generator could not reach Kafka (the generator exits 2)."""


class ProcessError(VerifierError):
    """A managed process could not be started or controlled."""


class BrokerConfigError(VerifierError):
    """A broker refused or does not know a setting the scenario needs."""


class Interrupted(KeyboardInterrupt):
    """The tool was asked to stop by a signal (SIGTERM, SIGINT, SIGHUP): not an error of
    the run, so not a :class:`VerifierError`; every ``except KeyboardInterrupt`` treats it
    as Ctrl-C. The run heals and stops, its folder says so, the CLI exits 130."""
