"""Text from outside (an index, a flow, a report, an agent) made safe to show on a terminal.

A terminal obeys what it is sent: `ESC ] 52` writes the user's clipboard, `ESC ] 8` makes a
hyperlink, CSI moves the cursor and rewrites what was printed, CR and backspace overwrite it,
a DCS or APC talks to the terminal itself. `printable()` drops every such sequence whole (a
string sequence with its payload, up to its terminator) and every other C0 and C1 control and
bidirectional override, so what is printed is only the text.
`printable_json()` keeps a JSON document's data whole and escapes the few controls JSON
leaves raw. The CLI's echo and the live view apply them where text leaves for the terminal.
"""

from __future__ import annotations

import re

__all__ = ["echo", "echo_json", "printable", "printable_json"]

# ESC or its C1 form opens a sequence. A string sequence (OSC, DCS, SOS, PM, APC) goes with
# its payload up to ST (ESC \ or U+009C) or BEL; an unterminated one loses its opener only
# (its payload stays as text: it cannot swallow the text printed after it). CSI goes to its
# final byte; any other escape is ESC, intermediates and one final byte.
_SEQUENCE = re.compile(
    r"(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)"
    r"|(?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]?"
    r"|\x1b[\x20-\x2f]*[\x30-\x7e]?"
)
# What is left that a terminal would act on, or that reorders what is shown.
_CONTROLS = [
    *range(0x00, 0x20),
    *range(0x7F, 0xA0),
    0x061C,
    0x200E,
    0x200F,
    *range(0x202A, 0x202F),
    *range(0x2066, 0x206A),
]
_LINES = {0x0A: "\n", 0x09: "\t", 0x2028: "\n", 0x2029: "\n"}
_MULTI = {c: _LINES.get(c) for c in [*_CONTROLS, 0x2028, 0x2029]}
_SINGLE = {c: " " if c in _LINES else None for c in [*_CONTROLS, 0x2028, 0x2029]}
_JSON_RAW = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")


def printable(text: str, *, lines: bool = False) -> str:
    """`text` without control sequences or control characters. With `lines`, newlines and
    tabs stay (a multi-line text); without, each becomes a space (one line stays one)."""
    if text.isprintable():
        return text  # the common case: nothing to drop (False for any control or newline)
    return _SEQUENCE.sub("", text).translate(_MULTI if lines else _SINGLE)


def printable_json(document: str) -> str:
    """A JSON document with the controls `json.dumps` leaves raw (DEL, C1, bidirectional
    overrides, line separators) as `\\uXXXX` escapes: the same data, nothing for a terminal
    to act on. (JSON escapes C0 itself; these can only be inside strings.)"""
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m.group()):04x}", document)


def echo(text: str = "", *, err: bool = False, nl: bool = True, lines: bool = False) -> None:
    """Print `text`, which may hold what an index, a flow, a report or an agent wrote: with
    every terminal control sequence and character dropped, and on one line unless `lines`.
    Every command (the CLI's own and those a flow adds) prints through here or `echo_json`."""
    import click

    click.echo(printable(text, lines=lines), err=err, nl=nl)


def echo_json(document: str, *, err: bool = False) -> None:
    """Print a JSON document with the controls JSON leaves raw escaped (the same data)."""
    import click

    click.echo(printable_json(document), err=err)
