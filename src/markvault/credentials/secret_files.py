"""What a file holds, whatever its name claims: the scan `vault sync` runs on every file
it would commit, and `vault check` on every file of the vault.

A file is read for what it is, not for its suffix:

- **Text** (told by its bytes: a byte-order mark, UTF-16 or UTF-32 without one, or no
  NUL byte to speak of) is decoded and read with every rule of the gate
  (detection.py), a window at a time: a file of any size is read in bounded memory,
  and a finding keeps its line number. Source code and minified files (by suffix, or
  by very long lines) are read with the gate's ``code`` rules: there a value named by
  its key counts only when it looks random (a tokenizer's token fields are code).
- **Binary** files are read for the runs of printable text in them (ASCII and UTF-16),
  with the rules for tokens that name themselves (``ghp_...``, ``AKIA...``, a PEM
  private key), and for a private key's DER or OpenSSH structure at their start.
- **Files that are secrets by what they are**: private keys and keystores (``id_rsa``,
  ``*.pem``, ``*.key``, ``*.p12``, ``*.pfx``, ``*.jks``, ``*.ppk``...), ``.env`` files,
  cloud and tool credential files (``aws/credentials``, ``.npmrc``, ``.pypirc``,
  ``.netrc``, ``.git-credentials``, ``.docker/config.json``, kubeconfig), Terraform
  state and variables, password databases, shell histories: refused by name and
  place, whatever they hold (a key file's armour may be missing, a keystore is
  encrypted). ``.env.example`` and its kind, ``*.pub`` keys, and a ``.pem`` or ``.key``
  holding only certificates or public keys (or a Keynote ``.key``, a zip) are read by
  content instead.
- **Names**: every component of the path is read as text (an attachment named after a
  token).

Compressed archives (zip, gzip, docx) are read by name and by the printable runs of
their bytes only: what they compress is not unpacked.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from markvault.credentials.detection import scan, scan_tokens
from markvault.credentials.finding import Finding, fingerprint
from markvault.credentials.value_shapes import is_private_key_der

HEAD_BYTES = 8192  # what the kind of a file is told from
WINDOW_CHARS = 2 * 1024 * 1024  # text read by the gate at once
OVERLAP_CHARS = 64 * 1024  # carried into the next window: a finding across the cut is whole
_NUL_SHARE = 0.01  # more NUL bytes than this in the head: not text (once no UTF-16/32)

# Byte-order marks, longest first (UTF-32-LE's opens like UTF-16-LE's).
_BOMS = (
    (b"\x00\x00\xfe\xff", "utf-32-be"),
    (b"\xff\xfe\x00\x00", "utf-32-le"),
    (b"\x84\x31\x95\x33", "gb18030"),
    (b"\xef\xbb\xbf", "utf-8"),
    (b"\xfe\xff", "utf-16-be"),
    (b"\xff\xfe", "utf-16-le"),
    (b"+/v8", "utf-7"),
    (b"+/v9", "utf-7"),
    (b"+/v+", "utf-7"),
    (b"+/v/", "utf-7"),
)


def sniff(head: bytes) -> tuple[str | None, int]:
    """(encoding, length of its byte-order mark) of a file opening with ``head``; None
    for binary. UTF-16 and UTF-32 without a mark are told by their NUL bytes' lanes."""
    for bom, encoding in _BOMS:
        if head.startswith(bom):
            return encoding, 0 if encoding == "utf-7" else len(bom)
    nuls = head.count(0)
    if not nuls:
        return ("utf-8", 0) if _mostly_utf8(head) else (None, 0)
    quads = len(head) // 4
    if quads >= 2:
        lanes = [head[i : quads * 4 : 4].count(0) / quads for i in range(4)]
        if min(lanes[1:]) > 0.9 and lanes[0] < 0.5:
            return "utf-32-le", 0
        if min(lanes[:3]) > 0.9 and lanes[3] < 0.5:
            return "utf-32-be", 0
        even, odd = (head[i : quads * 4 : 2].count(0) / (quads * 2) for i in (0, 1))
        if odd > 0.6 and even < 0.1:
            return "utf-16-le", 0
        if even > 0.6 and odd < 0.1:
            return "utf-16-be", 0
    if nuls <= _NUL_SHARE * len(head) and _mostly_utf8(head):
        return "utf-8", 0  # text with a stray NUL
    return None, 0


