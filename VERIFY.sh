#!/usr/bin/env bash
# VERIFY.sh: re-derive every published result from its receipts (SPEC §3.10).
#
#   ./VERIFY.sh [--quick] [--rerun [--sample N] [--sample-seed SEED]] [RESULTS_DIR]
#
# For every published campaign under RESULTS_DIR (default: results/), a directory holding
# campaign.toml, receipts/ (the campaign's receipt directory), map/ (what `vac report --out`
# wrote), static.json and static.sarif (what `vac static` printed):
#   1. verify: the campaign chain, every probe's chain and blobs, each probe's head against
#      the one the campaign lists, and every verdict re-graded from the recorded
#      observations (`vac verify`);
#   2. campaign.toml is the file the chain recorded, byte for byte;
#   3. regenerate the map and the static reports into a temporary directory and compare
#      every file byte for byte, naming the first differing line (or byte);
#   4. with --rerun: run the campaign again and compare the verdict grids (not bytes: nonces
#      and timestamps differ), naming cells that changed and cells unstable across
#      repetitions. With --sample N, only N of its targets, drawn by sha256 of
#      "SEED:<target id>" (--sample-seed SEED, default the date): a study's rerun in minutes.
# One line per check, then a summary; exits 1 on any mismatch.
#
# --quick skips the build when VAC names a vac binary (VAC=target/debug/vac ./VERIFY.sh
# --quick). Otherwise vac is built (release). No network is used.
set -u

here=$(cd "$(dirname "$0")" && pwd)
quick=0
rerun=0
sample=0
sample_seed=$(date -u +%Y-%m-%d)
results=
while [ $# -gt 0 ]; do
  arg=$1
  shift
  case "$arg" in
    --quick) quick=1 ;;
    --rerun) rerun=1 ;;
    --sample)
      sample=${1:-}; shift
      case "$sample" in ''|*[!0-9]*) echo "VERIFY.sh: --sample needs a number" >&2; exit 2 ;; esac ;;
    --sample-seed) sample_seed=${1:-}; shift ;;
    -h|--help) sed -n '2,23p' "$0"; exit 0 ;;
    -*) echo "VERIFY.sh: unknown option $arg" >&2; exit 2 ;;
    *) results=$arg ;;
  esac
done
if [ "$sample" != 0 ] && [ "$rerun" = 0 ]; then
  echo "VERIFY.sh: --sample is for --rerun" >&2
  exit 2
fi
results=${results:-$here/results}
if [ ! -d "$results" ]; then
  echo "VERIFY.sh: $results: no such directory" >&2
  exit 2
fi
results=$(cd "$results" && pwd)

if [ "$quick" = 1 ] && [ -n "${VAC:-}" ] && [ -x "${VAC}" ]; then
  vac=$(cd "$(dirname "$VAC")" && pwd)/$(basename "$VAC")
else
  echo "building vac (release)…"
  (cd "$here" && cargo build --release --locked -p vac-harness --quiet) || {
    echo "FAIL build: cargo build --release -p vac-harness"
    exit 1
  }
  # Where cargo put it: CARGO_TARGET_DIR when set (relative to the checkout), else target/.
  target_dir=${CARGO_TARGET_DIR:-target}
  case "$target_dir" in /*) ;; *) target_dir=$here/$target_dir ;; esac
  vac=$target_dir/release/vac
fi

passed=0
failed=0
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; failed=$((failed + 1)); }

# The first difference between two files: the line for text, the byte for binary.
first_difference() {
  local published=$1 regenerated=$2 where line
  where=$(cmp "$published" "$regenerated" 2>&1 | head -n 1)
  case "$published" in
    *.parquet) echo "$where" ;;
    *)
      line=$(echo "$where" | sed -n 's/.*line \([0-9][0-9]*\).*/\1/p')
      byte=$(echo "$where" | sed -n 's/.*byte \([0-9][0-9]*\).*/\1/p')
      if [ -n "$line" ] && [ -n "$byte" ]; then
        # 160 bytes of each line around the first differing byte, not the line's start.
        local column start
        column=$((byte - $(head -n $((line - 1)) "$published" | wc -c)))
        start=$((column > 60 ? column - 60 : 1))
        echo "line $line, column $column: published: …$(sed -n "${line}p" "$published" | cut -b"$start"-$((start + 159)))"
        echo "    regenerated: …$(sed -n "${line}p" "$regenerated" | cut -b"$start"-$((start + 159)))"
      else
        echo "$where"
      fi
      ;;
  esac
}

# Reports name receipts by the path they were read from: read them as published, from
# the results directory's parent, as results/<name>/receipts.
parent=$(dirname "$results")
base=$(basename "$results")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

