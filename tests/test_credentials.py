"""The credential gate: realistic secrets are caught in every setting a note holds them;
prose, code, Markdown, the starter vault, content hashes, git SHAs and UUIDs pass.

The secrets are generated here, not written out, so that this file is no leak for
a scanner and every run sees fresh ones.
"""

from __future__ import annotations

import base64
import hashlib
import random
import string
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from markvault.config import credential_settings
from markvault.credentials.detection import find, redact, scan
from markvault.credentials.finding import REDACTED, describe, fingerprint
from markvault.credentials.policy import CredentialPolicy, CredentialRefused, sift
from markvault.credentials.value_shapes import entropy
from markvault.errors import ConfigError
from markvault.files.vault_files import content_hash
from markvault.sessions.sanitize import redact as redact_transcript_text

from .conftest import BUNDLED_VAULT, REPO

ALNUM = string.ascii_letters + string.digits
LOWER_ALNUM = string.ascii_lowercase + string.digits
UPPER_ALNUM = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"


def rand(rng: random.Random, alphabet: str, n: int) -> str:
    """A random string with a digit in it when the alphabet has digits (as keys do)."""
    while True:
        out = "".join(rng.choice(alphabet) for _ in range(n))
        if any(c.isdigit() for c in out) or not any(c.isdigit() for c in alphabet):
            return out


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def jwt(rng: random.Random) -> str:
    header = b64(b'{"alg":"HS256","typ":"JWT"}')
    payload = b64(b'{"sub":"%d","name":"Ada"}' % rng.randrange(10**9))
    return f"{header}.{payload}.{rand(rng, URLSAFE, 43)}"


def pem(rng: random.Random, label: str = "RSA PRIVATE KEY") -> str:
    body = "\n".join(rand(rng, B64, 64) for _ in range(6)) + "\n" + rand(rng, B64, 20) + "=="
    return f"-----BEGIN {label}-----\n{body}\n-----END {label}-----"


# kind -> a generator of one secret of that kind, as it appears bare in text.
TOKENS: dict[str, Callable[[random.Random], str]] = {
    "AWS access key": lambda r: "AKIA" + rand(r, UPPER_ALNUM, 16),
    "AWS access key (session)": lambda r: "ASIA" + rand(r, UPPER_ALNUM, 16),
    "AWS documentation key": lambda r: "AKIAIOSFODNN7EXAMPLE",
    "Google API key": lambda r: "AIza" + rand(r, URLSAFE, 35),
    "Google OAuth secret": lambda r: "GOCSPX-" + rand(r, URLSAFE, 28),
    "Google OAuth token": lambda r: "ya29." + rand(r, URLSAFE, 80),
    "Azure client secret": lambda r: rand(r, ALNUM, 3) + "8Q~" + rand(r, ALNUM + "_.-", 34),
    "GitHub classic token": lambda r: "ghp_" + rand(r, ALNUM, 36),
    "GitHub OAuth token": lambda r: "gho_" + rand(r, ALNUM, 36),
    "GitHub app token": lambda r: "ghs_" + rand(r, ALNUM, 36),
    "GitHub fine-grained token": lambda r: "github_pat_11" + rand(r, ALNUM + "_", 80),
    "GitLab token": lambda r: "glpat-" + rand(r, URLSAFE, 20),
    "GitLab deploy token": lambda r: "gldt-" + rand(r, URLSAFE, 20),
    "Slack bot token": lambda r: (
        f"xoxb-{r.randrange(10**11, 10**12)}-{r.randrange(10**12, 10**13)}-{rand(r, ALNUM, 24)}"
    ),
    "Slack user token": lambda r: f"xoxp-{r.randrange(10**11, 10**12)}-{rand(r, ALNUM, 32)}",
    "Slack app token": lambda r: f"xapp-1-A{rand(r, UPPER_ALNUM, 10)}-{r.randrange(10**12)}-x1",
    "OpenAI project key": lambda r: "sk-proj-" + rand(r, URLSAFE, 48),
    "OpenAI legacy key": lambda r: "sk-" + rand(r, ALNUM, 20) + "T3BlbkFJ" + rand(r, ALNUM, 20),
    "Anthropic key": lambda r: "sk-ant-api03-" + rand(r, URLSAFE, 93) + "AA",
    "Stripe key": lambda r: "sk_live_" + rand(r, ALNUM, 24),
    "npm token": lambda r: "npm_" + rand(r, ALNUM, 36),
    "PyPI token": lambda r: "pypi-AgEIcHlwaS5vcmc" + rand(r, URLSAFE, 60),
    "Hugging Face token": lambda r: "hf_" + rand(r, string.ascii_letters, 34),
    "SendGrid key": lambda r: f"SG.{rand(r, URLSAFE, 22)}.{rand(r, URLSAFE, 43)}",
    "DigitalOcean token": lambda r: "dop_v1_" + rand(r, HEX, 64),
    "HashiCorp Vault token": lambda r: "hvs." + rand(r, URLSAFE, 90),
    "Databricks token": lambda r: "dapi" + rand(r, HEX, 32),
    "Telegram bot token": lambda r: f"{r.randrange(10**8, 10**9)}:AA{rand(r, URLSAFE, 33)}",
    "age key": lambda r: "AGE-SECRET-KEY-1" + rand(r, UPPER_ALNUM, 58),
    "JSON web token": jwt,
    "private key": pem,
    "OpenSSH private key": lambda r: pem(r, "OPENSSH PRIVATE KEY"),
    "PGP private key": lambda r: pem(r, "PGP PRIVATE KEY BLOCK"),
}

