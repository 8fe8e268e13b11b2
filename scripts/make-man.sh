#!/bin/bash
# Makes the man pages of healthcards from its own --help, with help2man: healthcards(1) and one page per
# command, healthcards-COMMAND(1). The commands and their one-line summaries are read from
# `healthcards --help`, so a new command gets its page without editing this script.
#
#   scripts/make-man.sh BINARY OUTDIR
#
# SOURCE_DATE_EPOCH (seconds), when set, fixes the date on the pages (help2man honours it), so a package
# built twice from one commit holds the same pages.
#
# help2man puts only the first line of a usage block into SYNOPSIS unless each further form starts with
# "or:"; our --help aligns further forms under the first and wraps long ones. So help2man runs a wrapper,
# named healthcards, that rewrites the usage block of --help the GNU way: an indented line starting with
# `healthcards` becomes "   or: healthcards ...", any other indented line joins the form above it.
# HEALTHCARDS_PREFIX (default /usr/local) is the PREFIX the pages are installed under: their FILES section names
# the templates and documentation there.
#
# The pages are UTF-8 whatever the caller's locale: help2man (Perl) reads --help in the locale's encoding, and under
# LC_ALL=C it wrote every non-ASCII character (the "…" of shlink:/…) as "?".
set -euo pipefail
export LC_ALL=C.UTF-8 LANG=C.UTF-8
prefix=${HEALTHCARDS_PREFIX:-/usr/local}
bin=$(realpath "$1")
out=$2
mkdir -p "$out"
wrapper=$(mktemp -d)
include=$(mktemp)
trap 'rm -rf "$wrapper" "$include"' EXIT

cat >"$wrapper/healthcards" <<'WRAPPER'
#!/bin/bash
if [ "${*: -1}" != --help ]; then exec "$HEALTHCARDS_BIN" "$@"; fi
"$HEALTHCARDS_BIN" "$@" | awk '
    /^Usage: / { usage = 1; form = $0; next }
    usage && /^[ \t]*$/ { print form; usage = 0 }
    usage {
        s = $0; sub(/^[ \t]+/, "", s)
        if (s ~ /^healthcards /) { print form; form = "   or: " s }
        else if (s ~ /^or: /) { print form; form = "   " s }
        else form = form " " s
        next
    }
    { print }
    END { if (usage) print form }'
WRAPPER
chmod 755 "$wrapper/healthcards"
export HEALTHCARDS_BIN=$bin
program=$wrapper/healthcards

version=$("$bin" --version | head -n 1)
framework=$("$bin" --version | sed -n 2p)
# "  keygen  make a new P-256 ..." lines between "Commands:" and the next empty line.
commands=$("$bin" --help | sed -n '/^Commands:/,/^$/p' | sed -n 's/^  \([a-z][a-z0-9-]*\)  *\(.*\)$/\1\t\2/p')
if [ -z "$commands" ]; then
    echo "make-man.sh: found no commands in \`$bin --help\`" >&2
    exit 1
fi
summary=$("$bin" --help | head -n 1 | sed 's/^healthcards: //')

see_also() { # $1: the page to leave out
    local pages="" name
    for name in healthcards $(cut -f1 <<<"$commands" | sed 's/^/healthcards-/'); do
        [ "$name" = "$1" ] || pages="$pages${pages:+,\n}.BR $name (1)"
    done
    printf '[SEE ALSO]\n%b\n.PP\nThe documentation in %s/share/doc/healthcards/docs (and the project'"'"'s docs/ folder).\n' "$pages" "$prefix"
    printf '[FILES]\n.TP\n%s/share/healthcards/templates\nthe shipped templates and their sample CSVs (synthetic people)\n' "$prefix"
    printf '.TP\n%s/share/doc/healthcards/docs\nthe documentation: README.md beside it, and operations.md, batch.md, templates.md, error-codes.md, ...\n' "$prefix"
    printf '[STANDARDS]\nImplements the %s (https://spec.smarthealth.cards/).\n' "$framework"
}

see_also healthcards >"$include"
help2man --no-info --locale=C.UTF-8 --section=1 --name="$summary" --version-string="$version" --include="$include" \
    --output="$out/healthcards.1" "$program"

while IFS=$'\t' read -r command text; do
    page="healthcards-$command"
    see_also "$page" >"$include"
    help2man --no-info --locale=C.UTF-8 --section=1 --name="$text" --version-string="$version" --include="$include" \
        --help-option="$command --help" --output="$out/$page.1" "$program"
    # A figure of the machine the pages were made on ("the processors online, here 2") is not the reader's.
    sed -i -e 's/, here [0-9][0-9]*)/)/' "$out/$page.1"
    # help2man names the page after the program; this page is the command's.
    upper=$(tr '[:lower:]' '[:upper:]' <<<"$page")
    sed -i -e "s/^\.TH HEALTHCARDS /.TH $upper /" -e "s/^healthcards \\\\- /$page \\\\- /" "$out/$page.1"
    # A command with commands of its own (`link create`, ...): a page for each, healthcards-COMMAND-SUB(1).
    subcommands=$("$bin" "$command" --help | sed -n '/^Commands:/,/^$/p' | sed -n 's/^  \([a-z][a-z0-9-]*\)  *\(.*\)$/\1\t\2/p')
    [ -n "$subcommands" ] || continue
    while IFS=$'\t' read -r sub subtext; do
        subpage="$page-$sub"
        see_also "$subpage" >"$include"
        help2man --no-info --locale=C.UTF-8 --section=1 --name="$subtext" --version-string="$version" --include="$include" \
            --help-option="$command $sub --help" --output="$out/$subpage.1" "$program"
        upper=$(tr '[:lower:]' '[:upper:]' <<<"$subpage")
        sed -i -e "s/^\.TH HEALTHCARDS /.TH $upper /" -e "s/^healthcards \\\\- /$subpage \\\\- /" "$out/$subpage.1"
    done <<<"$subcommands"
done <<<"$commands"
