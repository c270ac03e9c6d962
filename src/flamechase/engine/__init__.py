"""Engine: everything generic about a run, around a flow that only decides.

Owns preparation (refusals before anything is written), opening and crash recovery, the
control loop (admission against budgets, rests, holds, pauses, signals), the single writer of
run state (`ledger`), places, the blob store, measurements, and the executor seam that turns
run behind. Must not name a flow, a role or a flow-specific param: it knows flows only through
`flamechase.flow` and `flamechase.events`. Nothing else may open a `store.db.Writer`.
"""
