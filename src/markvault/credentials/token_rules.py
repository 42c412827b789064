"""Token rules: credentials whose format identifies them (``ghp_``, ``AKIA``,
``-----BEGIN ... PRIVATE KEY-----``, JWTs, a password on a command line).

The rules follow the shape of gitleaks' (a keyword prefilter, a secret group, a minimum
entropy that lets placeholders such as ``ghp_xxxx...`` through), written for notes
rather than source trees.

- **Shapes, not only tokens.** A distinctive prefix is found glued to a word (a tag
  ``#tghp_...``, a key ``kAIza...``) when what follows has a token's shape (a digit and
  a letter); short, common prefixes (``sk-``, ``hf_``) still need a boundary. A
  password given on a command line (``mysql -pPASS``, ``curl -u user:PASS``,
  ``--password=PASS``) or in a connection string (``postgres://user:pass@host``) is one
  whatever it spells; only a template or a help text's ``PASSWORD`` stands in for one.
- **Documentation keys are caught.** Unlike gitleaks, ``AKIAIOSFODNN7EXAMPLE`` is not
  allowlisted: an agent cannot tell an example from a leak, and redacting an example
  costs nothing. An allowlist entry keeps a known false positive.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from markvault.credentials.value_shapes import (
    PLACEHOLDER_WORDS,
    decodes_to_private_key,
    has_digit_and_letter,
    is_placeholder,
    is_template,
    min_entropy,
    word_set,
)

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
    # follows a letter or digit must have a token's shape (see glued_shape).
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
        accept or min_entropy(3.0),
        in_long_word,
        glued,
        min_word,
    )


def _in_context(
    id: str, kind: str, pattern: str, keywords: Iterable[str], accept: Callable[[str], bool]
) -> TokenRule:
    """A rule for a secret told by what stands before it (an auth scheme, a URL's user,
    a netrc line, a key file's label, a command's flag), not by its own format: the
    secret is ``pattern``'s group 1, and the keyword is the context, which stands apart
    from the long words (``ftp://a:b@c`` is shorter than a token)."""
    return _rule(id, kind, pattern, keywords, group=1, accept=accept, in_long_word=False)


def glued_shape(secret: str) -> bool:
    """A token found glued to a word (``tghp_...``) must look generated: a digit and a
    letter in it, as nearly every random token has and an identifier rarely does."""
    return has_digit_and_letter(secret)


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
    return (len(secret) >= 20 or any(c.isdigit() for c in secret)) and not is_placeholder(secret)


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
        accept=min_entropy(2.25, prefix=4),
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
            *(f"gl{p}-" for p in word_set("pat dt rt cbt ptt ft imt agent oas soat ffct sa")),
            "gr1348941",
        ],
        glued=True,
    ),
    _rule(
        "slack-token",
        "Slack token",
        r"(?:xox[abposre]|xoxe\.xox[bp])-[A-Za-z0-9-]{10,}|xapp-\d-[A-Za-z0-9-]{10,}",
        ["xox", "xapp-"],
        accept=lambda s: has_digit_and_letter(s) and min_entropy(3.0)(s),  # not "xoxo-..."
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
        accept=lambda s: has_digit_and_letter(s) and min_entropy(3.0)(s),
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
    _in_context(
        "bearer-token",
        "bearer token",
        r"(?:Bearer|bearer|BEARER)[ \t]+([A-Za-z0-9._~+/-]{8,}=*)",
        ["bearer"],
        accept=_bearer_value,
    ),
    _in_context(
        "basic-auth",
        "basic auth credentials",
        r"(?:Basic|basic|BASIC)[ \t]+([A-Za-z0-9+/]{8,}={0,2})(?![\w+/=])",
        ["basic"],
        accept=_decodes_to_user_and_password,
    ),
    _in_context(
        "url-password",
        "password in URL",
        r"://[^\s/?#@:'\"<>]{0,100}:([^\s/?#@'\"<>]{1,200})@",
        ["://"],
        # A connection string's password is one whatever it spells ("user:pass"): only a
        # template or a mask ($PASSWORD, ${...}, <password>, ***) stands in for one.
        accept=lambda s: not is_template(s),
    ),
    _in_context(
        "netrc-password",
        "netrc password",
        r"machine[ \t]+\S+\s+login[ \t]+\S+\s+password[ \t]+(\S+)",
        ["machine"],
        accept=lambda s: not is_placeholder(s),
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
        accept=lambda s: decodes_to_private_key(s),
        min_word=40,
    ),
    _in_context(
        "private-key",
        "private key",
        r"Private-Lines: \d+\r?\n((?:[A-Za-z0-9+/=]+\r?\n?)+)",  # a PuTTY key file
        ["private-lines:"],
        accept=_always,
    ),
    *(
        _in_context(
            "command-line-password",
            "password on a command line",
            pattern,
            keywords,
            accept=lambda s: _command_line_password(s),
        )
        for pattern, keywords in _COMMAND_LINE_PASSWORDS
    ),
)


_METAVAR = re.compile(r"[A-Z][A-Z_]*")  # "--password PASSWORD" in a tool's help


def _command_line_password(value: str) -> bool:
    """A command line's password argument that is one: not a template or a help text's
    placeholder (``PASSWORD``), not the next flag, not a path or a command's output."""
    return (
        len(value) >= 3
        and not is_template(value)
        and not _METAVAR.fullmatch(value)
        and not value.startswith(("-", "/", "./", "~/", "("))
        and value.lower() not in PLACEHOLDER_WORDS
    )
