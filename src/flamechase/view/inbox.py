"""Reports and inboxes as the views' fold knows them: who published what, what each lane was
delivered, acknowledged and integrated, and what is still pending for it.

Report sequence numbers are derived rather than read: `turn_valid.acknowledged` holds {source
lane: seq in the `reports` table}. Each published report takes the next seq in the same
transaction as its event, and the table's AUTOINCREMENT rolls back with a failed transaction,
so the n-th report event is report seq n. From that, the reports a lane has not acknowledged
yet (its pending inbox) are a slice per source lane.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable

from flamechase.events.present import ReportSeen
from flamechase.view.rows import Report

__all__ = ["Inboxes"]

# Words of a summary that could be a report id (`lane-3.0002.2075cf`).
_WORD = re.compile(r"[\w.-]+")


class Inboxes:
    """Every report published so far, and each lane's cursors over them."""

    def __init__(self, *, shares_reports: bool = True) -> None:
        # Journals written before turns said which lanes they read (`turn_started.reads`):
        # whether every lane reads every other's reports, as the built-in flows did then.
        self.shares_reports = shares_reports
        self.reads: dict[str, frozenset[str]] = {}  # consumer lane -> the lanes it reads
        self._reads_said = False  # some turn of this journal said which lanes it reads
        self.reports: list[Report] = []  # by seq - 1
        self.by_id: dict[str, Report] = {}
        self.by_source: dict[str, list[str]] = {}  # source lane -> its report ids, in order
        self.cursors: dict[str, dict[str, int]] = {}  # consumer -> source -> reports acked
        self.received: dict[str, dict[str, None]] = {}  # lane -> delivered ids with artifacts
        self.integrated: list[tuple[str, str, str | None]] = []  # (lane, report id, actor)
        self.delivered = 0

    @property
    def said(self) -> bool:
        """Whether some turn of this journal said which lanes it reads."""
        return self._reads_said

    def report(self, report_id: str) -> ReportSeen | None:
        rep = self.by_id.get(report_id)
        if rep is None:
            return None
        return ReportSeen(rep.report_id, rep.lane, rep.actor, rep.status, rep.artifacts)

    def started(self, lane: str, reads: Iterable[str] | None, delivered: Iterable[str]) -> None:
        """A turn of `lane` starts, reading `reads` (None: the journal does not say)."""
        if reads is not None:
            self.reads[lane] = frozenset(reads)
            self._reads_said = True
        box = self.received.setdefault(lane, {})
        for rid in delivered:
            self.delivered += 1
            rep = self.by_id.get(rid)
            if rep is not None and rep.artifacts:
                box[rid] = None

    def publish(self, rid: str, lane: str, actor: str | None, status: object) -> Report | None:
        """A report enters the log; None when it is there already."""
        if not rid or rid in self.by_id:
            return None
        source = self.by_source.setdefault(lane, [])
        rep = Report(
            report_id=rid,
            lane=lane,
            actor=actor,
            status=None if status is None else str(status),
            seq=len(self.reports) + 1,
            index=len(source),
        )
        self.reports.append(rep)
        self.by_id[rid] = rep
        source.append(rid)
        return rep

    def count_artifacts(self, rid: str, n: int) -> Report | None:
        """A published report's artifacts became known; the report when its count changed."""
        rep = self.by_id.get(rid)
        if rep is None or n == rep.artifacts:
            return None
        rep = dataclasses.replace(rep, artifacts=n)
        self.by_id[rid] = rep
        self.reports[rep.seq - 1] = rep
        return rep

    def ack(self, consumer: str, source: str, seq: int) -> int | None:
        """`consumer` acknowledged `source`'s reports up to `seq`; the new count, if it grew."""
        if not 1 <= seq <= len(self.reports):
            return None
        rep = self.reports[seq - 1]
        if rep.lane != source:
            return None
        have = self.cursors.setdefault(consumer, {})
        count = rep.index + 1
        if count <= have.get(source, 0):
            return None
        have[source] = count
        return count

    def note_integration(self, lane: str, actor: str | None, summary: str) -> None:
        """A valid turn whose summary names a package it was delivered integrated it."""
        box = self.received.get(lane)
        if not box:
            return
        # Look the summary's words up in the box, not the box's ids in the summary: the box
        # keeps every package never integrated, so it grows with the run.
        for word in _WORD.findall(summary):
            if word in box:
                del box[word]
                self.integrated.append((lane, word, actor))

    def pending(self, consumer: str, lanes: Iterable[str]) -> list[str]:
        """Reports of the lanes `consumer` reads that it has not acknowledged, oldest first.

        Which lanes a lane reads is what its last turn said: before its first turn nothing is
        pending. In journals whose turns do not say (flamechase 0.1), every lane of `lanes`
        reads every other one when `shares_reports`."""
        order = list(lanes)
        reads = self.reads.get(consumer)
        if reads is None:
            if self._reads_said or not self.shares_reports or consumer not in order:
                return []
            reads = frozenset(n for n in order if n != consumer)
        have = self.cursors.get(consumer, {})
        out: list[str] = []
        for source in order:
            if source != consumer and source in reads:
                out.extend(self.by_source.get(source, [])[have.get(source, 0) :])
        return out

    def acknowledged(self) -> int:
        return sum(sum(c.values()) for c in self.cursors.values())

    def artifacts(self) -> int:
        return sum(r.artifacts for r in self.reports)
