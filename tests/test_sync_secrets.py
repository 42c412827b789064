"""`vault sync` carries nothing secret, whatever its form: a key file, a .env file, a
UTF-16 text, a binary, a file named after a token, a huge log, the trash, the commit
message. Real git: a bare remote and a clone (test_gitsync.py's fixtures); after each
refusal the remote holds exactly the objects it held before.

Secrets are generated, never written out (this file is no leak for a scanner).
"""

from __future__ import annotations

import json
import random
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from mcp import Client

from markvault.credentials.policy import CredentialRefused
from markvault.credentials.scan import check_vault
from markvault.files.vault_files import content_hash
from markvault.files.vault_init import init_vault
from markvault.git.sync import SyncOptions, sync_vault
from markvault.runtime.local_host import open_local
from markvault.server.tools import build_server

from .conftest import run_cli
from .test_credential_shapes import MINIFIED
from .test_credentials import ALNUM, UPPER_ALNUM, rand
from .test_gitsync import Clone, clone, git, git_config, sync, write  # noqa: F401

RNG = random.Random()


def github() -> str:
    return "ghp_" + rand(RNG, ALNUM, 36)


def slack() -> str:
    return f"xoxb-{RNG.randrange(10**11, 10**12)}-{RNG.randrange(10**12, 10**13)}-" + rand(
        RNG, ALNUM, 24
    )


def aws_id() -> str:
    return "AKIA" + rand(RNG, UPPER_ALNUM, 16)


def stripe() -> str:
    return "sk_live_" + rand(RNG, ALNUM, 24)


def openssh_key() -> bytes:
    from cryptography.hazmat.primitives import serialization as ser
    from cryptography.hazmat.primitives.asymmetric import ed25519

    key = ed25519.Ed25519PrivateKey.generate()
    return key.private_bytes(ser.Encoding.PEM, ser.PrivateFormat.OpenSSH, ser.NoEncryption())


def rsa_der() -> bytes:
    from cryptography.hazmat.primitives import serialization as ser
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(ser.Encoding.DER, ser.PrivateFormat.PKCS8, ser.NoEncryption())


def remote_objects(vault: Path) -> bytes:
    """Every object the bare remote holds, with its content."""
    remote = vault.parents[1] / "remote.git"
    return subprocess.run(
        ["git", "--git-dir", str(remote), "cat-file", "--batch-all-objects", "--batch"],
        capture_output=True,
        check=True,
    ).stdout


def encodings(secret: str) -> list[bytes]:
    return [secret.encode(enc) for enc in ("utf-8", "utf-16-le", "utf-16-be", "utf-32-le")]