def _mostly_utf8(head: bytes) -> bool:
    """Text in UTF-8 or a legacy 8-bit encoding (a few bytes that are not UTF-8), not
    random bytes (a compressed or encrypted file: most high bytes are invalid there)."""
    decoded = head.decode("utf-8", errors="replace")
    return decoded.count("\ufffd") <= 0.1 * len(decoded)


# ---- files that are secrets by name and place ----------------------------------------


@dataclass(frozen=True)
class _PathRule:
    id: str
    kind: str
    pattern: re.Pattern[str]  # on the vault-relative path, lower case, "/"-separated


def _path_rule(id: str, kind: str, pattern: str) -> _PathRule:
    return _PathRule(id, kind, re.compile(pattern))


_ANY = r"(?:^|/)"  # a path component starts here
PATH_RULES: tuple[_PathRule, ...] = (
    _path_rule(
        "private-key-file",
        "SSH private key file",
        _ANY + r"(?:id_(?:rsa|dsa|ecdsa|ed25519|xmss)(?:[-_]sk)?(?:[._-][^/]*)?|identity)$",
    ),
    _path_rule(
        "private-key-file",
        "private key file",
        r"\.(?:pem|key|p8|pk8|ppk|der|keystore|jks|jceks|bks|p12|pfx|pkcs12|keytab|gpg-key"
        r"|snk|mobileprovision|sso)$|"
        + _ANY
        + r"(?:\.ssh|\.gnupg)/(?!.*(?:\.pub|/known_hosts[^/]*|/authorized_keys2?|/config)$)",
    ),
    _path_rule(
        "env-file",
        ".env file",
        _ANY + r"(?:\.env(?:\.[^/]*)?|[^/]+\.env|\.envrc|\.flaskenv)$",
    ),
    _path_rule(
        "credentials-file",
        "cloud credentials file",
        _ANY
        + r"\.?aws/credentials$|"
        + _ANY
        + r"(?:application_default_credentials\.json|credentials\.db|access_tokens\.db"
        r"|client_secrets?(?:[._-][^/]*)?\.json|service[-_]?account[^/]*\.json"
        r"|accesstokens\.json|msal_token_cache\.[^/]*|\.s3cfg|\.boto|\.vault-token"
        r"|\.azure/[^/]*token[^/]*|\.config/gcloud/.*(?:credential|token)[^/]*)$",
    ),
    _path_rule(
        "credentials-file",
        "tool credentials file",
        _ANY + r"(?:\.npmrc|\.yarnrc(?:\.yml)?|\.pypirc|_?\.?netrc|\.git-credentials|\.pgpass"
        r"|\.my\.cnf|\.htpasswd|\.dockercfg|\.docker/config\.json|\.terraformrc"
        r"|terraform\.rc|\.gem/credentials|\.cargo/credentials(?:\.toml)?|\.composer/auth\.json"
        r"|auth\.json|\.config/gh/hosts\.yml|credentials\.xml|\.credentials(?:\.[^/]*)?"
        r"|\.password-store/.*|wp-config\.php)$",
    ),
    _path_rule(
        "kubeconfig",
        "Kubernetes config",
        _ANY + r"(?:\.kube/config|kubeconfig(?:[._-][^/]*)?|[^/]+\.kubeconfig)$",
    ),
    _path_rule(
        "terraform-state",
        "Terraform state or variables",
        r"\.tfstate(?:\.backup)?$|\.tfvars(?:\.json)?$",
    ),
    _path_rule(
        "password-database",
        "password database",
        r"\.(?:kdbx?|psafe3|agilekeychain|keychain(?:-db)?|1pif|opvault|bek|tpm)$"
        + "|"
        + _ANY
        + r"wallet\.dat$",
    ),
    _path_rule(
        "shell-history",
        "shell history",
        _ANY + r"(?:\.(?:bash|zsh|sh|ksh|fish|mysql|psql|sqlite|python|node_repl|irb|rediscli"
        r"|lesshst|php)_?history|\.history|fish_history)$",
    ),
)
# Files named like secrets that hold none by design.
_EXEMPT = re.compile(
    r"(?:\.(?:example|sample|template|tmpl|dist|defaults?|schema)(?:\.[^/.]*)?|\.pub)$"
)
_PUBLIC_PEM = re.compile(
    rb"-----BEGIN (?:CERTIFICATE|TRUSTED CERTIFICATE|X509 CRL|CERTIFICATE REQUEST"
    rb"|NEW CERTIFICATE REQUEST|PUBLIC KEY|RSA PUBLIC KEY|PGP PUBLIC KEY BLOCK"
    rb"|SSH2 PUBLIC KEY|DH PARAMETERS|EC PARAMETERS)-----"
)


