#!/usr/bin/env bash
# vac in CI for server authors: audit one MCP server (or a campaign) in vac's sandbox, write
# its SARIF and map, and fail only on confirmed cells that are new against a committed
# baseline and that no suppression covers. `action.yml` runs it; it runs as well by hand
# or in any CI (tested by harness/tests/action.rs).
#
# Environment (the action's inputs):
#   VAC           the vac binary (default: `vac` on PATH)
#   VAC_COMMAND   the server's command, split as the shell splits words (or:)
#   VAC_CAMPAIGN  a campaign file (harness/CAMPAIGNS.md) instead of one command
#   VAC_ARGS      more arguments for `vac probe` (for example `--contract vac.toml`)
#   VAC_BASELINE  a map.json of a run you accepted; missing file = no baseline yet
#   VAC_SUPPRESS  a suppressions file ([[suppress]] server, tool, clause, reason, expires)
#   VAC_OUT       where receipts and the map go (default: vac-out)
#   VAC_NAME      the map's name and SARIF category (default: vac)
#   VAC_DEFER_EXIT=1  exit 0 and leave the code in $GITHUB_OUTPUT (exit-code=N), so a
#                 later step can upload the SARIF first and then fail
#
# Exit: vac's table (README): 0 nothing new, 1 a new violation, 2 a usage error, 3 the
# server could not be audited, 4 broken receipts, 5 incomplete (an errored cell).
set -uo pipefail

vac=${VAC:-vac}
out=${VAC_OUT:-vac-out}
name=${VAC_NAME:-vac}
sudo=()
if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null; then
  sudo=(sudo -E) # the sandbox needs root: namespaces, mounts, cgroups
fi

if [ -e "$out/receipts" ]; then
  echo "vac-ci: $out/receipts exists: give another VAC_OUT or remove it" >&2
  exit 2
fi
mkdir -p "$out"

if [ -n "${VAC_CAMPAIGN:-}" ]; then
  "${sudo[@]}" "$vac" campaign run "$VAC_CAMPAIGN" --out "$out/receipts" --quiet
  audited=$?
elif [ -n "${VAC_COMMAND:-}" ]; then
  # shellcheck disable=SC2086 # words, as typed in the workflow
  "${sudo[@]}" "$vac" probe --out "$out/receipts" ${VAC_ARGS:-} -- $VAC_COMMAND >"$out/probe.txt"
  audited=$?
else
  echo "vac-ci: set VAC_COMMAND (the server's command) or VAC_CAMPAIGN (a campaign file)" >&2
  exit 2
fi

report=("$vac" report "$out/receipts" --out "$out/map" --campaign "$name"
  --format sarif,md,json,html,csv)
if [ -n "${VAC_BASELINE:-}" ]; then
  if [ -f "$VAC_BASELINE" ]; then
    report+=(--baseline "$VAC_BASELINE")
  else
    echo "vac-ci: no baseline at $VAC_BASELINE yet: every confirmed cell is new" >&2
  fi
fi
[ -n "${VAC_SUPPRESS:-}" ] && report+=(--suppress "$VAC_SUPPRESS")

case $audited in
  2 | 4) code=$audited ;; # a usage error or broken receipts: nothing to report on
  *)
    "${report[@]}" | tee "$out/report.txt"
    code=${PIPESTATUS[0]}
    ;;
esac

sarif="$out/map/map.sarif"
if [ -f "$sarif" ]; then
  echo "vac-ci: SARIF: $sarif (exit $code)"
else
  sarif=
  echo "vac-ci: no SARIF written (exit $code)" >&2
fi
if [ -n "${GITHUB_OUTPUT:-}" ]; then
  {
    echo "sarif=$sarif"
    echo "exit-code=$code"
  } >>"$GITHUB_OUTPUT"
fi
if [ -n "${GITHUB_STEP_SUMMARY:-}" ] && [ -f "$out/map/map.md" ]; then
  cat "$out/map/map.md" >>"$GITHUB_STEP_SUMMARY"
fi
if [ "${VAC_DEFER_EXIT:-}" = 1 ]; then
  exit 0
fi
exit "$code"
