"""What a value looks like: random or a word, a hash, a placeholder, a path, prose, a
private key's DER. The measures both rule families (``token_rules``, ``key_value_rules``)
judge a candidate secret by.

- **Words are not secrets.** A token, key or secret has no spaces; a password may be a
  phrase of words (``"correct horse battery staple"``). So a value of three or more
  words is prose when it reads as a sentence (a function word such as "the", "never",
  "see"; punctuation; eight words or more). A passphrase that reads as a sentence ("the
  quick brown fox") is the price of this rule.
- **Hashes pass.** Hex strings (content hashes, git SHAs) and UUIDs are never a
  high-entropy value (:func:`is_hash_like`).
- A private key's base64 body without its armour lines is told by its structure once
  decoded (PKCS#1, PKCS#8, SEC1, PKCS#12, OpenSSH), so certificates and public keys pass.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections import Counter
from collections.abc import Callable

from markvault.credentials.finding import REDACTED


def word_set(text: str) -> frozenset[str]:
    return frozenset(text.split())


# ---- measures ------------------------------------------------------------------------


def entropy(value: str) -> float:
    """Shannon entropy in bits per character (gitleaks' measure)."""
    if not value:
        return 0.0
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values())


_HEX = re.compile(r"[0-9a-fA-F]+")
_UUID = re.compile(r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}")
_SEQUENCES = (
    "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz",
    "0123456789012345678901234567890123456789",
    "ABCDEFGHIJKLMNOPQRSTUVWXYZABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/",
    "qwertyuiopasdfghjklzxcvbnm",
)


def is_hash_like(value: str) -> bool:
    """A hex digest (markvault's content hashes, git SHAs, checksums) or a UUID."""
    return bool(_HEX.fullmatch(value) or _UUID.fullmatch(value))


def is_sequence(value: str) -> bool:
    low = value.lower()
    return any(low in seq.lower() for seq in _SEQUENCES)


def has_digit_and_letter(value: str) -> bool:
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def min_entropy(bits: float, prefix: int = 0) -> Callable[[str], bool]:
    """A real token, not a placeholder: at least ``bits`` of entropy per character, over
    what follows a fixed ``prefix`` of that many characters when one is given."""

    def accept(secret: str) -> bool:
        return entropy(secret[prefix:]) >= bits and not is_sequence(secret)

    return accept


PLACEHOLDER_WORDS = word_set(
    """none null nil true false undefined empty required optional example placeholder
    dummy test changeme change_me value val string str text bytes env var variable arg
    args param redacted hidden masked secret password passwd pass token key xxx todo tbd
    foo bar baz n/a na ... your_token your_key your_password int float bool dict list
    tuple any object optional await yield lambda"""
)
_VERSION_OR_DATE = re.compile(r"v?\d+(?:[.:/-]\d+)+[a-z]?")
_REFERENCE = re.compile(r"[A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)+")


def is_placeholder(value: str) -> bool:
    """``$TOKEN``, ``${{ secrets.X }}``, ``<your-token>``, ``xxxx``, ``None``, ``%s``..."""
    low = value.lower()
    return (
        low in PLACEHOLDER_WORDS
        or value[:1] in "$%{<*["  # variables, templates, masks, [REDACTED]
        or len(set(value)) <= 2
        or low.startswith("your")
        or REDACTED in value
    )


def is_template(value: str) -> bool:
    """A stand-in for a value, not a value: a variable or template (``$PASSWORD``,
    ``${{ secrets.X }}``, ``<password>``), a mask (``***``, ``xxxx``), ``your-password``
    or the redaction marker."""
    return (
        value[:1] in "$%{<*["
        or len(set(value)) <= 2
        or value.lower().startswith("your")
        or REDACTED in value
    )