def secret_file_rule(path: str, head: bytes = b"") -> tuple[str, str] | None:
    """(rule id, kind) when ``path`` names a file that is a secret by what it is; None
    for any other. ``head``: the file's first bytes, which clear a ``.pem`` or ``.key``
    holding only public material, and a ``.key`` that is a Keynote document (a zip)."""
    low = path.lower()
    if _EXEMPT.search(low):
        return None
    for rule in PATH_RULES:
        if rule.pattern.search(low):
            if rule.id == "private-key-file" and _only_public(low, head):
                return None
            return rule.id, rule.kind
    return None


def _only_public(low: str, head: bytes) -> bool:
    """A key-named file that holds no private key: PEM blocks of certificates or public
    keys only, an SSH public key, or a zip (Keynote's ``.key``)."""
    if not head or not low.endswith((".pem", ".key", ".der")):
        return False
    if head.startswith(b"PK\x03\x04"):
        return True
    if head.startswith((b"ssh-", b"ecdsa-sha2-")):
        return True
    # Certificates or public keys (a CA bundle opens with comments); a private key
    # further on is the content scan's to find.
    return bool(_PUBLIC_PEM.search(head)) and b"PRIVATE" not in head


# ---- reading a file's bytes ----------------------------------------------------------


@dataclass
class FileScan:
    """What one file holds."""

    path: str
    findings: list[Finding] = field(default_factory=list)
    encoding: str | None = None  # None: binary
    size: int = 0


def scan_file_bytes(path: str, chunks: Iterable[bytes]) -> FileScan:
    """Every credential in a file: in its name, in what it is, in its content (text by
    every rule, binary by its printable runs and its structure), read chunk by chunk."""
    result = FileScan(path)
    result.findings.extend(scan(path, part="file name"))
    stream = iter(chunks)
    head = b""
    for chunk in stream:
        head += chunk
        if len(head) >= HEAD_BYTES:
            break
    result.size = len(head)
    named = secret_file_rule(path, head[:HEAD_BYTES])
    if named is not None:
        rule, kind = named
        result.findings.append(
            Finding(rule, kind, 0, 0, 1, 1, fingerprint(rule, path), part="what the file is")
        )
    encoding, bom = sniff(head[:HEAD_BYTES])
    result.encoding = encoding
    if is_private_key_der(head):  # a DER or OpenSSH key, whatever its name
        rule = "private-key"
        key = fingerprint(rule, head[:256].hex())
        result.findings.append(Finding(rule, "private key", 0, 0, 1, 1, key, "binary content"))

    def counted() -> Iterator[bytes]:
        yield head
        for chunk in stream:
            result.size += len(chunk)
            yield chunk

    if encoding is None:
        result.findings.extend(_binary_findings(counted()))
    else:
        code = is_code(path, head[:HEAD_BYTES])
        result.findings.extend(_text_findings(_decoded(counted(), encoding, bom), code))
    return result


