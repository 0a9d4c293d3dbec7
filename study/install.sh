#!/usr/bin/env bash
# Installs every server of study/catalogue.toml at its pinned version, one isolated
# environment per server, into a prefix outside the repository, running no package's code:
#
#   study/install.sh [--only ID…] [--jobs N]
#
#   npm:  $PREFIX/npm/<id>,  `npm install --ignore-scripts` (or `npm ci --ignore-scripts` from
#         study/locks/npm/<id>.package-lock.json when the repository has it).
#   PyPI: $PREFIX/pypi/<id>, a venv of the machine's python3.11 (/usr/bin/python3.11, so that
#         any uid can run it), wheels only (`--only-binary :all:`): the lock
#         study/locks/pypi/<id>.txt (every distribution pinned, with its hashes) is resolved
#         first when the repository does not have it, and the venv is synced from it with
#         --require-hashes. uv (installed from PyPI, as a wheel, into $PREFIX/tools/uv) does
#         the resolving and installing; without it pip does (no hashes then).
#
# The catalogue (from overrides.toml) may set per server `extras` (the server is an optional
# extra of its package: `pkg[mcp]`) and `as_of_release` (its lock is resolved with the
# dependencies as they stood a day after its release: uv --exclude-newer, npm --before).
#
# Resumable: a server whose done-marker ($PREFIX/<registry>/<id>/.vac-study-done, written
# last) names its package and version is skipped; a failed one is retried on every run.
# Each server's outcome goes to $PREFIX/state/<id>.tsv, all of them to $PREFIX/status.tsv
# and into study/install-status.tsv (where a server this prefix has no outcome for keeps its
# row): installed | needs_install_scripts | failed, with a reason
# (no_such_package, no_such_version, no_wheel, requires_python, resolution_conflict,
# network, unsupported_platform, lock_mismatch, timeout, error). Logs: $PREFIX/logs/<id>.log.
# Everything under the prefix is made world-readable. Progress goes to stderr.
#
# Environment: VAC_STUDY_PREFIX (default /opt/vac-study), VAC_STUDY_CACHE (uv's cache, default
# /var/cache/vac-study), VAC_STUDY_PYTHON (default
# /usr/bin/python3.11), VAC_STUDY_PYTHONS (newer interpreters, tried in order for a server
# that requires one; its lock then records the version in locks/pypi/<id>.python; default: the
# python3.12/3.13 in /usr/bin, /usr/local/bin, /opt/python*, root's pyenv), VAC_STUDY_JOBS (default 2), VAC_STUDY_TIMEOUT (seconds per install
# step, default 1200), VAC_STUDY_STATUS_COPY (where status.tsv is copied, default
# study/install-status.tsv; empty: nowhere — for a trial install into another prefix).
set -uo pipefail

STUDY=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PREFIX=${VAC_STUDY_PREFIX:-/opt/vac-study}
PY=${VAC_STUDY_PYTHON:-/usr/bin/python3.11}
# Newer interpreters for servers that require one, tried in order (space-separated paths);
# by default the python3.12 and 3.13 found in the usual places. A venv made from one under a
# home links to it there: study/campaign.py exposes that installation to the sandbox.
ALT_PYTHONS=${VAC_STUDY_PYTHONS-$(ls -d /usr/bin/python3.1[23] /usr/local/bin/python3.1[23] \
    /opt/python*/bin/python3.1[23] /root/.pyenv/versions/3.1[23]*/bin/python3.1[23] 2>/dev/null | tr '\n' ' ')}
JOBS=${VAC_STUDY_JOBS:-2}
TIMEOUT=${VAC_STUDY_TIMEOUT:-1200}
STATUS_COPY=${VAC_STUDY_STATUS_COPY-$STUDY/install-status.tsv}
UV_VERSION=0.13.8
UV=$PREFIX/tools/uv/bin/uv
# uv's cache (downloaded wheels, hard-linked into the venvs) lives outside the prefix.
export UV_CACHE_DIR=${UV_CACHE_DIR:-${VAC_STUDY_CACHE:-/var/cache/vac-study}/uv}
export UV_NO_PROGRESS=1 UV_PYTHON_DOWNLOADS=never
export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false
HEADER=$'id\tregistry\tpackage\tversion\toutcome\treason\tdetail\tseconds\tfinished_utc'

log() { echo "install.sh: $*" >&2; }
die() { log "$*"; exit 1; }

# ---------------------------------------------------------------------------------------
# One server: --one ID REGISTRY PACKAGE VERSION (run by the main loop, JOBS at a time)

