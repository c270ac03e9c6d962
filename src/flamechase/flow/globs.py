"""File globs for flows that give agents files of their own (see `flamechase.globs`, a leaf
module so the runtime's small programs load it without the flow API)."""

from flamechase.globs import Glob, GlobError, any_match, matches, overlap, parse

__all__ = ["Glob", "GlobError", "any_match", "matches", "overlap", "parse"]
