#!/bin/bash
# Checks what `make install DESTDIR=DEST PREFIX=PREFIX` put under DEST/PREFIX: the program runs and prints its
# versions, it needs no Swift toolchain at run time, every command has a man page that documents each
# option its --help lists, and the bash completion loads.
#
#   scripts/install-test.sh DEST PREFIX
set -euo pipefail
dest=$1
prefix=$2
root=$dest$prefix
bin=$root/bin/healthcards
fail() { echo "install-test: $*" >&2; exit 1; }

[ -x "$bin" ] || fail "no program at $bin"
version=$(env -i "$bin" --version) || fail "$bin --version failed"
head -n 1 <<<"$version" | grep -q '^healthcards [0-9]' || fail "--version begins '$(head -n 1 <<<"$version")'"
grep -qx 'SMART Health Cards framework 1.4.0' <<<"$version" || fail "--version names no SMART Health Cards 1.4.0"
[ "$("$bin" -V)" = "$version" ] || fail "-V differs from --version"
if ldd "$bin" | grep -q libswift; then fail "$bin needs the Swift runtime from a toolchain: $(ldd "$bin" | grep libswift)"; fi

# "  keygen  make a new ..." lines between "Commands:" and the next empty line.
commands=$("$bin" --help | sed -n '/^Commands:/,/^$/p' | sed -n 's/^  \([a-z][a-z0-9-]*\) .*/\1/p')
[ -n "$commands" ] || fail "found no commands in --help"
man=$root/share/man/man1
[ -f "$man/healthcards.1" ] || fail "no man page $man/healthcards.1"
for command in $commands; do
    page=$man/healthcards-$command.1
    [ -f "$page" ] || fail "no man page $page"
    grep -q "^\.TH HEALTHCARDS-${command^^} \"1\"" "$page" || fail "$page is not titled HEALTHCARDS-${command^^}(1)"
    # Each option of the table in --help, as roff writes it (\-\-name).
    for option in $("$bin" "$command" --help | sed -n 's/^  *\(-[A-Za-z], \)\{0,1\}\(--[a-z][a-z0-9-]*\).*/\2/p'); do
        grep -qF -- "${option//-/\\-}" "$page" || fail "$page does not document $option"
    done
    # The pages are UTF-8 whatever the locale `make install` ran in (the Makefile's install-test runs it under
    # LC_ALL=C): help2man under C wrote the "…" of shlink:/… as "???".
    if grep -q '???' "$page"; then fail "$page holds '???' where --help has non-ASCII text: $(grep -m1 '???' "$page")"; fi
    grep -q "$prefix/share/healthcards/templates" "$page" || fail "$page does not name the installed templates"
    if command -v man >/dev/null; then
        MANPATH=$root/share/man man -w "healthcards-$command" | grep -qx "$page" || fail "man does not find $page"
    fi
    # A command with commands of its own (link): a page for each, documenting its options.
    for sub in $("$bin" "$command" --help | sed -n '/^Commands:/,/^$/p' | sed -n 's/^  \([a-z][a-z0-9-]*\) .*/\1/p'); do
        subpage=$man/healthcards-$command-$sub.1
        [ -f "$subpage" ] || fail "no man page $subpage"
        for option in $("$bin" "$command" "$sub" --help | sed -n 's/^  *\(-[A-Za-z], \)\{0,1\}\(--[a-z][a-z0-9-]*\).*/\2/p'); do
            grep -qF -- "${option//-/\\-}" "$subpage" || fail "$subpage does not document $option"
        done
    done
done

completion=$root/share/bash-completion/completions/healthcards
[ -f "$completion" ] || fail "no bash completion at $completion"
[ "$(bash -c "source '$completion' && complete -p healthcards")" = "complete -F _healthcards healthcards" ] \
    || fail "$completion does not register a completion for healthcards"
[ -f "$root/share/healthcards/templates/covid19-vaccination.sample.csv" ] || fail "no templates in $root/share/healthcards"
grep -qF 'shlink:/…' "$man/healthcards-shl.1" || fail "$man/healthcards-shl.1 lost the UTF-8 of its --help"
"$bin" --help | grep -q "/usr/local/share/healthcards/templates" || fail "--help does not name the installed templates"
echo "install-test: $bin ($(head -n 1 <<<"$version")), $(ls "$man" | wc -l) man pages and bash completion under $root"
