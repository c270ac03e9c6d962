"""flamechase: run teams of AI coding agents on one objective, in parallel, unattended."""

__version__ = "0.1.0"
