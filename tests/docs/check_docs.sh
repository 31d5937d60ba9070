#!/usr/bin/env bash
# The docs' bookkeeping rules (docs/results/INDEX.md, "Adding a record"), checked over a tree:
#   unlisted   a file under docs/results/ that INDEX.md does not link
#   missing    a relative link in INDEX.md, a design page or a decision record to a file that is not there
#   hash       a commit hash in a design page (docs/*.md, docs/decisions/*.md, README.md): a token of
#              7-40 hex digits with a letter and a digit in it, not the fraction of a decimal
#              number (all-digit tokens are byte counts and seeds)
#   call       a device call ("call 7", "calls 1–5") named in a design page (docs/*.md, README.md):
#              the run's record names its calls
#   table      docs/performance.md's copy of the latest sweep's main table differs from
#              docs/results/perf-h200.md's (between its "latest sweep: begin/end" markers)
# Usage: check_docs.sh [--sync] [ROOT]  (ROOT: the repository root; default: this script's).
# Prints one line a problem, "<rule>: <file>: <what>", and exits 1 if there is any. --sync first
# copies the sweep's table into docs/performance.md.
set -uo pipefail
sync=0
[ "${1:-}" = --sync ] && { sync=1; shift; }
root=${1:-"$(cd "$(dirname "$0")/../.." && pwd)"}
cd "$root" || exit 2
bad=0
say() { echo "$1"; bad=1; }
index=docs/results/INDEX.md
[ -f "$index" ] || { echo "missing: $index"; exit 1; }

# the sweep's main table: its first markdown table (header row "| R | L | S | ..." to the blank line)
sweep=docs/results/perf-h200.md page=docs/performance.md
begin='<!-- latest sweep: begin -->' end='<!-- latest sweep: end -->'
if [ -f "$sweep" ] && [ -f "$page" ]; then
    want=$(awk '/^\| R \| L \| S \|/ {on = 1} on && !/^\|/ {exit} on' "$sweep")
    if [ $sync = 1 ] && grep -qF -- "$begin" "$page"; then
        awk -v b="$begin" -v e="$end" -v t="$want" '$0 == b {print; print t; skip = 1; next}
            $0 == e {skip = 0} !skip' "$page" >"$page.tmp" && mv "$page.tmp" "$page"
    fi
    have=$(awk -v b="$begin" -v e="$end" '$0 == e {on = 0} on; $0 == b {on = 1}' "$page")
    [ -n "$want" ] && [ "$have" = "$want" ] ||
        say "table: $page: its latest-sweep table is not $sweep's (bash tests/docs/check_docs.sh --sync)"
fi

# link targets of a markdown file: ](target) without an anchor, not a URL
links() { grep -o '](\([^)#]*\))' "$1" | sed 's/^](//; s/)$//' | grep -v -E '^(https?:|mailto:|$)'; }

listed=$(links "$index" | sort -u)
while IFS= read -r f; do
    rel=${f#docs/results/}
    [ "$rel" = INDEX.md ] && continue
    grep -qxF -- "$rel" <<<"$listed" || say "unlisted: $f: not linked from $index"
done < <(find docs/results -type f | sort)

for page in "$index" docs/*.md docs/decisions/*.md README.md; do
    [ -f "$page" ] || continue
    dir=$(dirname "$page")
    while IFS= read -r t; do
        [ -n "$t" ] && [ ! -e "$dir/$t" ] && say "missing: $page: links $t"
    done < <(links "$page")
done

for page in docs/*.md docs/decisions/*.md README.md; do
    [ -f "$page" ] || continue
    while IFS= read -r hit; do
        say "hash: $page:$hit (commit hashes belong in docs/results/ records)"
    done < <(grep -noE '(^|[^.0-9A-Za-z_])[0-9a-f]{7,40}\b' "$page" | sed -E 's/:[^0-9a-f]?([0-9a-f]+)$/:\1/' |
             grep -E ':[0-9a-f]*[a-f][0-9a-f]*$' | grep -E ':[0-9a-f]*[0-9][0-9a-f]*$')
done
for page in docs/*.md README.md; do
    [ -f "$page" ] || continue
    while IFS= read -r hit; do
        say "call: $page:$hit (a run's calls belong in its docs/results/ record)"
    done < <(grep -noE '\bcalls? [0-9]+' "$page")
done
exit $bad
