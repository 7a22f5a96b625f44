"""Text from outside envcheck, as it may be shown: every character a terminal acts on or hides shown
escaped instead.

Every string a renderer takes from the machine, a file or another program (a folder, a host name,
a GPU name, a kernel's name, a library's error, a snapshot's field) can hold characters that a
terminal does not print but obeys: an escape sequence (``ESC ]52;c;...`` writes the clipboard,
``ESC [2J`` clears the screen), a carriage return that overwrites the line, a newline that forges
one, a right-to-left override that shows ``exe.txt`` for ``txt.exe``, or a zero-width character
that hides text. ``printable`` writes each such character as a Python-style escape (``\\x1b``,
``\\n``, ``\\u202e``), so the text says what is there and does nothing. JSON output keeps every
value exact (``printable_json`` only spells the same characters as ``\\uXXXX``).

What is escaped: the C0 controls and DEL, the C1 controls (``U+0080-U+009F``: 8-bit CSI, OSC and
ST among them), Unicode's format characters (category Cf: the bidi embeddings, overrides and
isolates U+202A-U+202E and U+2066-U+2069, the marks U+200E/U+200F/U+061C, zero-width spaces and
joiners, the BOM, soft hyphen, the tag characters U+E0000-U+E007F), the line and paragraph
separators, lone surrogates (from undecodable bytes), and the characters that draw nothing at all
although they are not format characters (variation selectors, the Hangul fillers, the combining
grapheme joiner). A backslash is left as it is: Windows paths stay readable.
"""

from __future__ import annotations

import re
import unicodedata

# Unicode categories whose characters a terminal obeys or does not draw: controls, format
# characters, surrogates, line and paragraph separators.
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
# Characters of other categories that draw nothing and are used to hide text.
_INVISIBLE = re.compile("[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u3164\uffa0\ufe00-\ufe0f\U000e0100-\U000e01ef]")
_ASCII_CONTROL = re.compile("[\x00-\x1f\x7f]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(char: str) -> str:
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def is_hidden(char: str) -> bool:
    """Whether a terminal would act on ``char`` or not draw it (see the module's docstring)."""
    return unicodedata.category(char) in _HIDDEN_CATEGORIES or _INVISIBLE.match(char) is not None


def printable(text: object) -> str:
    """``text`` on one line with every hidden or acting character escaped; plain text is returned
    as it is. Not a quoting for a shell: commands are quoted by ``envcheck.shell``."""
    text = text if isinstance(text, str) else str(text)
    if text.isascii():  # the common case, and a fast one
        return text if text.isprintable() else _ASCII_CONTROL.sub(lambda m: _escape(m.group()), text)
    if text.isprintable() and _INVISIBLE.search(text) is None:
        return text
    return "".join(_escape(c) if is_hidden(c) else c for c in text)


def printable_json(document: str) -> str:
    """A JSON text with the same values, but DEL and the characters ``printable`` escapes past it
    written as ``\\uXXXX``: json.dumps escapes the C0 controls itself (the newlines left are the
    layout's), and leaves the rest raw unless told to escape every non-ASCII character."""
    if document.isascii() and "\x7f" not in document:
        return document
    return "".join(_json_escape(c) if c >= "\x7f" and is_hidden(c) else c for c in document)


def _json_escape(char: str) -> str:
    code = ord(char)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000  # past the BMP: a surrogate pair, as JSON writes it
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
