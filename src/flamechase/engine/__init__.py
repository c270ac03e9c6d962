"""Engine: the control loop, the single writer of run state.

Owns run preparation (objective, resume decision, budgets, lock, run directory), the asyncio
control loop that schedules turns, collects them and commits each in one transaction, the turn
runner (session, repair, checkpoint recovery, artifact freezing, evaluator receipts), report
delivery between lanes, budgets and stopping. Flows and backends only return values; views
only read. Nothing else may open a `store.db.Writer`.
"""