write_state() { # outcome reason detail
    local detail=${3//$'\t'/ }
    detail=${detail//$'\n'/ }
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$ID" "$REG" "$PKG" "$VER" "$1" "$2" "${detail:0:400}" \
        "$(( $(date +%s) - START ))" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" >"$PREFIX/state/$ID.tsv.tmp"
    mv "$PREFIX/state/$ID.tsv.tmp" "$PREFIX/state/$ID.tsv"
    log "$ID: $1${2:+ ($2)}${3:+: ${3:0:160}} [$(( $(date +%s) - START ))s]"
}

# npm's lock: the packages that declare install scripts (which --ignore-scripts did not
# run), less those overrides.toml's [install_scripts_benign] names, each with its reason.
npm_scripts() {
    "$PY" - "$1" "$STUDY/overrides.toml" <<'EOF'
import json, sys, tomllib, pathlib
lock = json.load(open(sys.argv[1]))
ov = pathlib.Path(sys.argv[2])
benign = tomllib.loads(ov.read_text()).get("install_scripts_benign", {}) if ov.is_file() else {}
pkgs = {p.split("node_modules/")[-1]: m for p, m in lock.get("packages", {}).items() if p}
names = sorted(n for n, m in pkgs.items() if m.get("hasInstallScript"))

def is_benign(n):
    b = benign.get(n)
    if b is None:
        return False
    need = b.get("requires") if isinstance(b, dict) else None
    return need is None or need in pkgs

print(",".join(n for n in names if not is_benign(n)))
EOF
}

classify_npm() { # log file -> reason
    local f=$1
    if grep -qE 'ETARGET|No matching version|notarget' "$f"; then echo no_such_version
    elif grep -qE 'E404|404 Not Found|is not in this registry' "$f"; then echo no_such_package
    elif grep -qE 'ERESOLVE|peer dep' "$f"; then echo resolution_conflict
    elif grep -qE 'EBADPLATFORM|EBADENGINE.*error|Unsupported platform' "$f"; then echo unsupported_platform
    elif grep -qE '`npm ci` can only install|in sync|EUSAGE' "$f"; then echo lock_mismatch
    elif grep -qE 'ETIMEDOUT|ECONNRESET|EAI_AGAIN|ENOTFOUND|ECONNREFUSED|socket hang up|network' "$f"; then echo network
    else echo error; fi
}

classify_py() {
    local f=$1
    if grep -qiE 'does not satisfy Python|requires-python|Requires-Python|python_version' "$f"; then echo requires_python
    elif grep -qiE 'no usable wheels|no wheels? (with|are available)|only.*source distribution|building (from )?source.*disabled|--only-binary|no-binary|Only source' "$f"; then echo no_wheel
    elif grep -qiE 'not found in the package registry|No solution found.*was not found|package .* was not found' "$f"; then echo no_such_package
    elif grep -qiE 'there is no version of|no version of|No matching distribution|Could not find a version' "$f"; then echo no_such_version
    elif grep -qiE 'unsatisfiable|ResolutionImpossible|conflict' "$f"; then echo resolution_conflict
    elif grep -qiE 'error sending request|Failed to fetch|timed out|dns error|Connection (reset|refused)|NewConnectionError|ReadTimeout' "$f"; then echo network
    else echo error; fi
}

first_error() { # the line of a log that says why
    local l
    l=$(grep -m1 -E 'cause: |Because |notarget No matching|404 Not Found|ERESOLVE|EBADPLATFORM|Could not find|No matching distribution' "$1") \
        || l=$(grep -m1 -iE 'error' "$1")
    printf '%s' "$l" | sed 's/^[[:space:]]*//;s/^cause: //;s/^npm error //' | cut -c1-300
}

# A key of this server's catalogue entry: a list joined by commas, true as "yes", else as is.
catalogue_value() {
    "$PY" -c 'import sys, tomllib
cat = tomllib.load(open(sys.argv[1], "rb"))
v = next((s.get(sys.argv[3]) for s in cat["server"] if s["id"] == sys.argv[2]), None)
print("" if v in (None, False) else "yes" if v is True else ",".join(v) if isinstance(v, list) else v)' \
        "$STUDY/catalogue.toml" "$ID" "$1"
}

# A server the catalogue marks `as_of_release` (overrides.toml: its code imports what a later
# major version of a dependency removed) has its lock resolved with every dependency as it
# stood one day after its version was published (uv --exclude-newer, npm --before): as its
# author ran it. Prints that cutoff (ISO 8601), or nothing for every other server.
release_cutoff() {
    local flag published
    flag=$(catalogue_value as_of_release)
    [ -n "$flag" ] || return 0
    if [ "$REG" = npm ]; then
        published=$(npm view "$PKG@$VER" time --json 2>/dev/null \
            | "$PY" -c 'import json,sys; print(json.load(sys.stdin).get(sys.argv[1], ""))' "$VER")
    else
        # uv names the upload time of a version an old cutoff excludes.
        published=$(echo "$PKG==$VER" | "$UV" pip compile --quiet --python "$PY" --no-header \
            --exclude-newer 1970-01-02T00:00:00Z - 2>&1 | grep -o 'was published at [0-9T:.Z-]*' | head -n1 | cut -d' ' -f4)
    fi
    [ -n "$published" ] || { echo "install.sh: $ID: no publication time found for as_of_release" >&2; return 1; }
    "$PY" -c 'import datetime,sys; t=datetime.datetime.fromisoformat(sys.argv[1].rstrip(".").replace("Z","+00:00")); print((t+datetime.timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ"))' "$published"
}

install_npm() {
    local dir=$PREFIX/npm/$ID lock=$STUDY/locks/npm/$ID.package-lock.json logf=$PREFIX/logs/$ID.log
    local -a common=(--prefix "$dir" --ignore-scripts --no-audit --no-fund --no-update-notifier --loglevel=warn)
    rm -rf "$dir" && mkdir -p "$dir"
    "$PY" -c 'import json,sys; print(json.dumps({"name":"vac-study","private":True,"dependencies":{sys.argv[1]:sys.argv[2]}},indent=2))' \
        "$PKG" "$VER" >"$dir/package.json"
    local rc
    if [ -f "$lock" ]; then
        cp "$lock" "$dir/package-lock.json"
        timeout "$TIMEOUT" npm ci "${common[@]}" >"$logf" 2>&1; rc=$?
        if [ "$rc" != 0 ] && grep -q EUSAGE "$logf"; then
            # A lock written on this platform leaves out other platforms' optional packages
            # (slack-mcp-server-darwin-amd64…), and `npm ci` refuses it as out of sync;
            # `npm install` keeps every version the lock pins and fills those entries in.
            timeout "$TIMEOUT" npm install "${common[@]}" >>"$logf" 2>&1; rc=$?
        fi
    else
        local cutoff
        cutoff=$(release_cutoff) || { write_state failed error "no publication time for as_of_release"; return 1; }
        timeout "$TIMEOUT" npm install "${common[@]}" ${cutoff:+--before="$cutoff"} --save-exact "$PKG@$VER" >"$logf" 2>&1; rc=$?
    fi
    if [ "$rc" = 124 ]; then write_state failed timeout "after ${TIMEOUT}s"; return 1; fi
    if [ "$rc" != 0 ]; then write_state failed "$(classify_npm "$logf")" "$(first_error "$logf")"; return 1; fi
    local got
    got=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1])).get("version",""))' \
        "$dir/node_modules/$PKG/package.json" 2>/dev/null)
    [ "$got" = "$VER" ] || { write_state failed error "expected $PKG@$VER, found '${got:-nothing}'"; return 1; }
    mkdir -p "$STUDY/locks/npm"
    [ -f "$lock" ] || cp "$dir/package-lock.json" "$lock"
    chmod -R a+rX "$dir"
    printf '%s %s\n' "$PKG" "$VER" >"$dir/.vac-study-done"
    npm_outcome "$dir"
}