# The settings a token turns up in: prose, config files, code, Markdown, a title.
CONTEXTS = [
    "{s}",
    "The deploy token is {s} for now.",
    "token {s}",
    "export GITHUB_TOKEN={s}",
    'config = {{"api_key": "{s}"}}',
    "api_key: '{s}'",
    "- key: `{s}`",
    "| prod | {s} |",
    "```\n{s}\n```",
    "> quoted {s}, then more",
    "deploy key is {s} secret",
    "[{s}](https://example.com)",
    "curl -H 'Authorization: Bearer {s}' https://api.example.com",
]

WEBHOOK = f"T{rand(random.Random(2), UPPER_ALNUM, 8)}/B{rand(random.Random(3), UPPER_ALNUM, 10)}/"
WEBHOOK += rand(random.Random(4), ALNUM, 24)
# Secrets that their key or their place makes secrets: (text, the secret in it).
ASSIGNED = [
    ("PASSWORD=correct-horse-7", "correct-horse-7"),
    ("DB_PASSWORD='S3cure!pass'", "S3cure!pass"),
    ("export SECRET_KEY=q8Zr2mN5vX1cB7", "q8Zr2mN5vX1cB7"),
    (
        '"client_secret": "6da89121079f83b2eb6acccf8219ea982c3d79bccc3e9c6a85856480661f8fde"',
        "6da89121079f83b2eb6acccf8219ea982c3d79bccc3e9c6a85856480661f8fde",
    ),
    ("API_TOKEN=dafa7817-e246-48f3-91a7-e87653d587b8", "dafa7817-e246-48f3-91a7-e87653d587b8"),
    (
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ),
    ("clientSecret: Zf3D0LXCM3EIMbgJpUNnkRtOfOueHznB", "Zf3D0LXCM3EIMbgJpUNnkRtOfOueHznB"),
    ("password: hunter42", "hunter42"),
    # A phrase of words is a passphrase under a password's key (and only there).
    ('password = "correct horse battery staple"', "correct horse battery staple"),
    ('password: "Tr0ub4dor &3"', "Tr0ub4dor &3"),
    ('DB_PASSWORD="hunter2 again"', "hunter2 again"),
    ("**Password:** Summer2024!", "Summer2024!"),
    ("The wifi password: Tr0ub4dor&3 (ask Sam)", "Tr0ub4dor&3"),
    (
        "signing_key = 9Cnzj4p4WGeKLs1Pt8QuKUpRKfFLfRYC9AIKjbJTWit",
        "9Cnzj4p4WGeKLs1Pt8QuKUpRKfFLfRYC9AIKjbJTWit",
    ),
    ("key = Zf3D0LXCM3EIMbgJpUNnkRtOfOueHznB", "Zf3D0LXCM3EIMbgJpUNnkRtOfOueHznB"),
    ("postgres://app:pg-S3cret-9@db.internal:5432/app", "pg-S3cret-9"),
    ("git clone https://ada:hunter3@github.com/x/y.git", "hunter3"),
    ("machine api.example.com login ada password s3cr3tpw", "s3cr3tpw"),
    (
        "Authorization: Basic " + base64.b64encode(b"ada:s3cret-pw").decode(),
        base64.b64encode(b"ada:s3cret-pw").decode(),
    ),
    (
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey="
        + base64.b64encode(bytes(range(64))).decode()
        + ";EndpointSuffix=core.windows.net",
        base64.b64encode(bytes(range(64))).decode(),
    ),
    (f"https://hooks.slack.com/services/{WEBHOOK}", WEBHOOK),
]

