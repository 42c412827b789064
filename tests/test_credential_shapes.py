"""The gate's shapes beyond a token standing alone: a known prefix glued to a word,
passwords on command lines and in connection strings, a private key's body without its
armour lines. Each class is caught in its variants; the look-alikes pass.

Secrets are generated, never written out (this file is no leak for a scanner).
"""

from __future__ import annotations

import base64
import random

import pytest

from markvault.credentials.detection import find

from .test_credentials import ALNUM, TOKENS, rand

# Token kinds whose prefix is too short or too common to be told apart glued to a word
# ("task-..." holds "sk-"), or that carry their own boundary rule.
NOT_GLUED = {
    "OpenAI project key",
    "OpenAI legacy key",
    "Hugging Face token",
    "Azure client secret",
    "private key",
    "OpenSSH private key",
    "PGP private key",
}
GLUED_CONTEXTS = [
    "tags: [t{s}]",  # a tag glued to the token
    "#t{s}",
    "k{s}: value",  # a frontmatter key
    "x_{s}_y",  # inside an identifier
    "{s}_suffix",
    "backup-{s}.txt",
]


@pytest.mark.parametrize("kind", sorted(set(TOKENS) - NOT_GLUED))
@pytest.mark.parametrize("context", GLUED_CONTEXTS)
def test_a_known_prefix_glued_to_a_word_is_caught(kind: str, context: str) -> None:
    secret = TOKENS[kind](random.Random(f"{kind}{context}"))
    text = context.format(s=secret)
    found = find(text)
    assert found, f"{kind} in {text!r}"
    assert all(text[f.start : f.end] in secret or secret in text[f.start : f.end] for f in found)


GLUED_LOOKALIKES = [
    "disk_test_results_are_here and task_live_update_monitor",
    "the desk_test_Fixtures module, mask_live_preview, risk_test_scenarios",
    "myghp_handler_function_name_that_is_long_enough_to_match_a_token",
    "Sphinx xoxo-greetings-and-best-wishes, brainstorming-secret_sauce",
    "SMALLAKIASCHEDULERPROCESSING and ASIANCUISINEPAGESINDEX",
    "MSG.setHeaderValue(x) and the dp.pt.example of a glossary",
    'notabugs eyJ is base64 for {"',
]


@pytest.mark.parametrize("text", GLUED_LOOKALIKES)
def test_prefixes_inside_ordinary_words_pass(text: str) -> None:
    assert find(text) == []


def password(rng: random.Random) -> str:
    return rand(rng, ALNUM, 12)


COMMAND_LINES = [
    "mysql -u root -p{p} appdb",
    "mysqldump -h db -uroot -p'{p}' app > dump.sql",
    "mariadb --user=root --password={p}",
    "curl -u admin:{p} https://api.example.com/v1",
    "curl --user 'deploy:{p}' -X POST https://ci.example.com",
    "wget --user=bob --password={p} https://example.com/file",
    "sshpass -p {p} ssh admin@host",
    "redis-cli -h cache -a {p} ping",
    "docker login -u bob -p {p} registry.example.com",
    "ldapsearch -x -D cn=admin -w {p} -b dc=example",
    "sqlcmd -S db -U sa -P {p}",
    "htpasswd -bc .htpasswd alice {p}",
    "smbclient //nas/share -U alice%{p}",
    "openssl pkcs12 -export -passout pass:{p} -out x.p12",
    "keytool -importkeystore -srcstorepass {p} -deststorepass {p}",
    "7z a -p{p} backup.7z notes/",
    "mongosh --username admin --password {p}",
    "xfreerdp /u:admin /p:{p} /v:host",
    "sqlplus scott/{p}@orcl",
    "PGPASSWORD={p} psql -h db app",
    "export MYSQLPASSWORD={p}",
]


@pytest.mark.parametrize("line", COMMAND_LINES)
def test_a_password_on_a_command_line_is_caught(line: str) -> None:
    secret = password(random.Random(line))
    text = f"Run this:\n\n    {line.format(p=secret)}\n"
    found = find(text)
    assert [text[f.start : f.end] for f in found] == [secret] * line.count("{p}"), text


CONNECTION_STRINGS = [
    "postgres://user:pass@host/db",
    "postgresql://app:{p}@db.internal:5432/app",
    "mysql://root:{p}@localhost:3306/app",
    "mongodb+srv://admin:{p}@cluster0.example.net/test",
    "redis://:{p}@cache:6379/0",
    "amqp://guest:guest@localhost:5672/",
    "Server=db;Database=app;User Id=sa;Password={p};",
    "Data Source=db;Initial Catalog=app;User ID=sa;Pwd={p};",
    "jdbc:postgresql://db:5432/app?user=app&password={p}",
]


@pytest.mark.parametrize("dsn", CONNECTION_STRINGS)
def test_a_connection_string_password_is_caught(dsn: str) -> None:
    text = "DATABASE_URL=" + dsn.format(p=password(random.Random(dsn)))
    assert [f.rule for f in find(text)], text


