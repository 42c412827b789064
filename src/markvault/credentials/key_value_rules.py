"""Key-value rules: a secret named by its key (``key = value``, ``key: value``,
``"key": "value"``).

The key is split into words (``DB_PASSWORD`` -> db, password; ``clientSecret`` ->
client, secret). A strong word (password, secret, token, api key, credential) makes any
real value a secret; a weak word (key, auth, access, signature...) only a long
high-entropy one. Words such as ``id``, ``name``, ``count`` or ``public`` make the key a
label, not a secret (``token_count``, ``key_id``, ``public_key``). A prose key
(``Password: ...`` in a sentence) needs a value that looks like a password, so
``Secret: keep it simple`` passes. A sentence is prose under any key
(``NO_SECRETS = "Never store secrets, tokens or passwords in notes."``), and an unquoted
value that opens a sentence running to the line's end (``client_secret: The OAuth
client secret.``) describes the secret, not holds it. Hex hashes and UUIDs pass under a
prose key; only a code-style secret key (``client_secret = "6da8..."``) makes one a
secret. The allowlist and detect-secrets' false-positive heuristics (placeholders,
templated and indirect values) are gitleaks' and detect-secrets' ideas, written for
notes.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable, Sequence

from markvault.credentials.token_rules import TOKEN_RULES
from markvault.credentials.value_shapes import (
    is_elsewhere,
    is_placeholder,
    is_prose,
    is_sentence,
    looks_like_password,
    looks_random,
    opens_sentence,
    word_set,
)

# ---- key-value rules: a secret named by its key --------------------------------------

# Words of a key that make its value a secret, and the kind each names.
_STRONG = {
    "password": "password",
    "passwd": "password",
    "passphrase": "password",
    "pwd": "password",
    "pass": "password",
    "pw": "password",
    "secret": "secret",
    "secrets": "secret",
    "token": "token",
    "pat": "token",
    "apikey": "API key",
    "credential": "credential",
    "credentials": "credential",
    "privatekey": "private key",
    "secretkey": "secret",
}
# "<word> key" pairs that name a secret key (api_key, private key, client key...).
_KEY_OWNERS = {
    "api": "API key",
    "private": "private key",
    "secret": "secret",
    "auth": "API key",
    "client": "secret",
    "service": "secret",
    "account": "secret",
    "master": "secret",
    "signing": "secret",
    "encryption": "secret",
    "license": "API key",
    "app": "API key",
    "sdk": "API key",
    "access": "secret",
}
# Words of a key that hold a secret only if the value is long and random.
_WEAK = word_set("key keys auth access cred creds signature sig salt hmac cookie session")
# A key ending in one of these words labels something else: token_count, key_id,
# secret_name, password_policy, max_tokens.
_LABEL_ENDINGS = word_set(
    """id ids name names length len size type types count counts limit limits budget url
    uri urls endpoint endpoints file files path paths dir folder hint hints policy prompt
    field label ref refs arn version format header headers param params prefix env var
    vars variable manager store rotation expiry expires expiration ttl lifetime usage
    regex pattern mode provider source enabled required exists changed reset min max
    hash hashed digest checksum estimate tokens index position offset kind class spec
    word words mapping map dict list set board stroke code press pressed down up left
    right frame stone pair ring chain at node tag method methods settings config"""
)
# A key holding one of these words names something that is not a secret:
# csrf_token, public_key, next_page_token, primary_key, max_token.
_NOT_SECRET_WORDS = word_set(
    """csrf xsrf public pub publishable next page pagination continuation cursor max min
    num total input output cache cached idempotency primary foreign sort partition
    hash hashed bucket object sequence schema natural composite unique"""
)

# Every rule id a finding (and so a fingerprint) may carry.
_RULE_IDS = frozenset(
    [rule.id for rule in TOKEN_RULES]
    + [kind.lower().replace(" ", "-") for kind in (*_STRONG.values(), *_KEY_OWNERS.values())]
    + ["aws-secret-key", "high-entropy-value"]
)

# Every key word above holds one of these: where they occur, a key may start.
_HINTS = (
    *("pass", "pw", "secret", "token", "pat", "key", "cred", "auth", "access", "sig"),
    *("salt", "hmac", "cookie", "session"),
)
_KEY_CHARS = frozenset(string.ascii_letters + string.digits + "_.-")
# What follows a key: a closing quote or bracket, the operator, the value.
_AFTER_KEY = re.compile(
    r"""
    (?P<quote>["'`]?)\]?[ \t]*
    (?P<op>:=|=>|==?|:(?![:/]))
    [*_]{0,2}[ \t]*
    (?P<value>"[^"\n]*"|'[^'\n]*'|`[^`\n]*`|[^\s"'`,;&|<>()\[\]{}]+)
    """,
    re.VERBOSE,
)


_WORD_END = re.compile(r"[\w.-]*")
_WORD_SPLIT = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


def _key_words(key: str) -> list[str]:
    """``DB_PASSWORD`` -> [db, password]; ``clientSecret`` -> [client, secret]."""
    return [w.lower() for w in _WORD_SPLIT.findall(key)]


def _key_kind(words: Sequence[str]) -> tuple[str, bool] | None:
    """(kind, strong) for a key naming a secret; None for any other key."""
    if not words or words[-1] in _LABEL_ENDINGS or not _NOT_SECRET_WORDS.isdisjoint(words):
        return None
    for i, word in enumerate(words):
        kind = _STRONG.get(word) or _glued_strong(word)
        if word == "key" and i and words[i - 1] in _KEY_OWNERS:
            kind = _KEY_OWNERS[words[i - 1]]
        if kind is not None:
            return ("AWS secret key" if kind == "secret" and "aws" in words else kind), True
    if not _WEAK.isdisjoint(words):
        return "high-entropy value", False
    return None


_GLUED_STRONG = ("password", "passwd", "passphrase", "secret", "token", "apikey")


def _glued_strong(word: str) -> str | None:
    """The kind a word ending in a strong word names (``PGPASSWORD``, ``authtoken``)."""
    for strong in _GLUED_STRONG:
        if word.endswith(strong) and len(word) > len(strong) + 1:
            return _STRONG[strong]
    return None


def _code_style(key: str, quoted: bool, op: str) -> bool:
    """``API_KEY=``, ``"token":``, ``clientSecret:`` are code; ``Password:`` is prose."""
    return quoted or op != ":" or any(c in key for c in "_.-") or key[1:] != key[1:].lower()


def _key_starts(text: str, lowered: str) -> Iterable[int]:
    """Where each word holding a key word starts (once per word)."""
    starts = set()
    for hint in _HINTS:
        at = lowered.find(hint)
        while at != -1:
            start = at
            while start and (text[start - 1] in _KEY_CHARS or text[start - 1].isalnum()):
                start -= 1
            starts.add(start)
            at = lowered.find(hint, at + len(hint))
    return sorted(starts)


def assignment_findings(
    text: str, lowered: str, code: bool = False
) -> Iterable[tuple[str, str, int, int]]:
    """(rule id, kind, start, end) of values that their key makes secrets."""
    for key_start in _key_starts(text, lowered):
        word = _WORD_END.match(text, key_start)
        key = word.group() if word else ""
        m = _AFTER_KEY.match(text, key_start + len(key))
        if m is None or not key or not (key[0].isalpha() or key[0] == "_"):
            continue
        opening = text[key_start - 1 : key_start] if key_start else ""
        if m["quote"] and m["quote"] != opening:
            continue
        found = _key_kind(_key_words(key))
        if found is None:
            continue
        kind, strong = found
        start, end = m.span("value")
        quoted = m["value"][:1] in "\"'`"
        if quoted:
            start, end = start + 1, end - 1
        else:
            while end > start and text[end - 1] in ".,:;":
                end -= 1  # the sentence's full stop, not the value's
        value = text[start:end]
        if _is_fingerprint(text[key_start:end]):
            continue  # "github-token:0123abcd4567ef89": what vault check prints, no secret
        if _names_elsewhere(text, start, end) or _is_words(value, kind, quoted, text, start):
            continue
        if code:
            secret = looks_random(value)
        elif strong and _code_style(key, bool(m["quote"]) or quoted, m["op"]):
            secret = not (value.isdigit() and len(value) < 12 and kind != "password")
        elif strong:
            secret = looks_like_password(value)
        else:
            secret = looks_random(value)
        if secret:
            yield kind.lower().replace(" ", "-"), kind, start, end


_FINGERPRINT = re.compile(r"([a-z]+(?:-[a-z]+)*):[0-9a-f]{16}")


def _is_fingerprint(text: str) -> bool:
    """``<rule>:<16 hex>``, as :func:`fingerprint` makes them (allowlists quote them)."""
    m = _FINGERPRINT.fullmatch(text)
    return m is not None and m.group(1) in _RULE_IDS


def _names_elsewhere(text: str, start: int, end: int) -> bool:
    """A value that is no value: empty, a placeholder, a path or reference, a call, an
    index or a variable (the secret, if any, comes from elsewhere)."""
    value = text[start:end]
    return (
        not value.strip()
        or is_placeholder(value)
        or is_elsewhere(value)
        or text[end : end + 1] in ("(", "[")
        or _is_variable(value)
    )


def _is_words(value: str, kind: str, quoted: bool, text: str, start: int) -> bool:
    """Words, not a secret: a sentence under any key, a phrase of words under any key but
    a password's, or (unquoted) the first word of a sentence running to the line's end."""
    if is_sentence(value) or (is_prose(value) and kind != "password"):
        return True
    line_end = text.find("\n", start)
    return not quoted and opens_sentence(value, text[start : line_end if line_end >= 0 else None])


def _is_variable(value: str) -> bool:
    """``password = user_password``, ``token: apiToken``: a name, not a value."""
    words = _key_words(value)
    return (
        value.isidentifier()
        and ("_" in value or (value[1:] != value[1:].lower() and not _mixed_random(value)))
        and not (_STRONG.keys().isdisjoint(words) and _WEAK.isdisjoint(words))
    )


def _mixed_random(value: str) -> bool:
    """A random key of letters and digits, not a camelCase name: its pieces may spell a
    key word by chance (``...pwJCa...``), but a name has few digits and a key has many."""
    return looks_random(value) and sum(c.isdigit() for c in value) >= 2