# Code and prose that speak of credentials without holding one.
ORDINARY = [
    "max_tokens=4096 input_tokens: 10 the token budget, a bearer responsibility",
    "task-sk-runner, AKIA, Bearer $TOKEN, sk-short, SECRET=, password=",
    "Secret: keep it simple. The token: a string the server issues. Key: press Enter.",
    "password = user_password\ntoken = get_token()\nsecret = os.environ['SECRET']",
    "api_key = settings.API_KEY\nclient = Client(api_key=api_key)",
    'token = response.json()["access_token"]',
    "PWD=/home/ada/project\nOLDPWD=/tmp\nKEY_FILE=~/.ssh/id_ed25519",
    "password: ${{ secrets.DB_PASSWORD }}\ntoken: {{ .Values.token }}\nkey: <your-key>",
    "secretName: app-secret\nsecretKeyRef:\n  name: db\n  key: password",
    "csrf_token = Mj2qykJO5rELyHgezQ69nzUX0i3OH67V7V4eUrLfpuyOuxmiW9rhROG",
    "public_key = 9Cnzj4p4WGeKLs1Pt8QuKUpRKfFLfRYC9AIKjbJTWit",
    "next_page_token = CiAKGjBpNDd2Nmp2Zml2cXRwYjBpOXA",
    "token_count = 1234567\npassword_min_length = 12\nkey_id = 7",
    "primary_key = id; sort_key = created_at; cache_key = 3fa9c2b1d4e5",
    "Files start with -----BEGIN RSA PRIVATE KEY----- and end with the END line.",
    "Use Basic authentication, or bearer tokens; see the key management docs.",
    "The header is `Authorization: Bearer <token>`; `vault mcp token` prints it.",
    "https://user:<password>@example.com and postgres://postgres:${PGPASSWORD}@db/app",
    "version: 1.2.3\ntoken: v2.0.1\npassword: 2024-05-01",
    "sk-learn-contrib-imbalanced is a library; ghp_ is GitHub's prefix.",
    "ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx and AKIAXXXXXXXXXXXXXXXX are placeholders",
    "The passkey flow: passkeys replace passwords. Bypass: none. Compass: north.",
    "if password == '': raise ValueError('empty password')",
    "TOKEN=[REDACTED] and password: [REDACTED]",
    # Sentences are prose under any key; a phrase of words is no token, key or secret.
    'NO_SECRETS = "Never store secrets, tokens or passwords in notes."',
    'DB_PASSWORD = "Ask the admin for it."\nAPI_TOKEN = "see the team vault"',
    'SECRET_MESSAGE = "Meet me by the old oak tree at noon"',
    'secret = "correct horse battery staple"\ntoken: "rotate every quarter"',
    # Docstrings and type annotations describe a secret without holding one.
    "refresh_token: The refresh token to exchange.\nclient_secret: The OAuth client secret.",
    "client_secret_expires_at: int | None = None\nfile_secret_settings: SettingsCallable",
    "token_endpoint_auth_method: Confidential-client auth method, either post or basic",
    "Raises:\n    CredentialRefused: one or more files hold one; the message names them.",
]