# name -> (path, content maker, what is secret in it: the text to look for in the remote)
Case = tuple[str, Callable[[str], bytes]]
CASES: dict[str, Case] = {
    "OpenSSH private key as keys/id_rsa": ("keys/id_rsa", lambda s: openssh_key()),
    "a .env.local holding a Slack token": ("notes/.env.local", lambda s: f"SLACK={s}\n".encode()),
    "a UTF-16 .txt holding a GitHub token": (
        "notes/export.txt",
        lambda s: f"Exported\r\ntoken {s}\r\n".encode("utf-16"),
    ),
    "UTF-16 without a byte-order mark": (
        "notes/raw.txt",
        lambda s: f"token {s}\n".encode("utf-16-le"),
    ),
    "UTF-32 with a byte-order mark": ("notes/wide.md", lambda s: f"# W\n{s}\n".encode("utf-32")),
    "an attachment named after a token": ("Attachments/{s}.png", lambda s: b"\x89PNG\r\n\0\0"),
    "a .pem holding a private key": ("certs/server.pem", lambda s: openssh_key()),
    "a .key holding a DER key": ("certs/server.key", lambda s: rsa_der()),
    "a DER key under any name": ("data/blob.bin", lambda s: rsa_der()),
    "aws/credentials": (
        "aws/credentials",
        lambda s: f"[default]\naws_access_key_id = {s}\n".encode(),
    ),
    "a source file": ("src/deploy.py", lambda s: f'STRIPE = "{s}"\n'.encode()),
    "a log file": ("logs/app.log", lambda s: f"2026-01-01 auth ok token={s}\n".encode()),
    "a JavaScript plugin": (".obsidian/plugins/x/main.js", lambda s: f'k="{s}";'.encode()),
    "a binary with a token inside": (
        "data/cache.sqlite",
        lambda s: b"SQLite format 3\0" + bytes(4000) + s.encode() + bytes(100),
    ),
    "a UTF-16 string in a binary": (
        "data/app.exe",
        lambda s: b"MZ\x90\0" + bytes(500) + s.encode("utf-16-le") + bytes(50),
    ),
    ".npmrc": (".npmrc", lambda s: b"registry=https://registry.npmjs.org/\n"),
    ".pypirc": (".pypirc", lambda s: b"[distutils]\nindex-servers = pypi\n"),
    ".netrc": ("home/.netrc", lambda s: b"default\n"),
    ".git-credentials": (".git-credentials", lambda s: b"\n"),
    ".docker/config.json": (".docker/config.json", lambda s: b'{"auths": {}}\n'),
    "terraform.tfvars": ("infra/terraform.tfvars", lambda s: b'region = "eu"\n'),
    "a Terraform state": ("infra/prod.tfstate", lambda s: b'{"version": 4}\n'),
    "a kubeconfig": ("ops/kubeconfig", lambda s: b"apiVersion: v1\nkind: Config\n"),
    "a PKCS#12 keystore": ("certs/me.p12", lambda s: bytes(RNG.randrange(256) for _ in range(900))),
    "a Java keystore": ("certs/app.jks", lambda s: b"\xfe\xed\xfe\xed" + bytes(200)),
    "a shell history": ("notes/.bash_history", lambda s: b"ls\ncd\n"),
    "a token glued into a tag": ("notes/Tagged.md", lambda s: f"tags: [t{s}]\n".encode()),
    "a password on a command line": (
        "notes/Ops.md",
        lambda s: f"    mysql -u root -p{s[8:20]} app\n".encode(),
    ),
}
SECRETS: dict[str, Callable[[], str]] = {
    "a .env.local holding a Slack token": slack,
    "a source file": stripe,
    "aws/credentials": aws_id,
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_sync_refuses_every_secret_form_and_the_remote_receives_none(
    clone: Clone,  # noqa: F811
    name: str,
) -> None:
    vault = clone("a")
    before, head = remote_objects(vault), git(vault, "rev-parse", "HEAD")
    secret = SECRETS.get(name, github)()
    path, content = CASES[name]
    path = path.format(s=secret)
    (vault / path).parent.mkdir(parents=True, exist_ok=True)
    (vault / path).write_bytes(content(secret))
    write(vault, "notes/Harmless.md", "# Harmless\n\nNothing secret.\n")
    with pytest.raises(CredentialRefused) as refused:
        sync_vault(vault, SyncOptions(interactive=False))
    shown = path.replace(secret, "REDACTED")
    assert shown in refused.value.message and "nothing was committed" in refused.value.message
    assert secret not in str(refused.value)
    assert git(vault, "rev-parse", "HEAD") == head
    assert remote_objects(vault) == before
    # `vault check` finds it too.
    assert [n.path for n in check_vault(vault).found] == [shown]
    # Without it, the rest goes through and the remote never holds the secret.
    (vault / path).unlink()
    done = sync_vault(vault, SyncOptions(interactive=False))
    assert done.pushed == 1
    objects = remote_objects(vault)
    assert not any(e in objects for e in encodings(secret)), name


def test_harmless_look_alikes_sync(clone: Clone) -> None:  # noqa: F811
    """Files named like secrets that hold none by design, and ordinary binaries."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives import serialization as ser
    from cryptography.hazmat.primitives.asymmetric import ed25519
    from cryptography.x509.oid import NameOID

    vault = clone("a")
    key = ed25519.Ed25519PrivateKey.generate()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "example")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(7)
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, None)
    )
    del hashes
    files = {
        "certs/ca.pem": cert.public_bytes(ser.Encoding.PEM),
        "keys/id_ed25519.pub": key.public_key().public_bytes(
            ser.Encoding.OpenSSH, ser.PublicFormat.OpenSSH
        ),
        "notes/.env.example": b"API_TOKEN=<your token>\nDB_PASSWORD=\n",
        "Talks/Roadmap.key": b"PK\x03\x04" + bytes(300),  # a Keynote document
        "Attachments/photo.jpg": bytes(RNG.randrange(256) for _ in range(200_000)),
        "notes/Hashes.md": b"# H\n\ncommit 3f2a9c1e0b4d5f6a7b8c9d0e1f2a3b4c5d6e7f80\n",
        "notes/utf16.md": "# Caf\u00e9\n\nNothing secret here.\n".encode("utf-16"),
        ".obsidian/plugins/y/main.js": MINIFIED.encode(),  # code: names, not secrets
        "certs/ca-bundle.pem": b"# Issuer: CN=example\n" + cert.public_bytes(ser.Encoding.PEM),
    }
    for rel, data in files.items():
        (vault / rel).parent.mkdir(parents=True, exist_ok=True)
        (vault / rel).write_bytes(data)
    done = sync_vault(vault, SyncOptions(interactive=False))
    assert done.pushed == 1 and len(done.changes) == len(files)


def test_a_huge_text_file_is_read_to_its_end(clone: Clone) -> None:  # noqa: F811
    """No size lets a secret through: 24 MiB of log, the token on its last line."""
    vault = clone("a")
    before = remote_objects(vault)
    secret = github()
    line = b"2026-01-01T00:00:00 GET /index.html 200 0.003s\n"
    (vault / "logs").mkdir()
    with (vault / "logs" / "big.log").open("wb") as fh:
        for _ in range(24 * 1024 * 1024 // len(line)):
            fh.write(line)
        fh.write(f"token={secret}\n".encode())
    lines = 24 * 1024 * 1024 // len(line) + 1
    code, _, stderr = sync(vault)
    assert code == 6, stderr
    assert f"logs/big.log holds 1 credential (GitHub token, line {lines})" in stderr
    assert remote_objects(vault) == before


def test_a_trashed_secret_is_never_pushed_whatever_gitignore_says(
    clone: Clone,  # noqa: F811
    tmp_path: Path,
) -> None:
    vault = clone("a")
    (vault / ".gitignore").write_text("# no trash line\n.DS_Store\n", encoding="utf-8")
    secret = github()
    write(vault, "notes/Leak.md", f"# Leak\n\n{secret}\n")
    code, _, stderr = sync(vault)
    assert code == 6 and "notes/Leak.md" in stderr
    with open_local(vault, tmp_path / "index") as v:
        v.reindex(vectors=False)
        v.delete_note("notes/Leak.md", content_hash((vault / "notes/Leak.md").read_bytes()))
    assert any((vault / ".trash").rglob("*.md"))
    code, done, stderr = sync(vault)
    assert code == 0, stderr
    assert not any(c["path"].startswith(".trash/") for c in done["changes"])
    assert not any(e in remote_objects(vault) for e in encodings(secret))
    # Nor by a plain `git add -A` afterwards: the trash is in info/exclude.
    git(vault, "add", "-A")
    assert ".trash" not in git(vault, "diff", "--cached", "--name-only")
    assert "/.trash/" in (vault / ".git" / "info" / "exclude").read_text(encoding="utf-8")


def test_a_vault_that_commits_its_trash_has_it_scanned(
    clone: Clone,  # noqa: F811
    tmp_path: Path,
) -> None:
    vault = clone("a")
    config = vault / ".markvault.toml"
    config.write_text(
        config.read_text(encoding="utf-8").replace("[sync]\n", "[sync]\ntrash = true\n"),
        encoding="utf-8",
    )
    git(vault, "commit", "-qam", "commit the trash")
    assert run_cli(vault, "trust").returncode == 0  # a widening setting: trusted here
    (vault / ".gitignore").write_text(".DS_Store\n", encoding="utf-8")
    secret = github()
    (vault / ".trash").mkdir()
    (vault / ".trash" / "Old.md").write_text(f"# Old\n\n{secret}\n", encoding="utf-8")
    before = remote_objects(vault)
    code, _, stderr = sync(vault)
    assert code == 6 and ".trash/Old.md holds 1 credential" in stderr, stderr
    assert remote_objects(vault) == before
    (vault / ".trash" / "Old.md").write_text("# Old\n\nharmless\n", encoding="utf-8")
    code, done, stderr = sync(vault)
    assert code == 0 and ".trash/Old.md" in [c["path"] for c in done["changes"]], stderr


MESSAGES = {
    "GitHub token": lambda: f"rotate token {github()}",
    "Stripe key": lambda: f"billing: new key {stripe()}",
    "AWS key id": lambda: f"aws {aws_id()} rotated",
}


@pytest.mark.parametrize("kind", sorted(MESSAGES))
def test_a_secret_in_the_commit_message_is_refused(clone: Clone, kind: str) -> None:  # noqa: F811
    vault = clone("a")
    before, head = remote_objects(vault), git(vault, "rev-parse", "HEAD")
    write(vault, "notes/New.md", "# New\n\nHarmless.\n")
    message = MESSAGES[kind]()
    code, _, stderr = sync(vault, "-m", message)
    assert code == 6, stderr
    assert "the commit message holds 1 credential" in stderr and "nothing was committed" in stderr
    assert message.split()[-1] not in stderr and message not in stderr
    assert git(vault, "rev-parse", "HEAD") == head and remote_objects(vault) == before
    code, _, stderr = sync(vault, "-m", "New note")
    assert code == 0, stderr


@pytest.mark.anyio
async def test_the_mcp_sync_tool_refuses_a_secret_in_its_message(
    clone: Clone,  # noqa: F811
    tmp_path: Path,
) -> None:
    vault = clone("a")
    before = remote_objects(vault)
    write(vault, "notes/New.md", "# New\n\nHarmless.\n")
    secret = github()
    with open_local(vault, tmp_path / "index") as v:
        async with Client(build_server(v)) as client:
            result = await client.call_tool("sync", {"message": f"rotate {secret}"})
    assert result.is_error
    text = json.dumps([c.model_dump() for c in result.content])
    assert "commit message" in text and secret not in text
    assert remote_objects(vault) == before


def test_vault_init_keeps_the_trash_out_of_git_whatever_gitignore_says(tmp_path: Path) -> None:
    vault = tmp_path / "v"
    vault.mkdir()
    git(vault, "init", "-q")
    (vault / ".gitignore").write_text("*.tmp\n", encoding="utf-8")  # no trash line
    init_vault(vault)
    (vault / ".trash").mkdir()
    (vault / ".trash" / "Old.md").write_text(f"# Old\n\n{github()}\n", encoding="utf-8")
    git(vault, "add", "-A")
    assert ".trash" not in git(vault, "diff", "--cached", "--name-only")