npm_outcome() {
    local scripts
    scripts=$(npm_scripts "$1/package-lock.json")
    if [ -n "$scripts" ]; then
        write_state needs_install_scripts needs_install_scripts "not run: $scripts"
    else
        write_state installed "" ""
    fi
}

# The interpreter of a venv: $PY, or for a server whose requirements exclude it (or whose lock
# was resolved for another version, locks/pypi/<id>.python) the first of $ALT_PYTHONS that
# satisfies them.
python_version() { "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null; }

# One attempt with uv and one interpreter: 0 installed, else the log says why.
uv_attempt() { # dir lock python logf
    local dir=$1 lock=$2 py=$3 logf=$4 use=$2 rc
    rm -rf "$dir"
    "$UV" venv --quiet --python "$py" "$dir" >>"$logf" 2>&1 || return 1
    if [ ! -f "$lock" ]; then
        use=$dir/.lock.txt
        # `extras` (overrides.toml): a server that is an optional extra of its package.
        echo "$PKG${EXTRAS:+[$EXTRAS]}==$VER" | timeout "$TIMEOUT" "$UV" pip compile --quiet --python "$dir/bin/python" \
            ${CUTOFF:+--exclude-newer "$CUTOFF"} --only-binary :all: --generate-hashes --no-header \
            --output-file "$use" - >>"$logf" 2>&1; rc=$?
        [ "$rc" = 0 ] || return "$rc"
    fi
    # --compile-bytecode, as pip does by default: without it the server's first start
    # writes __pycache__ into its own installation, in every sandbox, and every tool is
    # confirmed for fs.write there (seen on mcp-atlassian). Compiling runs no package code.
    timeout "$TIMEOUT" "$UV" pip sync --quiet --python "$dir/bin/python" --only-binary :all: \
        --compile-bytecode --require-hashes "$use" >>"$logf" 2>&1
}

install_pypi() {
    local dir=$PREFIX/pypi/$ID lock=$STUDY/locks/pypi/$ID.txt logf=$PREFIX/logs/$ID.log rc
    rm -rf "$dir"
    : >"$logf"
    if [ -x "$UV" ]; then
        local want="" py tried=""
        CUTOFF="" EXTRAS=$(catalogue_value extras)
        if [ ! -f "$lock" ]; then
            CUTOFF=$(release_cutoff) || { write_state failed error "no publication time for as_of_release"; return 1; }
        fi
        [ -f "$STUDY/locks/pypi/$ID.python" ] && want=$(cat "$STUDY/locks/pypi/$ID.python")
        rc=1
        local attempt=$logf.attempt
        : >"$attempt"
        for py in "$PY" $ALT_PYTHONS; do
            [ -x "$py" ] || continue
            local version
            version=$(python_version "$py") || continue
            if [ -n "$want" ] && [ "$version" != "$want" ]; then continue; fi
            # Another interpreter only when the last one was refused for its version.
            if [ -z "$want" ] && [ -n "$tried" ] && [ "$(classify_py "$attempt")" != requires_python ]; then break; fi
            tried="$tried $version"
            echo "install.sh: with Python $version ($py)" >"$attempt"
            uv_attempt "$dir" "$lock" "$py" "$attempt"; rc=$?
            cat "$attempt" >>"$logf"
            [ "$rc" = 0 ] && break
            [ "$rc" = 124 ] && { rm -f "$attempt"; write_state failed timeout "after ${TIMEOUT}s"; return 1; }
        done
        if [ -z "$tried" ]; then
            write_state failed requires_python "its lock needs Python $want: none of $PY $ALT_PYTHONS is (VAC_STUDY_PYTHONS)"; return 1
        fi
        if [ "$rc" != 0 ]; then
            write_state failed "$(classify_py "$attempt")" "$(first_error "$attempt")"; rm -f "$attempt"; return 1
        fi
        rm -f "$attempt"
        mkdir -p "$STUDY/locks/pypi"
        if [ ! -f "$lock" ]; then
            cp "$dir/.lock.txt" "$lock"
            version=$(python_version "$dir/bin/python")
            [ "$version" = "$(python_version "$PY")" ] || echo "$version" >"$STUDY/locks/pypi/$ID.python"
        fi
        rm -f "$dir/.lock.txt"
    else
        "$PY" -m venv "$dir" >"$logf" 2>&1 || { write_state failed error "$(first_error "$logf")"; return 1; }
        if [ -f "$lock" ]; then
            timeout "$TIMEOUT" "$dir/bin/pip" install --quiet --disable-pip-version-check --only-binary=:all: \
                --no-cache-dir --no-deps -r "$lock" >>"$logf" 2>&1; rc=$?
        else
            timeout "$TIMEOUT" "$dir/bin/pip" install --quiet --disable-pip-version-check --only-binary=:all: \
                --no-cache-dir "$PKG==$VER" >>"$logf" 2>&1; rc=$?
        fi
        if [ "$rc" = 124 ]; then write_state failed timeout "after ${TIMEOUT}s"; return 1; fi
        if [ "$rc" != 0 ]; then write_state failed "$(classify_py "$logf")" "$(first_error "$logf")"; return 1; fi
        mkdir -p "$STUDY/locks/pypi"
        [ -f "$lock" ] || "$dir/bin/pip" freeze --disable-pip-version-check --exclude-editable >"$lock"
    fi
    local norm
    norm=$(echo "$PKG" | tr 'A-Z_.' 'a-z--')
    if ! grep -qiE "^${norm//-/[-_.]}==${VER//./\\.}( |$)" <(sed 's/ \\$//' "$lock"); then
        write_state failed error "$PKG==$VER not in the lock"; return 1
    fi
    chmod -R a+rX "$dir"
    printf '%s %s\n' "$PKG" "$VER" >"$dir/.vac-study-done"
    write_state installed "" ""
}

one() {
    ID=$1 REG=$2 PKG=$3 VER=$4 START=$(date +%s)
    local dir=$PREFIX/$REG/$ID
    if [ -f "$dir/.vac-study-done" ] && [ "$(cat "$dir/.vac-study-done")" = "$PKG $VER" ]; then
        if [ "$REG" = npm ]; then
            # re-graded (the benign list may have changed); the state is kept when it holds
            local scripts want=installed old
            scripts=$(npm_scripts "$dir/package-lock.json")
            [ -z "$scripts" ] || want=needs_install_scripts
            old=$(cut -f5,7 "$PREFIX/state/$ID.tsv" 2>/dev/null)
            [ "$old" = "$want"$'\t'"${scripts:+not run: $scripts}" ] || npm_outcome "$dir" 2>/dev/null
        elif [ ! -f "$PREFIX/state/$ID.tsv" ]; then
            write_state installed "" "" 2>/dev/null
        fi
        return 0
    fi
    log "$ID: installing $PKG@$VER"
    case $REG in
        npm) install_npm ;;
        pypi) install_pypi ;;
        *) write_state failed error "unknown registry $REG" ;;
    esac
    return 0
}

