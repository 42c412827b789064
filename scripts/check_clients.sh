#!/usr/bin/env bash
# Check markvault's MCP server with the real clients people use:
#
#   1. the MCP Inspector CLI over stdio: tools/list shows the tools, tools/call of search
#      returns hits;
#   2. Claude Code: `vault mcp install` registers the stdio server, `claude mcp list` shows
#      it connected;
#   3. the HTTP transport: Host/Origin/token refusals seen with curl, the Inspector refused
#      without a token, and Claude Code connected with one.
#
# Usage: scripts/check_clients.sh        (from anywhere; exits non-zero on the first failure)
#
# Needs Node >= 18 with npm, and the project's venv (.venv, or set VAULT_BIN and PYTHON).
# The first run installs the versions pinned in scripts/clients/package-lock.json into
# scripts/clients/node_modules (npm registry needed once); later runs are offline.
# Claude Code needs no login for `claude mcp add/list`: HOME points at a temporary folder,
# so your own ~/.claude.json, token and settings are never read or changed.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CLIENTS=$REPO/scripts/clients
VAULT_BIN=${VAULT_BIN:-$REPO/.venv/bin/vault}
PYTHON=${PYTHON:-$REPO/.venv/bin/python}
WAIT_SECONDS=${WAIT_SECONDS:-90}

step() { printf '\n== %s\n' "$*"; }
ok() { printf 'ok: %s\n' "$*"; }
fail() {
    printf 'FAIL: %s\n' "$*" >&2
    exit 1
}

# -- the pinned clients --------------------------------------------------------------------

