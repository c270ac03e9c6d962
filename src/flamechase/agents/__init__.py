"""Agents: how one role's program is started, spoken to, timed out and paid for.

Owns the agent-spec grammar, the backend interface every agent kind implements (`exec:`,
`sim`, the real CLIs), usage/cost accounting per turn, and the process handling under it.
Must not touch run state, lanes, reports or the database: a backend gets a `TurnRequest`
and returns `Answer` values; the control loop decides what they mean.
"""