HASH_CONTEXTS = [
    "{h}",
    "commit {h}",
    "Merge of {h} into main",
    "hash: {h}",
    '"hash": "{h}"',
    "sha256={h}",
    "`{h}` (content hash {h})",
    "| {h} | ok |",
    "id: {h}",
    "session_id: {h}",
    "checksum = {h}",
    "cache_key = {h}",
    "token: {h}",
    "secret: {h}",
    "request id {h}; trace {h}",
]


@pytest.mark.parametrize("kind", sorted(TOKENS))
@pytest.mark.parametrize("context", CONTEXTS)
def test_tokens_are_caught_in_every_setting(kind: str, context: str) -> None:
    rng = random.Random(f"{kind}{context}")
    secret = TOKENS[kind](rng)
    text = context.format(s=secret)
    found = find(text)
    out = redact(text, found)
    assert found, text
    assert secret not in out and REDACTED in out
    assert find(out) == []  # idempotent: the marker is never a finding


@pytest.mark.parametrize(("text", "secret"), ASSIGNED, ids=[a[1][:12] for a in ASSIGNED])
def test_secrets_named_by_their_key_or_place_are_caught(text: str, secret: str) -> None:
    out = redact(text)
    assert secret not in out, out
    assert REDACTED in out
    assert redact(out) == out


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_code_and_prose_pass(text: str) -> None:
    assert find(text) == []


def test_only_the_value_is_redacted() -> None:
    assert redact("export API_KEY=q8Zr2mN5vX1cB7 && run") == f"export API_KEY={REDACTED} && run"
    assert redact('{"password": "a b c 1"}') == f'{{"password": "{REDACTED}"}}'
    assert redact("https://ada:hunter3@host/x") == f"https://ada:{REDACTED}@host/x"
    token = "ghp_" + rand(random.Random(1), ALNUM, 36)
    # Two rules on one span (the key names it, the prefix identifies it): one finding.
    [finding] = find(f"GITHUB_TOKEN={token}.")
    assert finding.kind == "GitHub token"


@given(st.binary(min_size=4, max_size=64), st.sampled_from(HASH_CONTEXTS))
def test_hex_digests_pass(data: bytes, context: str) -> None:
    for digest in (
        content_hash(data),  # what markvault writes into documents and returns on reads
        hashlib.sha1(data).hexdigest(),  # git SHAs, full and short
        hashlib.sha1(data).hexdigest()[:7],
        hashlib.sha256(data).hexdigest(),
        hashlib.md5(data).hexdigest().upper(),
    ):
        assert find(context.format(h=digest)) == [], context.format(h=digest)


@given(st.uuids(), st.sampled_from(HASH_CONTEXTS))
def test_uuids_pass(value: uuid.UUID, context: str) -> None:
    for shown in (str(value), str(value).upper(), value.hex):
        assert find(context.format(h=shown)) == []


