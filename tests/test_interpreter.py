"""Which argv start Python isolated, and the argv the runtime starts its own programs with."""

from __future__ import annotations

import sys

import pytest

from flamechase.interpreter import runtime_module, runtime_shell, scrubbed, unisolated

PY = sys.executable


@pytest.mark.parametrize(
    "argv",
    [
        (PY, "-m", "flamechase.tools.git_pr.gitpr"),
        ("python3", "-m", "x"),
        ("/usr/bin/python3.11", "script.py"),
        (PY, "-P", "-m", "x"),  # the working directory is off the path; PYTHONPATH is not
        (PY, "-X", "I", "-m", "x"),  # -X takes a value: "I" there is not the flag
        ("/usr/bin/env", "FOO=1", "python3", "-c", "pass"),
    ],
)
def test_python_without_isolation_is_unisolated(argv: tuple[str, ...]) -> None:
    assert unisolated(argv)


@pytest.mark.parametrize(
    "argv",
    [
        runtime_module("flamechase.tools.git_pr.gitpr", "checkout"),
        (PY, "-Im", "x"),
        (PY, "-B", "-I", "script.py"),
        (PY, "-P", "-s", "-E", "-m", "x"),
        ("/bin/sh", "-c", "python3 -m x"),  # not Python itself: not judged here
        ("git", "status"),
        (),
    ],
)
def test_isolated_python_and_other_programs_are_not(argv: tuple[str, ...]) -> None:
    assert not unisolated(argv)


def test_the_runtime_starts_its_programs_with_this_interpreter_isolated() -> None:
    assert runtime_module("m", "a") == (PY, "-I", "-m", "m", "a")
    assert runtime_shell().endswith(" -I -m flamechase")
    assert scrubbed({"PYTHONPATH": "/x", "PYTHONSTARTUP": "/y", "PATH": "/bin"}) == {"PATH": "/bin"}
