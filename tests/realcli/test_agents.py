"""`flamechase agents` with the pinned real CLIs: every version is read (gemini's `--version`
takes seconds) and each is within the tested range."""

from __future__ import annotations

import json

import pytest

from tests.realcli.clis import CLIS, pinned, require
from tests.realcli.conftest import Flamechase

pytestmark = [pytest.mark.realcli, pytest.mark.timeout(120)]


def test_agents_reports_every_pinned_version_as_tested(flamechase: Flamechase) -> None:
    for cli in CLIS:
        require(cli)
    done = flamechase("agents", "--json")
    assert done.returncode == 0, done.stderr
    found = {a["cli"]: a for a in json.loads(done.stdout)}
    for cli, version in pinned().items():
        assert version in (found[cli]["version"] or ""), found[cli]
        assert found[cli]["tested"] is True
