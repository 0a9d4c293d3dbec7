#!/usr/bin/env bash
# Installs real third-party MCP servers, at pinned versions, for the end-to-end audits in CI:
# @modelcontextprotocol/server-filesystem and server-memory (stdio) and server-everything
# (served over Streamable HTTP by the HTTP suite) from npm, into /opt/vac-thirdparty (override
# with VAC_THIRDPARTY_PREFIX); mcp-server-time, mcp-server-git and mcp-server-fetch from PyPI
# into a venv under a 0700 directory (VAC_THIRDPARTY_VENV, default
# /root/.vac-thirdparty/venv). Idempotent: does nothing when those versions are installed.
# Everything is made world-readable so the sandbox's unprivileged uid (65534) can run it.
# On success, the only line on stdout is the command that runs the server over stdio
# (its single argument is the one directory it may touch); progress goes to stderr.
set -euo pipefail

PREFIX=${VAC_THIRDPARTY_PREFIX:-/opt/vac-thirdparty}

die() { echo "install-thirdparty: $*" >&2; exit 1; }

command -v node >/dev/null || die "node not found on PATH"
command -v npm >/dev/null || die "npm not found on PATH"
NODE=$(command -v node)

installed_version() {
    local PKG_DIR=$PREFIX/node_modules/$1
    [ -f "$PKG_DIR/package.json" ] || return 0
    node -e 'process.stdout.write(require(process.argv[1]).version || "")' "$PKG_DIR/package.json" 2>/dev/null || true
}

# install PACKAGE VERSION: npm-installs one pinned package unless it is there already.
install() {
    local PKG=$1 VERSION=$2
    local PKG_DIR=$PREFIX/node_modules/$PKG
    local ENTRY=$PKG_DIR/dist/index.js
    local got
    if [ "$(installed_version "$PKG")" = "$VERSION" ] && [ -f "$ENTRY" ]; then
        echo "install-thirdparty: $PKG@$VERSION already in $PREFIX" >&2
    else
        echo "install-thirdparty: installing $PKG@$VERSION into $PREFIX" >&2
        mkdir -p "$PREFIX" || die "cannot create $PREFIX"
        # A package.json of our own keeps npm from walking up to some enclosing project.
        [ -f "$PREFIX/package.json" ] || echo '{ "name": "vac-thirdparty", "private": true }' >"$PREFIX/package.json"
        npm install --prefix "$PREFIX" --no-audit --no-fund --no-update-notifier --save-exact \
            --omit=dev --loglevel=error "$PKG@$VERSION" >&2 \
            || die "npm install of $PKG@$VERSION failed (is the npm registry reachable?)"
        got=$(installed_version "$PKG")
        [ "$got" = "$VERSION" ] || die "expected $PKG@$VERSION in $PKG_DIR, found '${got:-nothing}'"
        [ -f "$ENTRY" ] || die "entry point $ENTRY missing after install"
    fi
}

install @modelcontextprotocol/server-filesystem 2026.8.31
install @modelcontextprotocol/server-everything 2026.8.31
install @modelcontextprotocol/server-memory 2026.8.31
ENTRY=$PREFIX/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js

# Readable and traversable by everyone (uid 65534 in the sandbox), including /opt itself.
chmod -R a+rX "$PREFIX" || die "chmod of $PREFIX failed"
chmod a+rx "$(dirname "$PREFIX")" 2>/dev/null || true

# The PyPI servers, as their READMEs install them: into a venv under a 0700 directory, so
# that the interpreter chain (venv -> pyenv or system python) runs from a private home, as
# with pyenv and uv. The sandbox runs them as the invoking user (root here) with the host's
# homes hidden except this installation.
VENV=${VAC_THIRDPARTY_VENV:-/root/.vac-thirdparty/venv}
# The SDK under them is pinned too: it decides how they speak (and the HTTP+SSE server
# harness/tests/data/sse/legacy_sse.py is written against its 2.x API).
PYPI_PINS="mcp-server-time==2026.10.19 mcp-server-git==2026.10.19 mcp-server-fetch==2026.10.24 mcp==2.3.0"
command -v python3 >/dev/null || die "python3 not found on PATH"
mkdir -p "$(dirname "$VENV")" && chmod 700 "$(dirname "$VENV")" \
    || die "cannot make the private directory $(dirname "$VENV")"
# have_pins VENV PINS: whether the venv holds every pin.
have_pins() {
    local frozen pin
    frozen=$("$1/bin/python3" -m pip freeze 2>/dev/null) || return 1
    for pin in $2; do
        grep -qxF "$pin" <<<"$frozen" || return 1
    done
}
# A venv at $1 holding the pins $2, made or completed when it does not.
venv_with() {
    if [ -x "$1/bin/python3" ] && have_pins "$1" "$2"; then
        echo "install-thirdparty: $2 already in $1" >&2
        return
    fi
    echo "install-thirdparty: installing $2 into $1" >&2
    python3 -m venv "$1" >&2 || die "python3 -m venv $1 failed"
    # shellcheck disable=SC2086
    "$1/bin/python3" -m pip install --quiet --disable-pip-version-check $2 >&2 \
        || die "pip install of $2 failed (is PyPI reachable?)"
}
venv_with "$VENV" "$PYPI_PINS"
# The benign corpus's frameworks that the pinned servers' venv cannot hold beside mcp 2.x
# (harness/tests/data/benign/README.md): the Python SDK's FastMCP (mcp 1.x) and FastMCP 2.x,
# in a venv of their own under the same 0700 directory.
BENIGN_VENV=${VAC_BENIGN_VENV:-$(dirname "$VENV")/benign}
venv_with "$BENIGN_VENV" "mcp==1.27.0 fastmcp==2.14.7"
for server in mcp-server-time mcp-server-git mcp-server-fetch; do
    [ -x "$VENV/bin/$server" ] || die "entry point $VENV/bin/$server missing after install"
done
out=$(timeout 60 "$VENV/bin/mcp-server-time" --help 2>&1) || die "smoke run of mcp-server-time failed: $out"
# mcp-server-fetch simplifies pages with readabilipy, which npm-installs its Readability.js
# dependencies into the venv on its first use: do that first use here, with the registry
# in reach, as a user's first fetch would (inside the sandbox no registry answers).
out=$(timeout 300 "$VENV/bin/python3" -c \
    'import sys; from readabilipy.simple_json import have_node; sys.exit(0 if have_node() else 1)' 2>&1) \
    || die "readabilipy's node dependencies did not install: $out"

# Smoke check that the installed dependencies load, without speaking MCP: with no directory
# and stdin at EOF the server announces itself on stderr and exits.
out=$(timeout 30 "$NODE" "$ENTRY" 2>&1 </dev/null) || die "smoke run of $ENTRY failed: $out"
case $out in
    *"running on stdio"*) ;;
    *) die "smoke run of $ENTRY printed no startup line: $out" ;;
esac

echo "$NODE $ENTRY {work}"