_CODE_SUFFIXES = re.compile(
    r"\.(?:m?js|cjs|jsx|tsx?|mts|py|pyi|rb|go|java|kt|kts|scala|cs|c|h|cc|cpp|hpp|rs|swift"
    r"|m|mm|php|lua|pl|pm|r|jl|dart|ex|exs|erl|hs|clj|css|scss|sass|less|map|wasm|vue"
    r"|svelte)$"
)


def is_code(path: str, head: bytes) -> bool:
    """Source code or a minified file (an Obsidian plugin's ``main.js``): by suffix, or
    by lines far longer than prose has. Read with the gate's ``code`` rules."""
    if _CODE_SUFFIXES.search(path.lower()):
        return True
    lines = head.count(b"\n") + 1
    return len(head) >= 2048 and len(head) / lines > 1000


def _decoded(chunks: Iterable[bytes], encoding: str, bom: int) -> Iterator[str]:
    decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
    first = True
    for chunk in chunks:
        if first:
            chunk, first = chunk[bom:], False
        text = decoder.decode(chunk)
        if text:
            yield text
    tail = decoder.decode(b"", final=True)
    if tail:
        yield tail


def _text_findings(pieces: Iterable[str], code: bool = False) -> Iterator[Finding]:
    """The gate's findings over a text given in pieces, a window at a time; a window's
    last ``OVERLAP_CHARS`` (from a line's start) open the next, and a finding is kept by
    the window it starts in before that cut, so none is lost or counted twice."""
    buffer, line, done = "", 1, False
    pieces = iter(pieces)
    while not done:
        for piece in pieces:
            buffer += piece
            if len(buffer) >= WINDOW_CHARS:
                break
        else:
            done = True
        if done:
            cut = len(buffer)
        else:
            cut = buffer.rfind("\n", 0, len(buffer) - OVERLAP_CHARS) + 1
            if cut <= 0:
                cut = len(buffer) - OVERLAP_CHARS
        for f in scan(buffer, code=code):
            if f.start < cut:
                yield Finding(
                    f.rule, f.kind, f.start, f.end, f.line + line - 1, f.column, f.fingerprint
                )
        line += buffer.count("\n", 0, cut)
        buffer = buffer[cut:]


_ASCII_RUN = re.compile(rb"[\x20-\x7e\t\r\n]{12,}")
_UTF16_RUN = re.compile(rb"(?:[\x20-\x7e\t\r\n]\x00){12,}")
_BINARY_CHUNK = 1024 * 1024
_BINARY_OVERLAP = 8192


def _binary_findings(chunks: Iterable[bytes]) -> Iterator[Finding]:
    """The self-naming tokens in a binary's printable runs (ASCII and UTF-16), chunk
    by chunk with an overlap."""
    seen: set[str] = set()
    carry = b""
    for chunk in chunks:
        data = carry + chunk
        if len(data) < _BINARY_CHUNK and chunk:
            carry = data
            continue
        yield from _runs(data, seen)
        carry = data[-_BINARY_OVERLAP:]
    if carry:
        yield from _runs(carry, seen)


def _runs(data: bytes, seen: set[str]) -> Iterator[Finding]:
    texts = [m.group().decode("ascii") for m in _ASCII_RUN.finditer(data)]
    texts += [m.group().decode("utf-16-le") for m in _UTF16_RUN.finditer(data)]
    for f in scan_tokens("\n\n".join(texts)):
        if f.fingerprint not in seen:
            seen.add(f.fingerprint)
            yield Finding(f.rule, f.kind, 0, 0, 1, 1, f.fingerprint, part="binary content")
