"""`printable`: what an index, a flow or an agent wrote reaches the terminal as text only."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flamechase.text import printable, printable_json

ESC = "\x1b"
# Every character a terminal acts on, or that reorders what it shows.
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")

# What a hostile string may hold: each attack, and the text around it that must survive.
HOSTILE = [
    (f"a{ESC}]52;c;ZXZpbA=={ESC}\\b", "ab"),  # OSC 52 (clipboard), ST-terminated
    (f"a{ESC}]52;c;ZXZpbA==\x07b", "ab"),  # BEL-terminated
    (f"a{ESC}]52;c;ZXZpbA==", "a52;c;ZXZpbA=="),  # unterminated: its opener goes
    (f"{ESC}]8;;https://evil.example/{ESC}\\click{ESC}]8;;{ESC}\\", "click"),  # OSC 8 link
    (f"x{ESC}P+q544e{ESC}\\y", "xy"),  # DCS (a terminal query)
    (f"x{ESC}_apc payload{ESC}\\y", "xy"),  # APC
    (f"x{ESC}^pm{ESC}\\y{ESC}Xsos{ESC}\\z", "xyz"),  # PM, SOS
    (f"{ESC}[2J{ESC}[1;31mred{ESC}[0m{ESC}[?25l", "red"),  # CSI: clear, colour, cursor
    ("\x9b31mred\x9b0m", "red"),  # C1 CSI
    ("\x9d52;c;ZXZpbA==\x9cok", "ok"),  # C1 OSC and C1 ST
    ("\x90dcs\x9cok\x85\x8d", "ok"),  # C1 DCS, NEL, RI
    (f"a{ESC}cb{ESC}(B{ESC}7c{ESC}", "abc"),  # reset, charset, save cursor, a bare ESC
    ("ring\x07 back\x08\x08\x08\x08safe", "ring backsafe"),  # BEL, backspace overwrites
    ("evil\rsafe\x7f\x00", "evilsafe"),  # CR overwrite, DEL, NUL
    ("\u202eexe.txt\u202c \u2066x\u2069", "exe.txt x"),  # bidirectional overrides
    ("ok [link=https://x]y[/link] [/]", "ok [link=https://x]y[/link] [/]"),  # not ours to drop
]


@pytest.mark.parametrize(("hostile", "shown"), HOSTILE)
def test_control_sequences_go_and_the_text_stays(hostile: str, shown: str) -> None:
    assert printable(hostile) == shown
    assert printable(hostile, lines=True) == shown


def test_one_line_stays_one_unless_lines_are_meant() -> None:
    text = "first\r\n\tsecond\u2028third"
    assert printable(text) == "first  second third"
    assert printable(text, lines=True) == "first\n\tsecond\nthird"
    # An unterminated string sequence swallows nothing printed after it.
    assert printable(f"a{ESC}]0;title\nnext", lines=True) == "a0;title\nnext"
    assert printable(f"{ESC}Pdcs  name: once  {ESC}[1mdone") == "dcs  name: once  done"


def test_ordinary_text_is_untouched() -> None:
    for text in ("plain", "目标: 提速 10× ✓ — “quoted” ±", "", "tab-free 'single' $0.52"):
        assert printable(text) == text
        assert printable(text, lines=True) == text


@given(st.text())
def test_nothing_a_terminal_acts_on_survives(text: str) -> None:
    for lines in (False, True):
        out = printable(text, lines=lines)
        assert ESC not in out and not CONTROL.search(out)
        assert printable(out, lines=lines) == out
    assert "\n" not in printable(text) and "\t" not in printable(text)


@given(
    st.recursive(st.text() | st.integers(), lambda c: st.lists(c) | st.dictionaries(st.text(), c))
)
def test_json_keeps_its_data_and_no_raw_control(value: object) -> None:
    for ascii_only in (False, True):
        out = printable_json(json.dumps(value, ensure_ascii=ascii_only))
        assert json.loads(out) == value
        assert ESC not in out and not CONTROL.search(out)