found=0
for dir in "$results"/*/; do
  dir=${dir%/}
  name=$(basename "$dir")
  [ -f "$dir/receipts/receipts.jsonl" ] || continue
  found=$((found + 1))
  rel=$base/$name/receipts

  # 1. The chains, the blobs, the heads, the verdicts.
  if out=$(cd "$parent" && "$vac" verify "$rel" 2>&1); then
    pass "verify $rel: $(echo "$out" | tail -n 1 | sed "s|^$rel: ||")"
  else
    fail "verify $rel: $(echo "$out" | grep -E 'BROKEN|MISMATCH' | head -n 3)"
    continue
  fi

  # 2. The published campaign file is the one the chain recorded.
  if [ -f "$dir/campaign.toml" ]; then
    if (cd "$parent" && "$vac" campaign recorded "$rel") > "$work/$name.toml" 2> "$work/err" \
      && cmp -s "$work/$name.toml" "$dir/campaign.toml"; then
      pass "campaign.toml of $name is the file its chain recorded"
    else
      fail "$base/$name/campaign.toml: not the file its chain recorded: $(cat "$work/err")$(first_difference "$dir/campaign.toml" "$work/$name.toml")"
    fi
  fi

  # 3. Every published report, regenerated.
  campaign=$(sed -n 's/^  "campaign": "\(.*\)",$/\1/p' "$dir/map/map.json" | head -n 1)
  regenerated=$work/$name
  (cd "$parent" && "$vac" report "$rel" --out "$regenerated/map" --campaign "$campaign") > /dev/null 2> "$work/err"
  case $? in
    0|1|5) ;;
    *) fail "report $rel: $(cat "$work/err")"; continue ;;
  esac
  (cd "$parent" && "$vac" static --json "$rel") > "$regenerated/static.json" 2> "$work/err" \
    || fail "static --json $rel: $(cat "$work/err")"
  (cd "$parent" && "$vac" static --sarif "$rel") > "$regenerated/static.sarif" 2> "$work/err" \
    || fail "static --sarif $rel: $(cat "$work/err")"
  published_files=$(cd "$dir" && find map static.json static.sarif -type f 2>/dev/null | sort)
  regenerated_files=$(cd "$regenerated" && find map static.json static.sarif -type f 2>/dev/null | sort)
  for file in $published_files; do
    if [ ! -f "$regenerated/$file" ]; then
      fail "$base/$name/$file: published, but not regenerated"
    elif cmp -s "$dir/$file" "$regenerated/$file"; then
      pass "$base/$name/$file regenerates byte for byte"
    else
      fail "$base/$name/$file differs from its regeneration: $(first_difference "$dir/$file" "$regenerated/$file")"
    fi
  done
  for file in $regenerated_files; do
    [ -f "$dir/$file" ] || fail "$base/$name/$file: regenerated, but not published"
  done

  # 4. Run it again: the same verdicts, cell for cell.
  if [ "$rerun" = 1 ]; then
    again=$work/$name-rerun
    file=$base/$name/campaign.toml
    compare=()
    if [ "$sample" != 0 ]; then
      # The drawn targets' tables, beside the published file so that its relative paths hold.
      file=$base/$name/.verify-sample.toml
      chosen=$(sed -n 's/^id = "\(.*\)"$/\1/p' "$dir/campaign.toml" | while read -r id; do
        printf '%s %s\n' "$(printf '%s:%s' "$sample_seed" "$id" | sha256sum | cut -c1-64)" "$id"
      done | sort | head -n "$sample" | cut -d' ' -f2 | tr '\n' ' ')
      awk -v keep=" $chosen" '
        /^\[\[target\]\]/ { if (in_target) flush(); in_target = 1; block = $0 "\n"; next }
        in_target && /^\[/ { flush(); in_target = 0 }
        in_target { block = block $0 "\n"; if ($0 ~ /^id = /) { id = $0; sub(/^id = "/, "", id); sub(/"$/, "", id) }; next }
        { print }
        function flush() { if (index(keep, " " id " ")) printf "%s", block; block = ""; id = "" }
        END { if (in_target) flush() }' "$dir/campaign.toml" > "$parent/$file"
      compare=(--sample)
      echo "     rerunning $sample of $name's targets (seed $sample_seed): $chosen"
    fi
    (cd "$parent" && "$vac" campaign run "$file" --out "$again" --quiet) > /dev/null 2> "$work/err"
    rc=$?
    [ "$sample" = 0 ] || rm -f "$parent/$file"
    case $rc in
      0|1|5) ;;
      *) fail "rerun of $name: $(tail -n 3 "$work/err")"; continue ;;
    esac
    if out=$("$vac" campaign compare "${compare[@]}" "$dir/receipts" "$again" 2>&1); then
      pass "rerun of $name: $(echo "$out" | head -n 1 | sed 's|^.*: ||')"
      echo "$out" | grep '^UNSTABLE' | sed 's/^/     /'
    else
      fail "rerun of $name: $(echo "$out" | head -n 1 | sed 's|^.*: ||')"
      echo "$out" | grep -E '^(CHANGED|UNSTABLE)' | sed 's/^/     /'
    fi
  fi
done

if [ "$found" = 0 ]; then
  echo "FAIL no published campaign under $results (a directory with receipts/receipts.jsonl)"
  failed=$((failed + 1))
fi
echo "VERIFY: $passed checks passed, $failed failed ($found published campaigns, vac $("$vac" --version | cut -d' ' -f2))"
[ "$failed" = 0 ]
