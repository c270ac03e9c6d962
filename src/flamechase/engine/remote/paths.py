"""A job's head paths as a node's paths, and back.

Everything of a run lives under its run directory on the head (places of lanes 2..N, lane
directories, turn directories, the blob store); on a node the same tree is rebuilt under a
node-local root. A `PathMap` moves a path, a text (a prompt names its paths) or a whole job
across; paths outside the run directory (the user's tree, a CLI's state in $HOME) are left
as they are: a node is expected to have the same user and the same agent CLIs. The one
exception is lane 1 on a node (`ray.lane_1=node`): its map moves the user's tree too (`also`),
to the node's copy of it.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from flamechase.engine.executor import MeasureJob, TurnJob, TurnResult
from flamechase.jail import JailSpec
from flamechase.jail.spec import contains


@dataclasses.dataclass(frozen=True, slots=True)
class PathMap:
    """Paths under `src` are moved under `dst` (and under each further pair of `also`);
    anything else stays."""

    src: Path
    dst: Path
    also: tuple[tuple[Path, Path], ...] = ()

    @property
    def pairs(self) -> tuple[tuple[Path, Path], ...]:
        # The deepest first: a path is moved by the most specific pair that holds it.
        pairs = ((self.src, self.dst), *self.also)
        return tuple(sorted(pairs, key=lambda p: len(p[0].parts), reverse=True))

    def reverse(self) -> PathMap:
        return PathMap(self.dst, self.src, tuple((b, a) for a, b in self.also))

    def path(self, p: Path) -> Path:
        for src, dst in self.pairs:
            if contains(src, p):
                return dst / p.relative_to(src)
        return p

    def opt(self, p: Path | None) -> Path | None:
        return None if p is None else self.path(p)

    def paths(self, ps: tuple[Path, ...]) -> tuple[Path, ...]:
        return tuple(self.path(p) for p in ps)

    def text(self, s: str) -> str:
        """`s` with every mention of `src` (as a whole path prefix) made `dst`."""
        # Not a longer name (`run1` in `run10`, `run1.bak`); a sentence's full stop is fine.
        to = {str(src): str(dst) for src, dst in self.pairs}
        pattern = (
            "(" + "|".join(re.escape(str(src)) for src, _ in self.pairs) + ")"
            r"(?![\w-]|\.[\w-])"
        )
        return re.sub(pattern, lambda m: to[m.group(1)], s)

    def env(self, env: Mapping[str, str]) -> dict[str, str]:
        return {k: self.text(v) for k, v in env.items()}

    def jail(self, spec: JailSpec | None) -> JailSpec | None:
        if spec is None:
            return None
        return dataclasses.replace(
            spec,
            place=self.path(spec.place),
            tmp=self.path(spec.tmp),
            turn_dir=self.opt(spec.turn_dir),
            grants=self.paths(spec.grants),
            home=self.opt(spec.home),
            hidden=self.paths(spec.hidden),
            readable=self.paths(spec.readable),
            protected=self.paths(spec.protected),
        )

    def job(self, job: TurnJob) -> TurnJob:
        r = job.request
        request = dataclasses.replace(
            r,
            run_dir=self.path(r.run_dir),
            workspace=self.path(r.workspace),
            io_dir=self.path(r.io_dir),
            prompt=self.text(r.prompt),
            env=self.env(r.env),
            jail=self.jail(r.jail),
        )
        before, after = job.repair
        return dataclasses.replace(
            job,
            request=request,
            repair=(self.text(before), self.text(after)),
            checkpoint=self.opt(job.checkpoint),
            requests=self.opt(job.requests),
        )

    def measure(self, job: MeasureJob, env: Mapping[str, str]) -> MeasureJob:
        """`job` as it runs on the other side, its environment `env` (that side's own)."""
        return dataclasses.replace(
            job, cwd=self.path(job.cwd), env=dict(env), jail=self.jail(job.jail)
        )

    def result(self, result: TurnResult) -> TurnResult:
        """A node's result as the head records it: paths it names are the head's."""
        changes: dict[str, Any] = {}
        if result.transcript:
            changes["transcript"] = self.text(result.transcript)
        if result.error:
            changes["error"] = self.text(result.error)
        return dataclasses.replace(result, **changes) if changes else result