WORDS = [
    "the",
    "a",
    "of",
    "to",
    "and",
    "in",
    "is",
    "it",
    "for",
    "that",
    "on",
    "with",
    "as",
    "was",
    "token",
    "tokens",
    "key",
    "keys",
    "secret",
    "secrets",
    "password",
    "passwords",
    "pass",
    "access",
    "auth",
    "bearer",
    "basic",
    "private",
    "public",
    "client",
    "session",
    "cookie",
    "api",
    "credential",
    "github",
    "aws",
    "slack",
    "akia",
    "sk",
    "ghp",
    "eyJ",
    "begin",
    "end",
    "note",
    "vault",
    "search",
    "index",
    "2024",
    "v1.2.3",
    "10",
    "42",
    "3.5",
    "id",
    "hash",
    "sha",
    "commit",
    "UUID",
    "README.md",
    "src/main.py",
]


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(
            st.sampled_from(WORDS),
            st.sampled_from([" ", " ", " ", ", ", ". ", ": ", "\n", " - ", "; ", "? ", "\n\n# "]),
        ),
        max_size=80,
    )
)
def test_prose_about_credentials_passes(pairs: list[tuple[str, str]]) -> None:
    text = "".join(word + sep for word, sep in pairs)
    assert find(text) == [], text


@settings(max_examples=200)
@given(
    st.sampled_from(sorted(TOKENS)),
    st.text(alphabet=string.ascii_letters + " \n.,:#-*`", max_size=200),
    st.text(alphabet=string.ascii_letters + " \n.,:#-*`", max_size=200),
    st.integers(0, 2**32),
)
def test_a_token_anywhere_in_prose_is_caught(kind: str, before: str, after: str, seed: int) -> None:
    secret = TOKENS[kind](random.Random(seed))
    text = f"{before} {secret} {after}"
    out = redact(text)
    assert secret not in out
    assert redact(out) == out


def test_a_version_ending_a_question_is_no_password() -> None:
    """Found by the prose test above: the question mark kept "v1.2.3?" from reading as
    a version, so a password-like value was reported."""
    assert find("token: v1.2.3? ") == []
    assert find("Which token: v1.2.3! or v2?") == []
    assert [f.rule for f in find("password: hunter2?x")] == ["password"]


def test_a_key_whose_random_part_repeats_letters_is_caught() -> None:
    """Found by the test above: over all 20 characters the fixed prefix's repeated A kept
    this real-looking key under the entropy floor; the random 16 are measured alone."""
    assert [f.rule for f in find(" AKIAPI9TPP5ACCIA1TIC ")] == ["aws-access-key"]
    assert find("AKIAXXXXXXXXXXXXXXXX and ASIA0000000000000000") == []


SRC = REPO / "src" / "markvault"
GATE_MODULES = (  # the gate's own examples
    "credentials/token_rules.py",
    "credentials/key_value_rules.py",
    "credentials/detection.py",
)


def test_the_starter_vault_templates_and_docs_pass() -> None:
    files = [
        *BUNDLED_VAULT.rglob("*.md"),
        *(REPO / "templates").glob("*.md"),
        REPO / "README.md",
        *(REPO / "docs").glob("*.md"),
        *(REPO / "bench").rglob("*.md"),
        # Code about tokens, holding none (the gate's own examples excepted).
        *(p for p in SRC.rglob("*.py") if p.relative_to(SRC).as_posix() not in GATE_MODULES),
    ]
    assert len(files) > 20
    for path in files:
        found = find(path.read_text(encoding="utf-8"))
        assert found == [], (path, [(f.kind, f.line) for f in found])


def test_findings_say_what_and_where_never_the_secret() -> None:
    rng = random.Random(7)
    token = "ghp_" + rand(rng, ALNUM, 36)
    aws = "AKIA" + rand(rng, UPPER_ALNUM, 16)
    text = f"# Deploy\n\nkey {aws}\ntoken: {token}\n"
    found = scan(text)
    assert [(f.kind, f.line, f.column) for f in found] == [
        ("AWS access key", 3, 5),
        ("GitHub token", 4, 8),
    ]
    assert describe(found) == "2 credentials redacted: AWS access key, line 3; GitHub token, line 4"
    assert describe(found[1:]) == "1 credential redacted: GitHub token, line 4"
    assert describe([]) == ""
    for f in found:
        secret = text[f.start : f.end]
        shown = repr(f) + str(f.to_dict())
        assert all(secret[i : i + 6] not in shown for i in range(len(secret) - 5))
        assert f.fingerprint == fingerprint(f.rule, secret)
        assert f.fingerprint.startswith(f.rule + ":") and len(f.fingerprint.split(":")[1]) == 16
    [title] = scan(f"deploy key is {aws} secret", part="title")
    assert title.where == "title"
    assert describe([title]) == "1 credential redacted: AWS access key, title"