def decodes_to_private_key(body: str) -> bool:
    """Base64 (possibly wrapped) whose first bytes are a private key's structure."""
    compact = re.sub(r"\\[rn]|\s", "", body)[:96]
    compact = compact[: len(compact) // 4 * 4]
    try:
        data = base64.b64decode(compact, validate=True)
    except (binascii.Error, ValueError):
        return False
    return is_private_key_der(data)


_PBE_OIDS = (bytes.fromhex("2a864886f70d0105"), bytes.fromhex("2a864886f70d010c01"))


def _der_length(data: bytes, at: int) -> tuple[int, int] | None:
    """(length, where the content starts) of a DER element whose length is at ``at``."""
    if at >= len(data):
        return None
    first = data[at]
    if first < 0x80:
        return first, at + 1
    n = first & 0x7F
    if not 1 <= n <= 3 or at + 1 + n > len(data):
        return None
    return int.from_bytes(data[at + 1 : at + 1 + n], "big"), at + 1 + n


def is_private_key_der(data: bytes) -> bool:
    """Whether ``data`` opens a private key as DER (or an OpenSSH key's binary): a
    SEQUENCE holding a version then the key (PKCS#1 RSA or DSA, PKCS#8, SEC1 EC,
    PKCS#12), or an encrypted PKCS#8 (a password-based encryption's OID). Public keys and
    certificates have another shape and pass."""
    if data.startswith(b"openssh-key-v1\0"):
        return True
    if len(data) < 8 or data[0] != 0x30:
        return False
    head = _der_length(data, 1)
    if head is None:
        return False
    at = head[1]
    version, then = data[at : at + 3], data[at + 3 : at + 4]
    if version == b"\x02\x01\x00":
        return then in (b"\x02", b"\x30")
    if version == b"\x02\x01\x01":
        return then in (b"\x04", b"\x30")
    if version == b"\x02\x01\x03":
        return then == b"\x30"
    if data[at : at + 1] == b"\x30":  # EncryptedPrivateKeyInfo { AlgorithmIdentifier ...
        inner = _der_length(data, at + 1)
        if inner is None or data[inner[1] : inner[1] + 1] != b"\x06":
            return False
        oid_at = inner[1] + 2
        return any(data[oid_at:].startswith(oid) for oid in _PBE_OIDS)
    return False


def is_elsewhere(value: str) -> bool:
    """A value that points at the secret instead of holding it: a path, a URL (its
    password, if any, is the url-password rule's), an attribute (``settings.KEY``)."""
    return _is_path(value) or "://" in value or bool(_REFERENCE.fullmatch(value))


def _is_path(value: str) -> bool:
    """A path starts at a folder whose name is a word (``/etc``, ``/Users``); a key that
    merely opens with '/' (base64 does, one time in 64) has no such folder."""
    if value.startswith(("./", "../", "~/")):
        return True
    if not value.startswith("/"):
        return False
    root = value[1:].split("/", 1)[0]
    is_word = len(root) >= 3 and root.isalpha() and (root.islower() or root.istitle())
    return is_word or not looks_random(value)


def _long_mixed_case(value: str) -> bool:
    """Letters alone, but a key's spread of them (a base64 key may hold no digit); a
    CamelCase phrase repeats its letters and stays below the bar."""
    return (
        len(value) >= 20
        and value != value.lower()
        and value != value.upper()
        and entropy(value) >= 4.3
    )


def looks_random(value: str) -> bool:
    """A long value with the spread of a key, not a word, hash, path or identifier."""
    return (
        16 <= len(value) <= 1000
        and (has_digit_and_letter(value) or _long_mixed_case(value))
        and entropy(value) >= 3.5
        and not is_hash_like(value)
        and not is_sequence(value)
        and " " not in value
    )


def looks_like_password(value: str) -> bool:
    """What a value after a prose key (``Password: ...``) must look like to be one."""
    return (
        len(value) >= 6
        and " " not in value
        and has_digit_and_letter(value)
        and not is_hash_like(value)
        # a question's or exclamation's mark after a version is the sentence's
        and not _VERSION_OR_DATE.fullmatch(value.rstrip("?!"))
    ) or looks_random(value)


# Words that occur in almost every English sentence and in no generated passphrase
# (diceware lists leave them out: they add no strength).
_FUNCTION_WORDS = word_set(
    """a an the and or but nor of to in on at by for from with without into onto about as
    is are was were be been being am do does did done not no never yes it its this that
    these those there here i me my we us our you your he him his she her they them their
    who what which when where why how all any each every some more most other only own
    same so than too very can could will would shall should may might must have has had
    if then else because before after while until ask use see keep store stored one"""
)
_PROSE_WORD = re.compile(r"[(\"'«“]*[^\W\d_]+(?:['’-][^\W\d_]+)*[.,;:!?)\"'»”]*")
_SENTENCE_MARK = re.compile(r"[.,;:!?]")


def is_prose(value: str) -> bool:
    """A value made of three or more words: a sentence (it holds a function word or
    punctuation, or runs to eight words) or a bare phrase of words.

    Neither is a token, a key or a secret: those have no spaces. Only a password may be
    a phrase of words (``"correct horse battery staple"``), and the caller keeps such a
    phrase under a password's key; a sentence is prose under any key
    (``NO_SECRETS = "Never store secrets, tokens or passwords in notes."``).
    """
    words = value.split()
    if len(words) < 3:
        return False
    prose = sum(1 for w in words if _PROSE_WORD.fullmatch(w))
    return prose >= 0.8 * len(words)


def is_sentence(value: str) -> bool:
    """Prose (``is_prose``) that reads as a sentence, not as a passphrase."""
    words = value.split()
    return is_prose(value) and (
        len(words) >= 8
        or bool(_SENTENCE_MARK.search(value))
        or any(w.strip("()\"'«»“”.,;:!?").lower() in _FUNCTION_WORDS for w in words)
    )


def opens_sentence(word: str, line: str) -> bool:
    """An unquoted value that is the first word of a sentence running to the line's end
    (a docstring's ``client_secret: The OAuth client secret.``): a function word or a
    capitalised word, not a word with digits as a password would have."""
    plain = word.rstrip(".,;:!?")
    return (
        plain.lower() in _FUNCTION_WORDS or (plain.istitle() and plain.isalpha())
    ) and is_sentence(line)
