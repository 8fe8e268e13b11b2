# bash completion for healthcards(1): the commands, each command's options, and for an option's value the
# files, folders or words it takes. `make install` puts it in $(PREFIX)/share/bash-completion/completions/
# as `healthcards`, where bash-completion finds it; without bash-completion, `source` this file.
#
# Commands and options are read from the program's own --help when TAB is pressed (the `Commands:` list, a
# command's own `Commands:` list of subcommands (report merge), and each command's option table: lines that start with `--name` or `-x, --name`), so a new command or option
# completes without editing this file. An option's value is completed from the placeholder --help shows
# after it: a|b|c gives those words; FILE, KEY, REPORT, CERT, CHAIN.pem and other file names give files; DIR and
# SITE give folders; anything else (URL, SECONDS, N, TEXT, KID, ...) is typed.
# Tests/HealthCardsTests/InstallTests.swift checks it offers exactly the options each --help lists.

# The --help of the program being completed ($1: a command, or nothing for the program's own).
_healthcards_help() {
    local program=${words[0]/#\~/$HOME}
    "$program" ${1:+"$1"} --help 2>/dev/null
}

# Files (all, or those ending in one of the given suffixes, and folders to descend into).
_healthcards_files() {
    local IFS=$'\n' suffix
    if [ $# -eq 0 ]; then
        COMPREPLY=($(compgen -f -- "$cur"))
    else
        COMPREPLY=($(compgen -d -- "$cur"))
        for suffix in "$@"; do
            COMPREPLY+=($(compgen -f -X "!*$suffix" -- "$cur"))
        done
    fi
    compopt -o filenames 2>/dev/null
}

_healthcards_folders() {
    local IFS=$'\n'
    COMPREPLY=($(compgen -d -- "$cur"))
    compopt -o filenames 2>/dev/null
}

_healthcards() {
    local cur prev words cword split=false
    if declare -F _init_completion >/dev/null; then
        _init_completion -s || return
    else
        cur=${COMP_WORDS[COMP_CWORD]}
        prev=${COMP_WORDS[COMP_CWORD - 1]}
        words=("${COMP_WORDS[@]}")
        cword=$COMP_CWORD
    fi
    COMPREPLY=()

    if [ "$cword" -eq 1 ]; then
        local commands
        commands=$(_healthcards_help | sed -n '/^Commands:/,/^$/s/^  \([a-z][a-z0-9-]*\) .*/\1/p')
        COMPREPLY=($(compgen -W "$commands --help --version" -- "$cur"))
        return
    fi
    local command=${words[1]} help subcommands
    help=$(_healthcards_help "$command") || return
    # A command with commands of its own (`link create`, ...): the second word is one of them (or an option of
    # any, as `link --help` lists them all), and later words take that command's own --help.
    subcommands=$(sed -n '/^Commands:/,/^$/s/^  \([a-z][a-z0-9-]*\) .*/\1/p' <<<"$help")
    if [ -n "$subcommands" ]; then
        if [ "$cword" -eq 2 ] && [[ $cur != -* ]]; then
            COMPREPLY=($(compgen -W "$subcommands" -- "$cur"))
            return
        fi
        if [ "$cword" -gt 2 ] && grep -qx -- "${words[2]}" <<<"$subcommands"; then
            local program=${words[0]/#\~/$HOME}
            help=$("$program" "$command" "${words[2]}" --help 2>/dev/null) || return
        fi
    fi

    # A command with subcommands (`report merge`) lists them under `Commands:` in its --help.
    if [ "$cword" -eq 2 ] && [[ $cur != -* ]]; then
        local subcommands
        subcommands=$(sed -n '/^Commands:/,/^$/s/^  \([a-z][a-z0-9-]*\) .*/\1/p' <<<"$help")
        if [ -n "$subcommands" ]; then
            COMPREPLY=($(compgen -W "$subcommands" -- "$cur"))
            return
        fi
    fi

    # The value of the option before the cursor, from the placeholder after it in the option table.
    if [[ $prev == --* ]]; then
        local placeholder
        placeholder=$(sed -n "s/^  *\(-[A-Za-z], \)\{0,1\}$prev \([^ ]*\).*/\2/p" <<<"$help" | head -n 1)
        case $prev in
            --vc-types) placeholder="legacy|minimal" ;;
        esac
        case $placeholder in
            "") ;; # a flag: complete the next word below
            *"|"*) COMPREPLY=($(compgen -W "${placeholder//|/ }" -- "$cur")); return ;;
            *FILE_OR*DIR*) _healthcards_files; return ;;
            *DIR | SITE) _healthcards_folders; return ;;
            *FILE* | KEY* | REPORT* | CERT* | *.pem | *.pdf | *.json) _healthcards_files; return ;;
            *) return ;; # a value to type: URL, SECONDS, N, TEXT, KID, ...
        esac
    fi
    "$split" && return

    if [[ $cur == -* ]]; then
        local options
        options=$(sed -n 's/^  *\(-[A-Za-z], \)\{0,1\}\(--[a-z][a-z0-9-]*\).*/\2/p' <<<"$help")
        COMPREPLY=($(compgen -W "$options" -- "$cur"))
        return
    fi
    # Positional arguments: inputs, keys, cards, paths.
    _healthcards_files
}

complete -F _healthcards healthcards
