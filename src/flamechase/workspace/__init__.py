"""Workspace: everything flamechase does to the user's source tree and the lanes' copies of it.

Owns: measuring the source before any copy (`stats`), private snapshots made under a temporary
name and renamed into place (`snapshots`), the per-source advisory lock (`locks`), the
control-path identity guard for the run directory (`guard`), reading agent-written
checkpoints (`checkpoints`) and refusing workspaces and state homes a run must not start from
(`checks`).
Must not touch: the run database (the engine stores what these modules return), agent processes,
or anything outside the paths it is given. Imports only `flamechase.errors` and
`flamechase.fsutil`.
"""
