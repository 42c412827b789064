"""Text from notes, made safe to print: the one rule both faces use for their text output
(the CLI's text, the MCP server's ``index`` format and text answers).

A note's title, headings, tags, snippet, path ... are data written by anyone who can
write a file into the vault. Printed as they are, a newline in a title prints a
whole fake hit line, and an escape sequence in a snippet reaches the terminal (OSC 52
sets the clipboard, OSC 8 makes a link, CSI 2J clears the screen). So:

- ``fold``: one value on one line: every line break (LF, CR, VT, FF, NEL, U+2028,
  U+2029) and tab becomes a space;
- ``shown``: text of many lines for a terminal: LF and tab stay;
- in both, every other control character is made visible: C0 and DEL as their
  Unicode control pictures (ESC is ``␛``), C1, the bidirectional overrides and
  isolates, and the marks that reorder text as ``\\u202e``. The text stays readable
  and nothing in it is acted on. JSON answers are never folded: they stay exact.
"""

from __future__ import annotations

_BREAKS = "\n\r\x0b\x0c\x85\u2028\u2029\t"
# Characters that reorder what follows them (Trojan Source, CVE-2021-42574).
_BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


def _visible(code: int) -> str:
    if code < 0x20:
        return chr(0x2400 + code)  # ␀ .. ␟
    if code == 0x7F:
        return "\u2421"  # ␡
    return f"\\u{code:04x}"


_SHOWN: dict[int, str] = {
    code: _visible(code)
    for code in [*range(0x20), 0x7F, *range(0x80, 0xA0), *map(ord, _BIDI)]
    if chr(code) not in "\n\t"
}
_FOLDED: dict[int, str] = {**_SHOWN, **{ord(c): " " for c in _BREAKS}}


def fold(value: object) -> str:
    """``value`` as one line of plain text (see the module's docstring)."""
    return str(value).translate(_FOLDED)


def shown(text: str) -> str:
    """Text of several lines with every control character but LF and tab made visible."""
    return text.translate(_SHOWN)


def is_safe(text: str) -> bool:
    """Whether ``text`` holds no character ``shown`` would change."""
    return shown(text) == text