install_clients() {
    command -v npm >/dev/null || fail "npm is not installed (Node >= 18 with npm is needed)"
    local stamp=$CLIENTS/node_modules/.package-lock.json
    if [[ ! -f $stamp || $CLIENTS/package-lock.json -nt $stamp ]]; then
        step "installing the pinned clients into scripts/clients/node_modules"
        # --ignore-scripts: claude-code's postinstall only copies its native binary into
        # place; cli-wrapper.cjs (used below) finds that binary without it.
        (cd "$CLIENTS" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
    fi
    INSPECTOR=("node" "$CLIENTS/node_modules/@modelcontextprotocol/inspector/cli/build/cli.js")
    mkdir -p "$WORK/bin"
    printf '#!/bin/sh\nexec node "%s" "$@"\n' \
        "$CLIENTS/node_modules/@anthropic-ai/claude-code/cli-wrapper.cjs" >"$WORK/bin/claude"
    chmod +x "$WORK/bin/claude"
    export PATH=$WORK/bin:$PATH
}

show_versions() { # claude runs only once HOME is the throwaway one
    local inspector
    inspector=$(node -p "require('$CLIENTS/node_modules/@modelcontextprotocol/inspector/package.json').version")
    ok "node $(node --version), inspector $inspector, claude $(claude --version)"
}

# -- a throwaway copy of the bundled vault, and a private HOME ---------------------------

make_work() {
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/markvault-clients.XXXXXX")
    HTTP_PID=
    trap cleanup EXIT
}

isolate() { # after npm ci, which needs the real HOME (npm's config and cache)
    mkdir -p "$WORK/home" "$WORK/project"
    cp -R "$REPO/vault" "$WORK/vault"
    export HOME=$WORK/home
    unset XDG_CONFIG_HOME
    export MARKVAULT_TOKEN_FILE=$WORK/home/.config/markvault/http-token
    # Claude Code: no telemetry, update checks or other calls home.
    export CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1
}

cleanup() {
    if [[ -n ${HTTP_PID:-} ]]; then
        kill "$HTTP_PID" 2>/dev/null || true
        wait "$HTTP_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}

index_vault() {
    step "indexing a copy of the bundled vault (keywords only, to be quick)"
    [[ -x $VAULT_BIN ]] || fail "no vault executable at $VAULT_BIN (set VAULT_BIN)"
    "$VAULT_BIN" --vault "$WORK/vault" reindex --no-vectors --quiet
    ok "indexed $WORK/vault"
}

# -- 1. the Inspector over stdio -------------------------------------------------------------

check_inspector_stdio() {
    step "inspector --cli $VAULT_BIN --vault <copy> mcp --method tools/list"
    "${INSPECTOR[@]}" --cli "$VAULT_BIN" --vault "$WORK/vault" mcp --method tools/list \
        >"$WORK/tools.json"
    "$PYTHON" - "$WORK/tools.json" <<'EOF' || fail "tools/list did not list the vault's tools"
import json, sys
names = sorted(t["name"] for t in json.load(open(sys.argv[1]))["tools"])
print("tools:", ", ".join(names))
assert {"search", "get", "status", "create_note", "edit_note"} <= set(names)
EOF
    ok "tools/list"

    step "inspector ... --method tools/call --tool-name search --tool-arg query=... mode=keyword"
    "${INSPECTOR[@]}" --cli "$VAULT_BIN" --vault "$WORK/vault" mcp --method tools/call \
        --tool-name search --tool-arg "query=connect Claude Code" mode=keyword \
        >"$WORK/search.json"
    "$PYTHON" - "$WORK/search.json" <<'EOF' || fail "tools/call search returned no hits"
import json, sys
result = json.load(open(sys.argv[1]))
text = result["content"][0]["text"]
print("\n".join(text.splitlines()[:3]))
assert not result.get("isError") and "notes/Connecting Claude Code.md" in text
EOF
    ok "tools/call search"
}

# -- 2. Claude Code over stdio ------------------------------------------------------------

claude_list_shows_connected() { # NAME
    (cd "$WORK/project" && claude mcp list) | tee "$WORK/list.txt"
    grep -E "^$1: .*Connected" "$WORK/list.txt" >/dev/null ||
        fail "claude mcp list does not show $1 connected"
}

check_claude_stdio() {
    step "vault mcp install --scope local (runs claude mcp add), then claude mcp list"
    (cd "$WORK/project" && "$VAULT_BIN" --vault "$WORK/vault" mcp install --scope local)
    claude_list_shows_connected markvault
    ok "Claude Code connects to the stdio server"
    (cd "$WORK/project" && claude mcp remove markvault --scope local >/dev/null)
}

# -- 3. HTTP ----------------------------------------------------------------------------------

start_http() {
    step "starting the HTTP server on a free loopback port"
    : >"$WORK/http.log"
    "$VAULT_BIN" --vault "$WORK/vault" mcp --http --port 0 2>"$WORK/http.log" &
    HTTP_PID=$!
    local deadline=$((SECONDS + WAIT_SECONDS))
    until URL=$(grep -o 'http://[^ ]*/mcp' "$WORK/http.log"); do
        kill -0 "$HTTP_PID" 2>/dev/null || fail "the server died: $(cat "$WORK/http.log")"
        ((SECONDS < deadline)) || fail "no URL announced in ${WAIT_SECONDS}s"
        sleep 0.2
    done
    until curl -s -o /dev/null "$URL"; do # announced before uvicorn's startup finishes
        ((SECONDS < deadline)) || fail "$URL does not answer"
        sleep 0.2
    done
    cat "$WORK/http.log"
    PORT=${URL##*:}
    PORT=${PORT%%/*}
    TOKEN=$("$VAULT_BIN" mcp token 2>/dev/null)
    grep -qF "$TOKEN" "$WORK/http.log" && fail "the token was printed"
    ok "listening at $URL"
}

post() { # BODY CURL-ARGS...: a JSON-RPC POST, as an MCP client sends it
    local body=$1
    shift
    curl -s -X POST "$URL" -H 'Content-Type: application/json' \
        -H 'Accept: application/json, text/event-stream' --data "$body" "$@"
}

open_session() { # a handshake-era session: initialize, then notifications/initialized
    local init='{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"0"}}}'
    SESSION=$(post "$init" -D - -o /dev/null -H "Authorization: Bearer $TOKEN" |
        tr -d '\r' | awk -F': ' 'tolower($1) == "mcp-session-id" {print $2}')
    [[ -n $SESSION ]] || fail "initialize answered without an Mcp-Session-Id"
    SESSION_HEADERS=(-H "Mcp-Session-Id: $SESSION" -H "MCP-Protocol-Version: 2025-11-25")
    post '{"jsonrpc":"2.0","method":"notifications/initialized"}' -o /dev/null \
        -H "Authorization: Bearer $TOKEN" "${SESSION_HEADERS[@]}"
    ok "session $SESSION opened"
}

expect_status() { # WANT WHAT CURL-ARGS...
    local want=$1 what=$2 got
    shift 2
    got=$(post '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"status","arguments":{}}}' \
        -o /dev/null -w '%{http_code}' "${SESSION_HEADERS[@]}" "$@")
    [[ $got == "$want" ]] || fail "$what: HTTP $got, expected $want"
    ok "$what -> $got"
}

check_http_refusals() {
    step "HTTP refusals (reliability case 35)"
    local auth="Authorization: Bearer $TOKEN"
    open_session
    expect_status 421 "bad Host" -H "$auth" -H "Host: evil.example:$PORT"
    expect_status 403 "bad Origin" -H "$auth" -H "Origin: http://evil.example"
    expect_status 401 "no token"
    expect_status 401 "wrong token" -H "Authorization: Bearer wrong"
    expect_status 200 "right token" -H "$auth"
    expect_status 200 "right token, localhost Origin" -H "$auth" -H "Origin: http://localhost:6274"
    if command -v ss >/dev/null; then
        local listening
        listening=$(ss -Hltn "sport = :$PORT" | awk '{print $4}' | sort -u | xargs)
        [[ $listening == "127.0.0.1:$PORT" ]] || fail "not on loopback only: $listening"
        ok "the only listening address is $listening"
    fi
}

check_inspector_http_without_token() {
    step "inspector --cli $URL --method tools/list (no way to send a token: must be refused)"
    if "${INSPECTOR[@]}" --cli "$URL" --method tools/list >"$WORK/noauth.txt" 2>&1; then
        fail "the inspector listed tools without a token"
    fi
    grep -Eq "401|Missing bearer token" "$WORK/noauth.txt" ||
        fail "unexpected inspector error: $(cat "$WORK/noauth.txt")"
    ok "refused: $(grep -Eo '(HTTP 401|Missing bearer token)[^"]*' "$WORK/noauth.txt" | head -1)"
}

check_claude_http() {
    step "vault mcp install --http --port $PORT --scope user, then claude mcp list"
    (cd "$WORK/project" &&
        "$VAULT_BIN" --vault "$WORK/vault" mcp install --http --port "$PORT" -s user)
    claude_list_shows_connected markvault
    grep -qF "$TOKEN" "$WORK/list.txt" && fail "claude mcp list printed the token"
    ok "Claude Code connects over HTTP with the token"
}

main() {
    make_work
    install_clients
    isolate
    show_versions
    index_vault
    check_inspector_stdio
    check_claude_stdio
    start_http
    check_http_refusals
    check_inspector_http_without_token
    check_claude_http
    printf '\nAll client checks passed.\n'
}

main "$@"
