# bash completion for healthcards(1): the commands, each command's options, and for an option's value the
# files, folders or words it takes. `make install` puts it in $(PREFIX)/share/bash-completion/completions/
# as `healthcards`, where bash-completion finds it; without bash-completion, `source` this file.
# Tests/HealthCardsTests/CompletionTests.swift checks that it offers every option each `--help` lists.

_healthcards_options() {
    case $1 in
        keygen) echo "--out --rid-secret --help" ;;
        jwks) echo "--out --x5c --issuer --drop-kid --report --help" ;;
        issue)
            echo "--issuer --key --site --template --out --nbf --exp --vc-types --rid-secret --patient-id-system" \
                "--share --chunk --no-qr --qr-scale --jobs --pdf --paper --issuer-name --logo --no-lot" \
                "--no-performer --pdf-combined --force --deterministic --quiet --help"
            ;;
        print) echo "--out --jwks --paper --issuer-name --logo --no-lot --no-performer --pdf-combined --help" ;;
        verify) echo "--jwks --now --json --help" ;;
        site) echo "--out --x5c --issuer --crl --drop-kid --report --help" ;;
        revoke) echo "--site --key --rid-secret --id --rid --report --force --before --help" ;;
        fixtures) echo "--issuer --key --out --now --seed --help" ;;
    esac
}

# Completes files (all, or those ending in one of the given suffixes, plus folders to descend into).
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
        COMPREPLY=($(compgen -W "keygen jwks issue print verify site revoke fixtures --help --version" -- "$cur"))
        return
    fi
    local command=${words[1]}

    # The value of the option before the cursor.
    case $command:$prev in
        *:--help | *:--version) return ;;
        keygen:--out | keygen:--rid-secret | jwks:--out) _healthcards_files; return ;;
        *:--pdf-combined) _healthcards_files .pdf; return ;;
        *:--logo) _healthcards_files .png .svg; return ;;
        issue:--out | site:--out | print:--out | fixtures:--out | issue:--site | revoke:--site)
            _healthcards_folders
            return
            ;;
        *:--key) _healthcards_files .pem .der; return ;;
        *:--report) _healthcards_files .ndjson; return ;;
        *:--template) _healthcards_files .json; return ;;
        *:--rid-secret) _healthcards_files; return ;;
        *:--x5c) _healthcards_files .pem .crt; return ;;
        verify:--jwks | print:--jwks) _healthcards_files .json; return ;;
        issue:--vc-types) COMPREPLY=($(compgen -W "legacy minimal" -- "$cur")); return ;;
        issue:--share) COMPREPLY=($(compgen -W "group world" -- "$cur")); return ;;
        *:--paper) COMPREPLY=($(compgen -W "a4 letter" -- "$cur")); return ;;
        # Values to type: a URL or URI, seconds since 1970, a count, an id, a rid or a kid.
        *:--issuer | *:--patient-id-system | *:--nbf | *:--exp | *:--now | *:--before | *:--qr-scale | *:--jobs | \
            revoke:--id | revoke:--rid | *:--drop-kid | *:--issuer-name | *:--seed)
            return
            ;;
    esac
    "$split" && return

    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$(_healthcards_options "$command")" -- "$cur"))
        return
    fi
    # Positional arguments: keys for jwks and site; inputs for issue; cards for print; anything for verify.
    case $command in
        jwks | site) _healthcards_files .pem .der .json ;;
        issue) _healthcards_files .csv .json .ndjson ;;
        print) _healthcards_files .smart-health-card ;;
        verify) _healthcards_files ;;
    esac
}

complete -F _healthcards healthcards