if [ "${1:-}" = --one ]; then
    shift
    one "$@"
    exit 0
fi

# ---------------------------------------------------------------------------------------
# The main loop

ONLY=()
while [ $# -gt 0 ]; do
    case $1 in
        --only) shift; while [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; do ONLY+=("$1"); shift; done ;;
        --jobs) JOBS=$2; shift 2 ;;
        -h|--help) sed -n '2,/^set -uo/p' "$0" | sed 's/^# \{0,1\}//;/^set -uo/d' >&2; exit 0 ;;
        *) die "unknown argument $1 (see --help)" ;;
    esac
done

command -v npm >/dev/null || die "npm not found on PATH"
[ -x "$PY" ] || die "$PY not found (VAC_STUDY_PYTHON)"
"$PY" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' || log "warning: $PY is not Python 3.11"
mkdir -p "$PREFIX"/{npm,pypi,state,logs,tools} "$UV_CACHE_DIR" || die "cannot create $PREFIX"

if [ ! -x "$UV" ]; then
    log "installing uv==$UV_VERSION (a wheel) into $PREFIX/tools/uv"
    { "$PY" -m venv "$PREFIX/tools/uv" && "$PREFIX/tools/uv/bin/pip" install --quiet --disable-pip-version-check \
        --only-binary=:all: --no-cache-dir "uv==$UV_VERSION"; } >&2 || log "uv not installed: falling back to pip"
