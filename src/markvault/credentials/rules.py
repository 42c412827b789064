"""The credential gate: what counts as a credential in text, and what to do with one.

Every path that writes note text (MCP tools, CLI commands, transcript import,
templates) and every path that carries notes away (``vault sync``, ``vault check``)
asks this module; no other module holds a secret pattern.

Design choices, each for a reason a reader would otherwise have to guess:

- **Our own focused rules, not detect-secrets.** detect-secrets (Yelp) is line-based,
  configured through process-global settings (unsafe in the threaded index owner),
  reports lines but not spans (nothing to redact with), needs ``requests``, and its
  hex high-entropy plugin flags exactly what must pass here: content hashes and git
  SHAs (measured on 2,000 generated notes, 11.7 MB: it flagged 100 of 150 quoted
  ``"hash": "<hex>"`` lines, and scanned 0.05 MB/s where this module scans 13 MB/s,
  both under the same load). Its last release is from 2024. The rules below follow
  the shape of gitleaks' (keyword prefilter, a secret group, a minimum entropy,
  allowlists for key names that are not secrets) and detect-secrets' false-positive
  heuristics (placeholders, templated and indirect values), written for notes rather
  than source trees.
- **Two families.** *Token rules* match formats that identify themselves (``ghp_``,
  ``AKIA``, ``-----BEGIN ... PRIVATE KEY-----``, JWTs); a minimum entropy lets
  placeholders such as ``ghp_xxxx...`` through. *Key-value rules* read ``key = value``,
  ``key: value``, ``"key": "value"``: the key is split into words (``DB_PASSWORD`` ->
  db, password; ``clientSecret`` -> client, secret). A strong word (password, secret,
  token, api key, credential) makes any real value a secret; a weak word (key, auth,
  access, signature...) only a long high-entropy one. Words such as ``id``, ``name``,
  ``count`` or ``public`` make the key a label, not a secret (``token_count``,
  ``key_id``, ``public_key``). A prose key (``Password: ...`` in a sentence) needs a
  value that looks like a password, so ``Secret: keep it simple`` passes.
- **Shapes, not only tokens.** A distinctive prefix is found glued to a word (a tag
  ``#tghp_...``, a key ``kAIza...``) when what follows has a token's shape (a digit and
  a letter); short, common prefixes (``sk-``, ``hf_``) still need a boundary. A
  password given on a command line (``mysql -pPASS``, ``curl -u user:PASS``,
  ``--password=PASS``) or in a connection string (``postgres://user:pass@host``) is one
  whatever it spells; only a template or a help text's ``PASSWORD`` stands in for one.
  A private key's base64 body without its armour lines is told by its structure once
  decoded (PKCS#1, PKCS#8, SEC1, PKCS#12, OpenSSH), so certificates and public keys pass.
- **Words are not secrets.** A token, key or secret has no spaces; a password may be a
  phrase of words (``"correct horse battery staple"``). So a value of three or more
  words is prose under any key when it reads as a sentence (a function word such as
  "the", "never", "see"; punctuation; eight words or more:
  ``NO_SECRETS = "Never store secrets, tokens or passwords in notes."``), and a bare
  phrase of words is a secret only under a password's key. An unquoted value that opens
  a sentence running to the line's end (a function word or a capitalised word:
  ``client_secret: The OAuth client secret.``) describes the secret, not holds it. A
  passphrase that reads as a sentence ("the quick brown fox") is the price of this rule.
- **Hashes pass.** Hex strings (content hashes, git SHAs) and UUIDs are never a
  high-entropy finding, and pass under a prose key; only a code-style secret key
  (``client_secret = "6da8..."``) makes one a secret.
- **Documentation keys are caught.** Unlike gitleaks, ``AKIAIOSFODNN7EXAMPLE`` is not
  allowlisted: an agent cannot tell an example from a leak, and redacting an example
  costs nothing. An allowlist entry keeps a known false positive.
- **A fingerprint never contains the secret**: ``<rule>:<16 hex>`` from a salted,
  slow hash (PBKDF2), so a short password cannot be read back from an allowlist
  entry by a quick dictionary run. It is stable, so an allowlist entry survives edits.
- **One marker**, ``[REDACTED]``, visible in the note; the result of the write says
  what was redacted and where. Redacting is idempotent: the marker is never a finding.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import math
import re
import secrets as _secrets
import string
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from markvault.answers.writing import RedactedFinding
from markvault.config import CredentialSettings
from markvault.errors import RefusedError

REDACTED = "[REDACTED]"
NAME_REDACTED = "REDACTED"  # in a file name: brackets would break a [[wikilink]] to it
Mode = Literal["redact", "refuse"]

_FINGERPRINT_ITERATIONS = 10_000
_FINGERPRINT_SALT = b"markvault credential fingerprint v1:"
_SHOWN_IN_SENTENCE = 5  # findings named in a result sentence before "and N more"
_SHORTEST_TOKEN = 12  # characters: no self-identifying token is shorter


@dataclass(frozen=True)
class Finding:
    """One credential in a text. Holds where it is, never what it is."""

    rule: str  # stable id, e.g. "github-token"
    kind: str  # for people, e.g. "GitHub token"
    start: int  # span of the secret in the scanned text (the value, not its key)
    end: int
    line: int  # 1-based
    column: int  # 1-based
    fingerprint: str = ""  # "<rule>:<16 hex>"; filled by scan(), empty from find()
    part: str | None = None  # "title", "file name"...; None: the text itself

    @property
    def where(self) -> str:
        return self.part or f"line {self.line}"

    def to_dict(self) -> RedactedFinding:
        return {
            "kind": self.kind,
            "rule": self.rule,
            "line": self.line,
            "column": self.column,
            "where": self.where,
            "fingerprint": self.fingerprint,
        }


def _words(text: str) -> frozenset[str]:
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


def _is_sequence(value: str) -> bool:
    low = value.lower()
    return any(low in seq.lower() for seq in _SEQUENCES)


def _has_digit_and_letter(value: str) -> bool:
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def _min_entropy(bits: float, prefix: int = 0) -> Callable[[str], bool]:
    """A real token, not a placeholder: at least ``bits`` of entropy per character, over
    what follows a fixed ``prefix`` of that many characters when one is given."""

    def accept(secret: str) -> bool:
        return entropy(secret[prefix:]) >= bits and not _is_sequence(secret)

    return accept


# ---- token rules: formats that identify themselves -----------------------------------


@dataclass(frozen=True)
class TokenRule:
    id: str
    kind: str
    pattern: re.Pattern[str]
    keywords: tuple[str, ...]  # lower case; the rule runs only if one occurs in the text
    group: int  # the secret's group in ``pattern``
    accept: Callable[[str], bool]
    # The keyword is inside the long token itself (``ghp_...``), so looking for it among
    # the text's long words is enough; False: it may stand alone (``Bearer``).
    in_long_word: bool
    # The prefix is distinctive enough to be found glued to a word (a tag ``#tghp_...``,
    # a key ``kAIza...``): the pattern has no word boundary before it, and a match that
    # follows a letter or digit must have a token's shape (see _glued_shape).
    glued: bool = False
    # The rule runs only when the text holds a word at least this long (a key's body).
    min_word: int = 0


def _rule(
    id: str,
    kind: str,
    pattern: str,
    keywords: Iterable[str],
    group: int = 0,
    accept: Callable[[str], bool] | None = None,
    in_long_word: bool = True,
    glued: bool = False,
    min_word: int = 0,
) -> TokenRule:
    if glued:  # no boundary before the prefix; after the token, no letter or digit
        assert not pattern.startswith(r"\b"), id  # a glued rule's pattern has none
    return TokenRule(
        id,
        kind,
        re.compile(pattern),
        tuple(k.lower() for k in keywords),
        group,
        accept or _min_entropy(3.0),
        in_long_word,
        glued,
        min_word,
    )


def _glued_shape(secret: str) -> bool:
    """A token found glued to a word (``tghp_...``) must look generated: a digit and a
    letter in it, as nearly every random token has and an identifier rarely does."""
    return _has_digit_and_letter(secret)


def _always(secret: str) -> bool:
    return True


def _decodes_to_user_and_password(secret: str) -> bool:
    """``Basic <base64>`` is a credential when the base64 is ``user:password``."""
    try:
        text = base64.b64decode(secret + "=" * (-len(secret) % 4), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return False
    return ":" in text and text.isprintable()


def _bearer_value(secret: str) -> bool:
    """A short value must carry a digit: "bearer responsibility" is prose."""
    return (len(secret) >= 20 or any(c.isdigit() for c in secret)) and not _is_placeholder(secret)


# A PEM body line: base64 with a digit, "+", "/" or two capitals (not a prose word),
# or a header such as "Proc-Type: 4,ENCRYPTED"; lines end in real or escaped newlines.
_PEM_SEP = r"(?:\\r)?(?:\\n|\r?\n|[ \t]+)"
_PEM_LINE = (
    r"(?:(?=[A-Za-z0-9+/=]*(?:[0-9+/]|[A-Z][a-z]*[A-Z]))[A-Za-z0-9+/=]{8,}"
    r"|(?:Proc-Type|DEK-Info|Comment|Version): [^\n\\]*)"
)
_PEM_EDGE = r"PRIVATE KEY(?: BLOCK)?-----"

# A password given on a command line: (pattern with the password as group 1, keywords).
_ARG = r"""['"]?([^\s'"`|;&<>]+)"""  # one argument, maybe quoted
_CMD = r"[^\n|;&]{0,200}?\s"  # the command's other arguments, up to the flag
_COMMAND_LINE_PASSWORDS: tuple[tuple[str, list[str]], ...] = (
    # mysql -pPASS (glued: "-p PASS" asks for one and names a database)
    (rf"\b(?:mysql\w*|mariadb\w*)\b{_CMD}-p{_ARG}", ["mysql", "mariadb"]),
    # curl -u user:PASS, --user user:PASS, --proxy-user
    (
        rf"\bcurl\b{_CMD}(?:-u|-U|--user|--proxy-user)[ =]?['\"]?[^\s:'\"`]{{0,100}}:{_ARG}",
        ["curl"],
    ),
    # --password=PASS, --db-password PASS, --passphrase ... (not --password-stdin/-file);
    # after a space, not a word of prose ("the --password option").
    (
        r"--(?<![\w-]--)(?!no-)[A-Za-z0-9-]*?(?:password|passwd|passphrase|pwd)"
        r"(?:=|[ ](?![a-z]+\b(?![^\s'\"`|;&<>])))['\"]?([^\s'\"`|;&<>]+)",
        ["password", "passwd", "passphrase", "pwd"],
    ),
    (rf"\bsshpass\b{_CMD}-p[ =]?{_ARG}", ["sshpass"]),
    (rf"\bredis-cli\b{_CMD}-a[ =]?{_ARG}", ["redis-cli"]),
    (rf"\b(?:docker|podman|nerdctl|helm\s+registry)\s+login\b{_CMD}-p[ =]?{_ARG}", ["login"]),
    (rf"\bldap\w+\b{_CMD}-w[ =]?{_ARG}", ["ldap"]),
    (
        rf"\b(?:sqlcmd|bcp|ipmitool|zip|unzip)\b{_CMD}-P[ =]?{_ARG}",
        ["sqlcmd", "bcp", "ipmitool", "zip"],
    ),
    (rf"\bpsexec\b{_CMD}-p[ =]?{_ARG}", ["psexec"]),
    (rf"\b(?:7z[ar]?|rar|unrar)\b{_CMD}-p{_ARG}", ["7z ", "7za ", "7zr ", "rar "]),
    (rf"\bmongo\w*\b{_CMD}-p[ =]?{_ARG}", ["mongo"]),
    (rf"\bhtpasswd\s+-\w*b\w*\s+\S+\s+\S+\s+{_ARG}", ["htpasswd"]),
    (rf"-U(?<=\s-U)[ =]?['\"]?[^\s%'\"`]+%{_ARG}", ["%"]),  # smbclient -U user%PASS
    (rf"-(?<=\s-)pass(?:in|out)?\s+['\"]?pass:{_ARG}", ["pass:"]),  # openssl
    (rf"-(?<=\s-)(?:src|dest|new)?(?:store|key)pass\s+{_ARG}", ["storepass", "keypass"]),
    (rf"\s/p:{_ARG}", ["/p:"]),  # xfreerdp /p:PASS
    (r"\bsqlplus\s+['\"]?[\w$#]+/([^\s@'\"/]+)(?=@|\s|$)", ["sqlplus"]),  # user/PASS@db
)

TOKEN_RULES: tuple[TokenRule, ...] = (
    # A block, or one cut short (a truncated paste) up to where its body ends; the
    # header alone (a mention in prose) is not a secret.
    _rule(
        "private-key",
        "private key",
        rf"-----BEGIN[ A-Z0-9_-]{{0,100}}{_PEM_EDGE}(?:{_PEM_SEP}{_PEM_LINE})+"
        rf"(?:{_PEM_SEP}-----END[ A-Z0-9_-]{{0,100}}{_PEM_EDGE})?",
        ["-----begin"],
        accept=_always,
        in_long_word=False,
    ),
    _rule(
        "aws-access-key",
        "AWS access key",
        r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])",
        ["a3t", "akia", "asia", "abia", "acca"],
        # The 16 random characters alone: over all 20, the fixed prefix's repeated A
        # put one real key in 20,000 under 3 bits (AKIAPI9TPP5ACCIA1TIC); 2.25 bits over
        # the 16 let no random key of 200,000 through, and stop XXXX..., 0000... and
        # ABCDABCD... placeholders.
        accept=_min_entropy(2.25, prefix=4),
        glued=True,
    ),
    _rule(
        "google-api-key", "Google API key", r"AIza[\w-]{35}(?![A-Za-z0-9])", ["aiza"], glued=True
    ),
    _rule(
        "google-oauth",
        "Google OAuth secret",
        r"(?:GOCSPX-[\w-]{28}|ya29\.[\w-]{30,})(?![A-Za-z0-9])",
        ["gocspx-", "ya29."],
        glued=True,
    ),
    _rule(
        "azure-client-secret",
        "Azure client secret",
        r"(?<![\w~.-])[\w~.]{3}\dQ~[\w~.-]{31,34}(?![\w~.-])",
        ["q~"],
    ),
    _rule(
        "azure-storage-key",
        "Azure storage key",
        r"(?i)\b(?:AccountKey|SharedAccessKey)=([A-Za-z0-9+/]{40,}={0,2})",
        ["accountkey", "sharedaccesskey"],
        group=1,
    ),
    _rule(
        "azure-sas",
        "Azure SAS signature",
        r"[?&]sig=([A-Za-z0-9%+/]{40,}(?:%3D|=){0,2})",
        ["sig="],
        group=1,
    ),
    _rule(
        "github-token",
        "GitHub token",
        r"gh[pousr]_[A-Za-z0-9]{30,255}(?![A-Za-z0-9])",
        ["ghp_", "gho_", "ghu_", "ghs_", "ghr_"],
        glued=True,
    ),
    _rule("github-token", "GitHub token", r"github_pat_\w{22,255}", ["github_pat_"], glued=True),
    _rule(
        "gitlab-token",
        "GitLab token",
        r"(?:gl(?:pat|dt|rt|cbt|ptt|ft|imt|agent|oas|soat|ffct|sa)-[\w-]{20,}"
        r"|GR1348941[\w-]{20,})",
        [
            *(f"gl{p}-" for p in _words("pat dt rt cbt ptt ft imt agent oas soat ffct sa")),
            "gr1348941",
        ],
        glued=True,
    ),
    _rule(
        "slack-token",
        "Slack token",
        r"(?:xox[abposre]|xoxe\.xox[bp])-[A-Za-z0-9-]{10,}|xapp-\d-[A-Za-z0-9-]{10,}",
        ["xox", "xapp-"],
        accept=lambda s: _has_digit_and_letter(s) and _min_entropy(3.0)(s),  # not "xoxo-..."
        glued=True,
    ),
    _rule(
        "slack-webhook",
        "Slack webhook",
        r"hooks\.slack\.com/(?:services|workflows|triggers)/([A-Za-z0-9+/_-]{20,})",
        ["hooks.slack.com"],
        group=1,
    ),
    _rule(
        "anthropic-key",
        "Anthropic API key",
        r"sk-ant-[a-z]+\d*-[\w-]{20,}",
        ["sk-ant-"],
        glued=True,
    ),
    _rule(
        "openai-key",
        "OpenAI API key",
        r"(?<![A-Za-z0-9])sk-(?:(?:proj|svcacct|admin|None)-)?[A-Za-z0-9_-]{20,}",
        ["sk-"],
        accept=lambda s: _has_digit_and_letter(s) and _min_entropy(3.0)(s),
    ),
    _rule(
        "stripe-key",
        "Stripe key",
        r"[rs]k_(?:live|test)_[A-Za-z0-9]{16,}",
        ["k_live_", "k_test_"],
        glued=True,
    ),
    _rule(
        "npm-token",
        "npm token",
        r"npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])",
        ["npm_"],
        glued=True,
    ),
    _rule(
        "pypi-token",
        "PyPI token",
        r"pypi-AgEIcHlwaS5vcmc[\w-]{50,}",
        ["pypi-"],
        glued=True,
    ),
    _rule(
        "huggingface-token",
        "Hugging Face token",
        r"(?<![A-Za-z0-9])hf_[A-Za-z]{34}(?![A-Za-z0-9])",
        ["hf_"],
    ),
    _rule(
        "sendgrid-key",
        "SendGrid key",
        r"SG\.[\w-]{22}\.[\w-]{43}(?![A-Za-z0-9])",
        ["sg."],
        glued=True,
    ),
    _rule(
        "shopify-token",
        "Shopify token",
        r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}(?![A-Za-z0-9])",
        ["shp"],
        glued=True,
    ),
    _rule(
        "digitalocean-token",
        "DigitalOcean token",
        r"do[por]_v1_[a-f0-9]{64}(?![A-Za-z0-9])",
        ["_v1_"],
        glued=True,
    ),
    _rule(
        "vault-token",
        "HashiCorp Vault token",
        r"hv[sb]\.[\w-]{24,}",
        ["hvs.", "hvb."],
        glued=True,
    ),
    _rule(
        "databricks-token",
        "Databricks token",
        r"dapi[a-f0-9]{32}(?:-\d)?(?![A-Za-z0-9])",
        ["dapi"],
        glued=True,
    ),
    _rule(
        "telegram-token",
        "Telegram bot token",
        r"(?<!\d)\d{8,10}:AA[\w-]{33}(?![A-Za-z0-9])",
        [":aa"],
        glued=True,
    ),
    _rule(
        "age-key",
        "age secret key",
        r"AGE-SECRET-KEY-1[0-9A-Z]{58}(?![A-Za-z0-9])",
        ["age-secret-key-"],
        glued=True,
    ),
    _rule(
        "postman-key",
        "Postman key",
        r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}(?![A-Za-z0-9])",
        ["pmak-"],
        glued=True,
    ),
    _rule(
        "linear-key",
        "Linear API key",
        r"lin_api_[A-Za-z0-9]{40}(?![A-Za-z0-9])",
        ["lin_api_"],
        glued=True,
    ),
    _rule(
        "notion-token",
        "Notion token",
        r"(?:secret|ntn)_[A-Za-z0-9]{43,46}(?![A-Za-z0-9])",
        ["secret_", "ntn_"],
        glued=True,
    ),
    _rule(
        "groq-key",
        "Groq API key",
        r"gsk_[A-Za-z0-9]{48,}",
        ["gsk_"],
        glued=True,
    ),
    _rule(
        "atlassian-token",
        "Atlassian token",
        r"ATATT3[\w=-]{150,}",
        ["atatt3"],
        glued=True,
    ),
    _rule(
        "grafana-token",
        "Grafana token",
        r"gl(?:sa|c)_[A-Za-z0-9+/_]{32,}={0,2}",
        ["glsa_", "glc_"],
        glued=True,
    ),
    _rule(
        "sentry-token",
        "Sentry token",
        r"sntr[ysu]_[\w=+/-]{30,}",
        ["sntr"],
        glued=True,
    ),
    _rule(
        "supabase-token",
        "Supabase token",
        r"sbp_[a-f0-9]{40}(?![A-Za-z0-9])",
        ["sbp_"],
        glued=True,
    ),
    _rule(
        "doppler-token",
        "Doppler token",
        r"dp\.(?:pt|st|sa|ct|scim)\.[A-Za-z0-9]{40,}",
        ["dp."],
        glued=True,
    ),
    _rule(
        "jwt",
        "JSON web token",
        r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}(?:\.[A-Za-z0-9_-]*)?",
        ["eyj"],
        glued=True,
    ),
    _rule(
        "bearer-token",
        "bearer token",
        r"(?:Bearer|bearer|BEARER)[ \t]+([A-Za-z0-9._~+/-]{8,}=*)",
        ["bearer"],
        group=1,
        accept=_bearer_value,
        in_long_word=False,
    ),
    _rule(
        "basic-auth",
        "basic auth credentials",
        r"(?:Basic|basic|BASIC)[ \t]+([A-Za-z0-9+/]{8,}={0,2})(?![\w+/=])",
        ["basic"],
        group=1,
        accept=_decodes_to_user_and_password,
        in_long_word=False,
    ),
    _rule(
        "url-password",
        "password in URL",
        r"://[^\s/?#@:'\"<>]{0,100}:([^\s/?#@'\"<>]{1,200})@",
        ["://"],
        group=1,
        # A connection string's password is one whatever it spells ("user:pass"): only a
        # template or a mask ($PASSWORD, ${...}, <password>, ***) stands in for one.
        accept=lambda s: not _is_template(s),
        in_long_word=False,  # ftp://a:b@c is shorter than a token
    ),
    _rule(
        "netrc-password",
        "netrc password",
        r"machine[ \t]+\S+\s+login[ \t]+\S+\s+password[ \t]+(\S+)",
        ["machine"],
        group=1,
        accept=lambda s: not _is_placeholder(s),
        in_long_word=False,
    ),
    # A private key's body without its armour lines: base64 that decodes to a private
    # key's structure (PKCS#1, PKCS#8 plain or encrypted, SEC1, PKCS#12, OpenSSH).
    _rule(
        "private-key",
        "private key",
        r"(?:M(?<![A-Za-z0-9+/]M)[A-L][A-Za-z0-9+/]{58,}"
        r"|b(?<![A-Za-z0-9+/]b)3BlbnNzaC1rZXktdjE[A-Za-z0-9+/]{20,})"
        r"={0,2}"
        rf"(?:{_PEM_SEP}[A-Za-z0-9+/]{{4,}}={{0,2}})*",
        ["m", "b3blbnnzac1rzxktdje"],
        accept=lambda s: _decodes_to_private_key(s),
        min_word=40,
    ),
    _rule(
        "private-key",
        "private key",
        r"Private-Lines: \d+\r?\n((?:[A-Za-z0-9+/=]+\r?\n?)+)",  # a PuTTY key file
        ["private-lines:"],
        group=1,
        accept=_always,
        in_long_word=False,
    ),
    *(
        _rule(
            "command-line-password",
            "password on a command line",
            pattern,
            keywords,
            group=1,
            accept=lambda s: _command_line_password(s),
            in_long_word=False,
        )
        for pattern, keywords in _COMMAND_LINE_PASSWORDS
    ),
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
_WEAK = _words("key keys auth access cred creds signature sig salt hmac cookie session")
# A key ending in one of these words labels something else: token_count, key_id,
# secret_name, password_policy, max_tokens.
_LABEL_ENDINGS = _words(
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
_NOT_SECRET_WORDS = _words(
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
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
_WORD_END = re.compile(r"[\w.-]*")
_WORD_SPLIT = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_PLACEHOLDER_WORDS = _words(
    """none null nil true false undefined empty required optional example placeholder
    dummy test changeme change_me value val string str text bytes env var variable arg
    args param redacted hidden masked secret password passwd pass token key xxx todo tbd
    foo bar baz n/a na ... your_token your_key your_password int float bool dict list
    tuple any object optional await yield lambda"""
)
_VERSION_OR_DATE = re.compile(r"v?\d+(?:[.:/-]\d+)+[a-z]?")
_REFERENCE = re.compile(r"[A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)+")


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


def _is_placeholder(value: str) -> bool:
    """``$TOKEN``, ``${{ secrets.X }}``, ``<your-token>``, ``xxxx``, ``None``, ``%s``..."""
    low = value.lower()
    return (
        low in _PLACEHOLDER_WORDS
        or value[:1] in "$%{<*["  # variables, templates, masks, [REDACTED]
        or len(set(value)) <= 2
        or low.startswith("your")
        or REDACTED in value
    )


def _is_template(value: str) -> bool:
    """A stand-in for a value, not a value: a variable or template (``$PASSWORD``,
    ``${{ secrets.X }}``, ``<password>``), a mask (``***``, ``xxxx``), ``your-password``
    or the redaction marker."""
    return (
        value[:1] in "$%{<*["
        or len(set(value)) <= 2
        or value.lower().startswith("your")
        or REDACTED in value
    )


_METAVAR = re.compile(r"[A-Z][A-Z_]*")  # "--password PASSWORD" in a tool's help


def _command_line_password(value: str) -> bool:
    """A command line's password argument that is one: not a template or a help text's
    placeholder (``PASSWORD``), not the next flag, not a path or a command's output."""
    return (
        len(value) >= 3
        and not _is_template(value)
        and not _METAVAR.fullmatch(value)
        and not value.startswith(("-", "/", "./", "~/", "("))
        and value.lower() not in _PLACEHOLDER_WORDS
    )


def _decodes_to_private_key(body: str) -> bool:
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


def _is_elsewhere(value: str) -> bool:
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
    return is_word or not _looks_random(value)


def _long_mixed_case(value: str) -> bool:
    """Letters alone, but a key's spread of them (a base64 key may hold no digit); a
    CamelCase phrase repeats its letters and stays below the bar."""
    return (
        len(value) >= 20
        and value != value.lower()
        and value != value.upper()
        and entropy(value) >= 4.3
    )


def _looks_random(value: str) -> bool:
    """A long value with the spread of a key, not a word, hash, path or identifier."""
    return (
        16 <= len(value) <= 1000
        and (_has_digit_and_letter(value) or _long_mixed_case(value))
        and entropy(value) >= 3.5
        and not is_hash_like(value)
        and not _is_sequence(value)
        and " " not in value
    )


def _looks_like_password(value: str) -> bool:
    """What a value after a prose key (``Password: ...``) must look like to be one."""
    return (
        len(value) >= 6
        and " " not in value
        and _has_digit_and_letter(value)
        and not is_hash_like(value)
        # a question's or exclamation's mark after a version is the sentence's
        and not _VERSION_OR_DATE.fullmatch(value.rstrip("?!"))
    ) or _looks_random(value)


# Words that occur in almost every English sentence and in no generated passphrase
# (diceware lists leave them out: they add no strength).
_FUNCTION_WORDS = _words(
    """a an the and or but nor of to in on at by for from with without into onto about as
    is are was were be been being am do does did done not no never yes it its this that
    these those there here i me my we us our you your he him his she her they them their
    who what which when where why how all any each every some more most other only own
    same so than too very can could will would shall should may might must have has had
    if then else because before after while until ask use see keep store stored one"""
)
_PROSE_WORD = re.compile(r"[(\"'«“]*[^\W\d_]+(?:['’-][^\W\d_]+)*[.,;:!?)\"'»”]*")
_SENTENCE_MARK = re.compile(r"[.,;:!?]")


def _is_prose(value: str) -> bool:
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


def _is_sentence(value: str) -> bool:
    """Prose (``_is_prose``) that reads as a sentence, not as a passphrase."""
    words = value.split()
    return _is_prose(value) and (
        len(words) >= 8
        or bool(_SENTENCE_MARK.search(value))
        or any(w.strip("()\"'«»“”.,;:!?").lower() in _FUNCTION_WORDS for w in words)
    )


def _opens_sentence(word: str, line: str) -> bool:
    """An unquoted value that is the first word of a sentence running to the line's end
    (a docstring's ``client_secret: The OAuth client secret.``): a function word or a
    capitalised word, not a word with digits as a password would have."""
    plain = word.rstrip(".,;:!?")
    return (
        plain.lower() in _FUNCTION_WORDS or (plain.istitle() and plain.isalpha())
    ) and _is_sentence(line)


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


def _assignment_findings(
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
            secret = _looks_random(value)
        elif strong and _code_style(key, bool(m["quote"]) or quoted, m["op"]):
            secret = not (value.isdigit() and len(value) < 12 and kind != "password")
        elif strong:
            secret = _looks_like_password(value)
        else:
            secret = _looks_random(value)
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
        or _is_placeholder(value)
        or _is_elsewhere(value)
        or text[end : end + 1] in ("(", "[")
        or _is_variable(value)
    )


def _is_words(value: str, kind: str, quoted: bool, text: str, start: int) -> bool:
    """Words, not a secret: a sentence under any key, a phrase of words under any key but
    a password's, or (unquoted) the first word of a sentence running to the line's end."""
    if _is_sentence(value) or (_is_prose(value) and kind != "password"):
        return True
    line_end = text.find("\n", start)
    return not quoted and _opens_sentence(value, text[start : line_end if line_end >= 0 else None])


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
    return _looks_random(value) and sum(c.isdigit() for c in value) >= 2


# ---- scanning ------------------------------------------------------------------------


def find(text: str, *, tokens_only: bool = False, code: bool = False) -> list[Finding]:
    """Every credential in ``text``, in order, overlaps merged; no fingerprints (fast).
    ``tokens_only``: only tokens that name themselves and private keys (for the text
    runs of a binary file, where a ``key = value`` means nothing). ``code``: a source
    or minified file, where a tokenizer's token fields and a minifier's one-letter
    names are code, so a value named by its key counts only when it looks random.

    Where two rules match overlapping text (``API_KEY=sk-proj-...``) the union is one
    finding, named by the first rule in table order (token rules before key-value).
    """
    if not text:
        return []
    lowered = text.lower()
    if len(lowered) != len(text):  # a few letters lower to two characters ("İ")
        lowered = text.translate(_ASCII_LOWER)
    # Self-identifying tokens are long words: looking for their prefixes among the long
    # words only (a small share of prose) spares a pass over the text per keyword.
    words = [w for w in lowered.split() if len(w) >= _SHORTEST_TOKEN]
    long_words = " ".join(words)
    longest = max(map(len, words), default=0)
    spans: list[tuple[int, int, int, str, str]] = []  # start, end, priority, rule, kind
    for priority, rule in enumerate(TOKEN_RULES):
        if tokens_only and not (rule.in_long_word or rule.id == "private-key"):
            continue
        if rule.min_word > longest:
            continue
        haystack = long_words if rule.in_long_word else lowered
        if not any(k in haystack for k in rule.keywords):
            continue
        for m in rule.pattern.finditer(text):
            secret = m.group(rule.group)
            glued = rule.glued and m.start() > 0 and text[m.start() - 1].isalnum()
            if secret and rule.accept(secret) and not (glued and not _glued_shape(secret)):
                spans.append((m.start(rule.group), m.end(rule.group), priority, rule.id, rule.kind))
    tail = len(TOKEN_RULES)
    assigned = () if tokens_only else _assignment_findings(text, lowered, code)
    for rule_id, kind, start, end in assigned:
        spans.append((start, end, tail, rule_id, kind))
    return _merged(text, spans)


def _merged(text: str, spans: list[tuple[int, int, int, str, str]]) -> list[Finding]:
    spans.sort(key=lambda s: (s[0], -s[1]))
    merged: list[list[Any]] = []
    for start, end, priority, rule, kind in spans:
        if merged and start < merged[-1][1]:
            last = merged[-1]
            last[1] = max(last[1], end)
            if priority < last[2]:
                last[2:] = [priority, rule, kind]
        else:
            merged.append([start, end, priority, rule, kind])
    findings = []
    for start, end, _, rule, kind in merged:
        line = text.count("\n", 0, start) + 1
        column = start - (text.rfind("\n", 0, start) + 1) + 1
        findings.append(Finding(rule, kind, start, end, line, column))
    return findings


_fingerprints: dict[bytes, str] = {}
_CACHE_KEY = _secrets.token_bytes(16)  # cache keys mean nothing outside this process


def fingerprint(rule: str, secret: str) -> str:
    """``<rule>:<16 hex>``: stable across runs and machines, never the secret."""
    data = secret.encode("utf-8", "surrogatepass")
    key = hashlib.blake2b(rule.encode() + b"\0" + data, key=_CACHE_KEY).digest()
    cached = _fingerprints.get(key)
    if cached is None:
        digest = hashlib.pbkdf2_hmac(
            "sha256", data, _FINGERPRINT_SALT + rule.encode(), _FINGERPRINT_ITERATIONS
        )
        cached = f"{rule}:{digest[:8].hex()}"
        if len(_fingerprints) > 4096:
            _fingerprints.clear()
        _fingerprints[key] = cached
    return cached


def scan(text: str, part: str | None = None, *, code: bool = False) -> list[Finding]:
    """:func:`find` with fingerprints; ``part`` labels where the text came from
    (``"title"``) in place of a line number."""
    return [
        replace(f, fingerprint=fingerprint(f.rule, text[f.start : f.end]), part=part)
        for f in find(text, code=code)
    ]


def scan_tokens(text: str) -> list[Finding]:
    """:func:`scan` with ``tokens_only`` (see :func:`find`)."""
    return [
        replace(f, fingerprint=fingerprint(f.rule, text[f.start : f.end]))
        for f in find(text, tokens_only=True)
    ]


def redact(text: str, findings: Sequence[Finding] | None = None, marker: str = REDACTED) -> str:
    """``text`` with each finding's span replaced by ``marker``."""
    return redact_and_relocate(text, find(text) if findings is None else findings, marker)[0]


def redact_and_relocate(
    text: str, findings: Sequence[Finding], marker: str = REDACTED
) -> tuple[str, list[Finding]]:
    """``text`` redacted, and each finding moved onto its marker there (line, column,
    span): a private key block's lines are gone, so later lines move up."""
    out: list[str] = []
    moved: list[Finding] = []
    last = length = 0
    line, line_start = 1, 0  # in the output
    for f in sorted(findings, key=lambda f: f.start):
        before = text[last : f.start]
        out.append(before)
        newlines = before.count("\n")
        if newlines:
            line += newlines
            line_start = length + before.rfind("\n") + 1
        length += len(before)
        moved.append(
            replace(
                f,
                start=length,
                end=length + len(marker),
                line=line,
                column=length - line_start + 1,
            )
        )
        out.append(marker)
        length += len(marker)
        last = f.end
    out.append(text[last:])
    return "".join(out), moved


def unsecret(name: str) -> str:
    """``name`` (a note's path or title) with every credential replaced, the allowlist
    aside: how a message shows a name, never with the secret in it."""
    return redact(name, marker=NAME_REDACTED)


def _named(findings: Sequence[Finding]) -> str:
    named = [f"{f.kind}, {f.where}" for f in findings[:_SHOWN_IN_SENTENCE]]
    if len(findings) > _SHOWN_IN_SENTENCE:
        named.append(f"and {len(findings) - _SHOWN_IN_SENTENCE} more")
    return "; ".join(named)


def _count(findings: Sequence[Finding]) -> str:
    return f"{len(findings)} credential{'' if len(findings) == 1 else 's'}"


def describe(findings: Sequence[Finding], verb: str = "redacted") -> str:
    """``1 credential redacted: GitHub token, line 3`` (empty for no findings)."""
    return f"{_count(findings)} {verb}: {_named(findings)}" if findings else ""


# ---- the policy a vault sets ---------------------------------------------------------


class CredentialRefused(RefusedError):
    """Refused to write or sync text holding a credential (the vault's setting)."""

    def __init__(self, message: str, hint: str, findings: Sequence[Finding]) -> None:
        super().__init__(message, hint)
        self.findings = tuple(findings)


@dataclass(frozen=True)
class Checked:
    """What the gate made of one text: the text to write and what it found."""

    text: str
    redacted: tuple[Finding, ...] = ()
    allowed: tuple[Finding, ...] = ()  # kept: the allowlist names them

    @property
    def sentence(self) -> str:
        return describe(self.redacted)


@dataclass(frozen=True)
class CredentialPolicy:
    """A vault's ``[credentials]`` table (config.CredentialSettings) at work: redact (the
    default) or refuse, and an allowlist of known false positives by note and
    fingerprint."""

    mode: Mode = "redact"
    allow: frozenset[tuple[str, str]] = frozenset()  # (note path or "*", fingerprint)

    @classmethod
    def of(cls, settings: CredentialSettings) -> CredentialPolicy:
        return cls(settings.mode, settings.allow)

    def allows(self, note: str, finding: Finding) -> bool:
        return (note, finding.fingerprint) in self.allow or ("*", finding.fingerprint) in self.allow

    def check(
        self,
        text: str,
        *,
        note: str,
        part: str | None = None,
        findings: Sequence[Finding] | None = None,
        marker: str = REDACTED,
    ) -> Checked:
        """The text to write: credentials redacted (or refused, in refuse mode),
        allowlisted ones kept. ``findings``: only these (fingerprinted) of the text's,
        e.g. those an edit adds; by default every one. The redacted findings come back
        placed on their markers in the new text.

        Raises:
            CredentialRefused: refuse mode and a credential not on the allowlist.
        """
        findings = scan(text, part) if findings is None else findings
        if not findings:
            return Checked(text)
        allowed = tuple(f for f in findings if self.allows(note, f))
        found = tuple(f for f in findings if f not in allowed)
        if found and self.mode == "refuse":
            raise refusal(note, found)
        redacted, moved = redact_and_relocate(text, found, marker)
        return Checked(redacted, tuple(moved), allowed)


def refusal(
    note: str, findings: Sequence[Finding], outcome: str = "nothing was written"
) -> CredentialRefused:
    """The error for ``findings`` in ``note``: what and where, and how to allow one."""
    return CredentialRefused(
        f"Refused: {note} holds {_count(findings)} ({_named(findings)}); {outcome}.",
        "Remove it (a credential belongs in a password manager, not in notes). If it is "
        "not a secret, allow it in .markvault.toml: [credentials] allow = "
        f'[{{ note = "{note}", fingerprint = "{findings[0].fingerprint}" }}]',
        findings,
    )
