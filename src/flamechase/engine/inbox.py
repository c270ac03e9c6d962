"""Which reports a lane's next turn receives, and what it acknowledges by a valid turn.

At-least-once delivery: a batch is acknowledged only when the consuming lane records a
valid turn; a failed turn leaves it for the partner. Per source and turn at most
DELIVERY_RECORDS records and DELIVERY_BYTES bytes; a single record larger than that is
delivered as a marked stub (it never wedges the queue).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from flamechase.store.reader import Reader

DELIVERY_RECORDS = 12
DELIVERY_BYTES = 128 * 1024


@dataclasses.dataclass(frozen=True, slots=True)
class Batch:
    deliveries: list[dict[str, Any]]
    acks: dict[str, int]  # source lane -> last seq delivered


def unread(reader: Reader, consumer: str, sources: Sequence[str]) -> Batch:
    """The next batch for `consumer` from every other lane in `sources`. Moves no cursor."""
    cursors = reader.cursors(consumer)
    deliveries: list[dict[str, Any]] = []
    acks: dict[str, int] = {}
    for source in sources:
        if source == consumer:
            continue
        start = cursors.get(source, 0)
        used = 0
        last = start
        for d in reader.reports_after(source, start, DELIVERY_RECORDS):
            if d.bytes > DELIVERY_BYTES:
                if used:
                    break
                # Alone and too big: deliver a stub so later reports are not held behind it.
                deliveries.append(
                    {
                        "report_id": d.report_id,
                        "lane": d.lane,
                        "stub": True,
                        "bytes": d.bytes,
                        "report": {
                            "status": d.record.get("status"),
                            "summary": str(d.record.get("summary", ""))[:2000],
                            "artifacts": d.record.get("artifacts", []),
                        },
                        "note": "report too large to deliver whole; its summary and artifacts "
                        "are shown; see `flamechase events` for the rest",
                    }
                )
                last = d.seq
                break
            if used + d.bytes > DELIVERY_BYTES and used:
                break
            deliveries.append({"report_id": d.report_id, "lane": d.lane, "report": d.record})
            used += d.bytes
            last = d.seq
        if last > start:
            acks[source] = last
    return Batch(deliveries, acks)