fi

LIST=$("$PY" "$STUDY/select.py" --list) || die "select.py --list failed (is study/catalogue.toml there?)"
if [ ${#ONLY[@]} -gt 0 ]; then
    LIST=$(printf '%s\n' "$LIST" | awk -F'\t' -v ids="${ONLY[*]}" 'BEGIN{n=split(ids,a," "); for(i=1;i<=n;i++) want[a[i]]=1} want[$1]')
    [ -n "$LIST" ] || die "none of ${ONLY[*]} is in the catalogue"
fi
TOTAL=$(printf '%s\n' "$LIST" | grep -c .)
T0=$(date +%s)
log "$TOTAL servers into $PREFIX, $JOBS at a time"
printf '%s\n' "$LIST" | tr '\t' '\n' | xargs -d '\n' -n 4 -P "$JOBS" "$0" --one

{ echo "$HEADER"; cat "$PREFIX"/state/*.tsv 2>/dev/null | sort; } >"$PREFIX/status.tsv"
# The copy keeps the rows of servers this prefix has no outcome for (an install of a few
# with --only, or on a machine that installed a part): an outcome is replaced, never lost.
if [ -n "$STATUS_COPY" ]; then
  {
    echo "$HEADER"
    {
      tail -n +2 "$PREFIX/status.tsv"
      [ ! -f "$STATUS_COPY" ] || tail -n +2 "$STATUS_COPY"
    } | awk -F'\t' '!seen[$1]++' | sort
  } >"$STATUS_COPY.tmp" && mv "$STATUS_COPY.tmp" "$STATUS_COPY"
fi
chmod -R a+rX "$PREFIX"
chmod a+rx "$(dirname "$PREFIX")" 2>/dev/null || true
log "done in $(( $(date +%s) - T0 ))s: $(tail -n +2 "$PREFIX/status.tsv" | cut -f5 | sort | uniq -c | tr '\n' ' ')"
log "failures: $(tail -n +2 "$PREFIX/status.tsv" | awk -F'\t' '$5=="failed"{print $6}' | sort | uniq -c | tr '\n' ' ')"