def test_fingerprints_are_stable_and_distinct() -> None:
    assert fingerprint("password", "hunter2") == fingerprint("password", "hunter2")
    assert fingerprint("password", "hunter2") != fingerprint("password", "hunter3")
    assert fingerprint("password", "hunter2") != fingerprint("token", "hunter2")
    # A known value, so that a change of scheme (which would void every allowlist) shows.
    expected = hashlib.pbkdf2_hmac(
        "sha256", b"hunter2", b"markvault credential fingerprint v1:password", 10_000
    )[:8].hex()
    assert fingerprint("password", "hunter2") == f"password:{expected}"


@pytest.mark.parametrize("kind", sorted(TOKENS))
def test_a_fingerprint_is_never_a_finding(kind: str) -> None:
    """Allowlists in .markvault.toml and `vault check`'s output quote fingerprints: the
    gate must not take its own fingerprints for secrets (sync scans that file too)."""
    found = scan(f"value: {TOKENS[kind](random.Random(11))}\npassword = hunter42x\n")
    assert found
    for f in found:
        for context in ("{fp}", 'fingerprint = "{fp}"', "notes/a.md:3  {fp}", "- {fp}"):
            assert find(context.format(fp=f.fingerprint)) == [], (f.rule, context)


def test_entropy_measures_spread() -> None:
    assert entropy("") == 0 and entropy("aaaa") == 0
    assert entropy("abcd") == 2.0
    assert entropy("Zf3D0LXCM3EIMbgJpUNnkRtOfOueHznB") > 4


# ---- the policy ----------------------------------------------------------------------


def token_text(seed: int = 3) -> tuple[str, str]:
    token = "ghp_" + rand(random.Random(seed), ALNUM, 36)
    return f"line one\nline two\nuse {token} here\n", token


def test_redact_mode_redacts_and_says_so() -> None:
    text, token = token_text()
    checked = CredentialPolicy().check(text, note="notes/a.md")
    assert token not in checked.text and f"use {REDACTED} here" in checked.text
    assert checked.sentence == "1 credential redacted: GitHub token, line 3"
    clean = CredentialPolicy().check("nothing here", note="notes/a.md")
    assert clean.text == "nothing here" and clean.sentence == "" and clean.redacted == ()


def test_refuse_mode_refuses_naming_the_note_line_and_fingerprint() -> None:
    text, _ = token_text()
    policy = CredentialPolicy(mode="refuse")
    with pytest.raises(CredentialRefused) as caught:
        policy.check(text, note="notes/a.md")
    err = caught.value
    [finding] = err.findings
    assert err.exit_code == 6
    assert err.message == (
        "Refused: notes/a.md holds 1 credential (GitHub token, line 3); nothing was written."
    )
    assert f'note = "notes/a.md", fingerprint = "{finding.fingerprint}"' in str(err.hint)


def test_the_allowlist_keeps_a_known_false_positive_in_its_note_only() -> None:
    text, token = token_text()
    [finding] = scan(text)
    policy = CredentialPolicy.of(
        credential_settings(
            {
                "mode": "refuse",
                "allow": [{"note": "notes/a.md", "fingerprint": finding.fingerprint}],
            }
        )
    )
    kept = policy.check(text, note="notes/a.md")
    assert kept.text == text and kept.allowed == (finding,) and kept.redacted == ()
    with pytest.raises(CredentialRefused):
        policy.check(text, note="notes/b.md")
    anywhere = CredentialPolicy(allow=frozenset({("*", finding.fingerprint)}))
    assert anywhere.check(text, note="notes/b.md").text == text
    other, _ = token_text(seed=4)
    assert token not in other and REDACTED in anywhere.check(other, note="notes/b.md").text


