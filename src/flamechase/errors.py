"""Every error flamechase raises on purpose, and the exit code each one maps to.

    FlamechaseError                     exit 1 unless a subclass says otherwise
    ├── UsageError                      exit 2: refused before anything ran
    │   ├── SpecError                   a malformed -a agent spec
    │   ├── ParamError                  unknown / out-of-range -p key, bad budget value
    │   ├── FlowNotFound                -f names no flow
    │   │   ├── FlowSourceUnreachable   a git+ flow's repository could not be reached / cloned
    │   │   ├── FlowPinMoved            a tag now names another commit than the pinned one
    │   │   └── FlowUnsafe              a pinned flow's commit links out of the flow, or holds a
    │   │                               submodule: what would run is not the commit's own code
    │   ├── FlowIndexError              a flow index is unreadable, or has no such flow/version
    │   ├── ProfileError                a profile is missing or malformed
    │   ├── RoleError                   unknown role, role given twice, role without an agent
    │   ├── TaskError                   empty task, not UTF-8, `continue` without TASK.md
    │   ├── WorkspaceInvalid            the workspace is not a directory, was deleted, or is
    │   │                               /, a system directory or the home (--allow-workspace)
    │   ├── NothingToResume             --resume with no compatible run
    │   ├── RunAlreadyEnded             the same command again, and resuming the run it
    │   │                               ended would change nothing (say what, or start fresh)
    │   ├── LockHeld                    another run owns this source tree
    │   ├── LargeCopyRefused            oversized copy needs a confirmation nobody gave
    │   ├── BackendUnavailable          the CLI is not installed / effort unknown / no price
    │   ├── SandboxUnavailable          -p sandbox=... cannot confine agents on this machine
    │   ├── StateHomeInvalid            FLAMECHASE_HOME is a file, or inside the workspace
    │   ├── RunNotFound                 RUN names no run
    │   ├── FlowChanged                 a resume would run other flow code than the run's
    │   ├── FlowRefused                 the flow's declarations are wrong, or its code broke,
    │   │                               before its run was made (roles(), lanes(), Params)
    │   ├── ExecutorUnavailable         --executor ray without Ray, or its cluster unreachable
    │   ├── PrRefused                   `flamechase pr` outside a lane's turn, off a lane
    │                                   branch, or before the branch was pushed
    │   └── MachineWorkError            `flamechase job`/`lock` outside a turn, unknown job
    ├── RunFailed                       the run ended as `failed` (planning failed, ...)
    │   ├── ControlPathViolation        a control path was replaced or linked
    │   ├── FlowError                   the flow broke its contract (a flow bug)
    │   │   ├── FlowCommandError        a command contradicts the flow's declarations or what
    │   │   │                           the run did (unknown role, lane or place, ...)
    │   │   ├── FlowCodeError           the flow's own code raised, exited or never returned
    │   │   │                           (its traceback is kept in the run directory)
    │   │   └── FlowSpins               decide() asked again and again, and nothing happened
    │   ├── DiskFull                    a file system the run writes is full
    │   └── PortsExhausted              every lane port block is held by a live lane
    ├── StoreError                      the run database is unreadable / wrong schema
    ├── ArtifactError                   an artifact failed verification on extraction
    └── SnapshotFailed                  a workspace snapshot could not be made

Turn-level problems (an agent that crashes, a report that does not parse) are *not* exceptions:
a failed turn is data, recorded by the control loop. Each message is one line naming the value at
fault and what to do about it.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_HELD = 3
EXIT_SIGNAL = 130


class FlamechaseError(Exception):
    """Base of all deliberate flamechase errors."""

    exit_code = EXIT_FAILED


class UsageError(FlamechaseError):
    """The command line, config or environment was refused before anything was written.

    Fix the named value and run the command again.
    """

    exit_code = EXIT_USAGE


class SpecError(UsageError):
    """An agent spec did not parse: use CLI[@ACCOUNT]/MODEL[:EFFORT] or exec:PATH."""


class ParamError(UsageError):
    """A -p/-c key is unknown or its value is invalid; the message lists the valid form."""


class FlowNotFound(UsageError):
    """-f named no built-in flow and no flow directory."""


class FlowSourceUnreachable(FlowNotFound):
    """A `git+` flow (or an index's repository) could not be reached, cloned or checked out."""


class FlowPinMoved(FlowNotFound):
    """A tag now names another commit than the one it was pinned to; --refresh re-pins it."""


class FlowUnsafe(FlowNotFound):
    """A pinned flow's directory holds a symlink that leads out of it, or a submodule, or its
    #SUBDIR leads out of the repository: the code that would run is not the commit's own."""


class FlowIndexError(UsageError):
    """A flow index could not be read, or has no flow (or version) of that name, or an
    installed flow does not verify against the commit its index recorded."""


class ProfileError(UsageError):
    """A profile (the agents and params `flamechase run FLOW` uses) is missing or malformed."""


class RoleError(UsageError):
    """An -a role is unknown, given twice, or a flow role has no agent."""


class TaskError(UsageError):
    """The TASK is empty or not UTF-8, or `continue` found neither TASK.md nor a run to
    resume."""


class WorkspaceInvalid(UsageError):
    """The workspace (current directory) is not a usable directory: missing, deleted, or a
    system directory or the user's home (which lane 1 would write; --allow-workspace)."""


class NothingToResume(UsageError):
    """--resume found no compatible run of this flow, workspace and task."""


class RunAlreadyEnded(UsageError):
    """The run this command would resume ended, and nothing given now would change that."""


class LockHeld(UsageError):
    """Another flamechase run owns this source tree; wait for it or stop it."""


class LargeCopyRefused(UsageError):
    """The source is over the large-copy thresholds and nobody confirmed the copies."""


class BackendUnavailable(UsageError):
    """An agent's CLI is missing, its effort unknown, or its spend cannot be bounded."""


class RunNotFound(UsageError):
    """RUN matched no run id, prefix, or `last`."""


class FlowChanged(UsageError):
    """The run was made by other flow code; resume with --refresh to run the new code."""


class FlowRefused(UsageError):
    """Before its run was made, the flow declared what cannot run (a lane twice, a lane's
    role it does not list) or its code broke (`roles()` raised); `traceback` is the flow's."""

    def __init__(self, message: str, traceback: str = "") -> None:
        super().__init__(message)
        self.traceback = traceback


class RunFailed(FlamechaseError):
    """The run ended with status `failed`; `flamechase status RUN` shows why."""


class ControlPathViolation(RunFailed):
    """A run-directory control path was replaced, linked or swapped; the run stops."""


class FlowError(RunFailed):
    """The flow broke its contract (asked for nothing and did not end, or never settled)."""


class FlowCommandError(FlowError):
    """A command the flow returned contradicts its declarations (an unknown role, lane or
    place, a lane option on a turn outside lanes, a bad `FinishRun` status) or what the run
    already did (two roles on one turn of a lane, a measurement asked for after its answer)."""


class FlowCodeError(FlowError):
    """The flow's own code raised (SystemExit and KeyboardInterrupt included), returned what
    its contract forbids, or did not return when the run had to stop. `traceback` is the
    flow's own (or, for a call that never returned, where it was); `status` is how the run
    ends: `failed`, or `stopped` when a signal ended a call that never returned."""

    def __init__(self, message: str, traceback: str = "", status: str = "failed") -> None:
        super().__init__(message)
        self.traceback = traceback
        self.status = status


class FlowSpins(FlowError):
    """The flow's `decide()` was asked again and again with nothing happening in between (no
    event, no job started or ended): it waits for something it never asks for."""


class DiskFull(RunFailed):
    """A file system the run writes to is full; free space there and resume the run."""


class PortsExhausted(RunFailed):
    """Every port block of the lanes' range is held by a live run's lane or listened on."""


class StoreError(FlamechaseError):
    """The run database could not be read or written."""


class ArtifactError(FlamechaseError):
    """An artifact did not verify against its recorded hash, or would escape its target."""


class SnapshotFailed(FlamechaseError):
    """A private copy of the source could not be made (disk full, unreadable file, ...)."""


class SandboxUnavailable(UsageError):
    """The confinement asked for (-p sandbox=...) cannot run here; the message says why and
    which sandbox value would run (sandbox=off only when said explicitly)."""


class StateHomeInvalid(UsageError):
    """FLAMECHASE_HOME (or the default state home) is not a usable directory, or lies where
    an agent could write it (inside the workspace)."""


class ExecutorUnavailable(UsageError):
    """`--executor` names a place turns cannot run: Ray is not installed, or its cluster
    cannot be reached or does not match this flamechase; the message says what to do."""


class PrRefused(UsageError):
    """`flamechase pr` could not ask the runtime: not inside a lane's turn of a PR flow, not on
    one of the lane's branches, or the branch is not pushed; the message says which."""


class MachineWorkError(UsageError):
    """`flamechase job` or `flamechase lock` cannot do what was asked: no job or lock directory
    (outside a flamechase turn, without --dir), or no such job."""