COMMAND_LOOKALIKES = [
    "mysql -u root -p appdb    # asks for the password",
    "docker login --password-stdin < token.txt",
    "psql --no-password -h db app",
    "usage: tool --password PASSWORD --token TOKEN",
    "curl -u $USER:$PASS https://x and curl -u user:${API_PASSWORD} https://y",
    "docker run -p 8080:80 -u 1000:1000 nginx",
    "redis-cli -p 6379 ping",
    "zip -r notes.zip notes/ and 7z a -p backup.7z notes/",
    "mysql --password=$(cat ~/.db-pass) app",
    "postgres://app:${PGPASSWORD}@db/app and https://user:<password>@example.com",
    "sshpass -f ~/.pw ssh host; --password-file /run/secrets/db",
    "cargo dev new_lint --name=foo --pass=early; use the --username and --password options",
]


@pytest.mark.parametrize("text", COMMAND_LOOKALIKES)
def test_command_lines_without_a_password_pass(text: str) -> None:
    assert find(text) == [], [text[f.start : f.end] for f in find(text)]


def private_keys() -> dict[str, bytes]:
    """Real private keys in DER or OpenSSH form, made now (cryptography)."""
    from cryptography.hazmat.primitives import serialization as ser
    from cryptography.hazmat.primitives.asymmetric import dsa, ec, ed25519, rsa

    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ec_key = ec.generate_private_key(ec.SECP256R1())
    ed_key = ed25519.Ed25519PrivateKey.generate()
    dsa_key = dsa.generate_private_key(key_size=1024)
    der, pkcs8, pkcs1, ssh = (
        ser.Encoding.DER,
        ser.PrivateFormat.PKCS8,
        ser.PrivateFormat.TraditionalOpenSSL,
        ser.PrivateFormat.OpenSSH,
    )
    none = ser.NoEncryption()
    return {
        "RSA PKCS#1": rsa_key.private_bytes(der, pkcs1, none),
        "RSA PKCS#8": rsa_key.private_bytes(der, pkcs8, none),
        "RSA PKCS#8 encrypted": rsa_key.private_bytes(
            der, pkcs8, ser.BestAvailableEncryption(b"pass phrase 1")
        ),
        "EC SEC1": ec_key.private_bytes(der, pkcs1, none),
        "EC PKCS#8": ec_key.private_bytes(der, pkcs8, none),
        "Ed25519 PKCS#8": ed_key.private_bytes(der, pkcs8, none),
        "DSA": dsa_key.private_bytes(der, pkcs1, none),
        "OpenSSH Ed25519": base64.b64decode(
            b"".join(ed_key.private_bytes(ser.Encoding.PEM, ssh, none).splitlines()[1:-1])
        ),
        "OpenSSH RSA": base64.b64decode(
            b"".join(rsa_key.private_bytes(ser.Encoding.PEM, ssh, none).splitlines()[1:-1])
        ),
    }


def wrapped(data: bytes, width: int) -> str:
    text = base64.b64encode(data).decode()
    return "\n".join(text[i : i + width] for i in range(0, len(text), width))


@pytest.mark.parametrize("width", [64, 70, 76, 100_000])
def test_a_private_key_body_without_its_armour_is_caught(width: int) -> None:
    for name, data in private_keys().items():
        body = wrapped(data, width)
        for text in (body, f"The key:\n\n```\n{body}\n```\n", f'"key": "{body[:2000]}"'):
            found = find(text)
            assert [f.rule for f in found] == ["private-key"], (name, width)
            if "\n" not in text.strip():
                continue
            assert text[found[0].start : found[0].end].strip() == body or width == 100_000


def test_public_keys_certificates_and_other_base64_pass() -> None:
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives import serialization as ser
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import NameOID

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "example")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    public = [
        cert.public_bytes(ser.Encoding.DER),
        key.public_key().public_bytes(ser.Encoding.DER, ser.PublicFormat.SubjectPublicKeyInfo),
        key.public_key().public_bytes(ser.Encoding.DER, ser.PublicFormat.PKCS1),
    ]
    rng = random.Random(5)
    others = [bytes(rng.randrange(256) for _ in range(600)) for _ in range(200)]
    for data in public + others:
        assert find(wrapped(data, 64)) == []
    ssh_pub = key.public_key().public_bytes(ser.Encoding.OpenSSH, ser.PublicFormat.OpenSSH)
    assert find(ssh_pub.decode()) == []


def test_a_putty_key_file_is_caught() -> None:
    body = "\n".join(rand(random.Random(i), ALNUM + "+/", 64) for i in range(14))
    text = (
        "PuTTY-User-Key-File-3: ssh-rsa\nEncryption: none\nComment: me\n"
        f"Public-Lines: 6\nAAAAB3NzaC1yc2E\nPrivate-Lines: 14\n{body}\nPrivate-MAC: 00ff\n"
    )
    assert [f.rule for f in find(text)] == ["private-key"]


MINIFIED = (
    'var a=this.$rules={start:[{token:"empty_line",regex:"^$"}]};f.onMatch=f.token;'
    "function l(e){return{user:e.user,password:e.pw,token:t.token}}const WILL_PASS=0;" * 40
)


def test_code_reads_keys_only_with_random_values() -> None:
    """In source and minified code a key's word is a name: only a random value counts;
    tokens that name themselves count as anywhere."""
    assert find(MINIFIED, code=True) == []
    secret = rand(random.Random(9), ALNUM, 32)
    found = find(f'{MINIFIED}const API_KEY="{secret}";', code=True)
    assert [f.rule for f in found] == ["api-key"]
    token = TOKENS["GitHub classic token"](random.Random(3))
    assert [f.rule for f in find(f'{MINIFIED}k="{token}"', code=True)] == ["github-token"]
