"""Workspace: everything flamechase does to the user's source tree and the lanes' copies of it.

Owns: measuring the source before any copy (`stats`), private snapshots made under a temporary
name and renamed into place (`snapshots`), the per-source advisory lock (`locks`), the
control-path identity guard for the run directory (`guard`) and reading agent-written
checkpoints (`checkpoints`).
Must not touch: the run database (the engine stores what these modules return), agent processes,
or anything outside the paths it is given. Imports only `flamechase.errors` and
`flamechase.fsutil`.
"""