@pytest.mark.parametrize(
    ("entry", "kept"),
    [("notes/a.md", True), ("*", True), ("notes/b.md", False), (None, False)],
)
def test_every_path_applies_the_allowlist_alike(entry: str | None, kept: bool) -> None:
    """A write's check, a scan's findings (fingerprinted) and a transcript's redaction
    (findings fingerprinted only when the allowlist names any) let the same through."""
    text, token = token_text()
    [finding] = scan(text)
    other, _ = token_text(seed=4)  # a second credential, never allowed
    text += other
    allow = frozenset() if entry is None else frozenset({(entry, finding.fingerprint)})
    policy = CredentialPolicy(allow=allow)
    allowed = policy.allowed_in("notes/a.md")
    checked = policy.check(text, note="notes/a.md")
    assert (token in checked.text) is kept and len(checked.redacted) == 2 - kept
    assert [len(part) for part in policy.sift("notes/a.md", scan(text))] == [2 - kept, kept]
    assert [len(part) for part in sift(find(text), allowed, text)] == [2 - kept, kept]
    assert (token in redact_transcript_text(text, allowed=allowed)) is kept


@pytest.mark.parametrize(
    "table",
    [
        {"mode": "warn"},
        {"allow": [{"note": "x.md"}]},
        {"allow": "x"},
        {"mode": "redact", "extra": 1},
        ["redact"],
    ],
)
def test_a_bad_credentials_table_is_a_config_error(table: object) -> None:
    with pytest.raises(ConfigError) as caught:
        credential_settings(table)
    assert "credentials" in str(caught.value)


def test_no_table_means_redact_with_no_allowlist() -> None:
    assert CredentialPolicy.of(credential_settings(None)) == CredentialPolicy("redact", frozenset())


def test_the_gate_reads_a_vault_worth_of_notes(tmp_path: Path) -> None:
    """Not a timing test (bench/bench_credentials.py measures): a large, varied text
    with one token at the very end is scanned whole."""
    notes = [p.read_text(encoding="utf-8") for p in BUNDLED_VAULT.rglob("*.md")]
    text = "\n".join(notes * 20)
    token = "glpat-" + rand(random.Random(5), URLSAFE, 20)
    found = find(text + "\n" + token)
    assert [f.kind for f in found] == ["GitLab token"]
    assert found[0].line == text.count("\n") + 2


@pytest.mark.parametrize(
    "value",
    [
        "/IUF8QkOCktSmSOCyiQ2liQ3aDRI3nz4I6qIAp0p",  # base64 opening with '/'
        "/T9PRekKHKBaW2ulKta0PxLiqpPkQG/ijZ/DxGnY",  # ... and holding more of them
        "Of1pwJCaCStBwWZzHmUsCbUJTlL0ZmAEpu6XqrQT",  # spells 'pw' by chance
        "gXxWAaEEcvTUwFLNdquQYgSKtodBhpHMroJTHrGQ",  # letters alone
    ],
)
@pytest.mark.parametrize("key", ["secret: ", "aws_secret_access_key = "])
def test_a_random_key_is_caught_whatever_it_opens_with_or_spells(key: str, value: str) -> None:
    """Found by a test whose AWS secret is drawn at random: 2% of such keys passed."""
    assert [f.kind for f in find(key + value)] != []


@pytest.mark.parametrize(
    "line",
    [
        "key_file: /etc/ssl/private/key.pem",
        "secret_path = /var/lib/docker/overlay2/3f2a9b1c7e5d/key",
        "home: /Users/jdoe/Library/Keys2",
        "password = userPasswordHash2",
        "secret: DoNotCommitThisToGitHubEverAgain",
    ],
)
def test_paths_names_and_phrases_under_a_key_pass(line: str) -> None:
    assert find(line) == []
