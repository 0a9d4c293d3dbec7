#!/usr/bin/env bash
# Installs real third-party MCP servers, at pinned versions, for the end-to-end audits in CI:
# @modelcontextprotocol/server-filesystem (stdio) and @modelcontextprotocol/server-everything
# (served over Streamable HTTP by the HTTP suite) from npm, into /opt/vac-thirdparty (override
# with VAC_THIRDPARTY_PREFIX). Idempotent: does nothing when that version is already installed.
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
ENTRY=$PREFIX/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js

# Readable and traversable by everyone (uid 65534 in the sandbox), including /opt itself.
chmod -R a+rX "$PREFIX" || die "chmod of $PREFIX failed"
chmod a+rx "$(dirname "$PREFIX")" 2>/dev/null || true

# Smoke check that the installed dependencies load, without speaking MCP: with no directory
# and stdin at EOF the server announces itself on stderr and exits.
out=$(timeout 30 "$NODE" "$ENTRY" 2>&1 </dev/null) || die "smoke run of $ENTRY failed: $out"
case $out in
    *"running on stdio"*) ;;
    *) die "smoke run of $ENTRY printed no startup line: $out" ;;
esac

echo "$NODE $ENTRY /lab/work"
