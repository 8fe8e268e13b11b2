#!/usr/bin/env bash
# Creates a SoftHSM2 token holding an EC P-256 signing key, for testing PKCS#11 signing.
#
# Usage: scripts/softhsm-setup.sh DIR TOKEN-LABEL PIN-FILE [KEY-LABEL] [KEY-ID-HEX]
#
#   DIR          directory for the token store and its own softhsm2.conf (created if missing);
#                nothing global is touched: every SoftHSM2 call gets SOFTHSM2_CONF=DIR/softhsm2.conf
#   TOKEN-LABEL  label of the token (created if no token with that label exists in DIR)
#   PIN-FILE     file holding the user PIN (a final newline is ignored); the SO PIN is the same
#   KEY-LABEL    label of the key pair (default: shc-key)
#   KEY-ID-HEX   CKA_ID of the key pair in hex (default: 01)
#
# Installs softhsm2, opensc (pkcs11-tool) and libengine-pkcs11-openssl (OpenSSL 3 engine "pkcs11",
# from libp11) with apt-get when missing. Idempotent: an existing token or key is reused.
# On success the last line of standard output is the RFC 7512 PKCS#11 URI of the private key
# (with module-path and pin-source=file:PIN-FILE). Exit status 2 means the packages could not
# be installed.
set -euo pipefail

if [[ $# -lt 3 || $# -gt 5 ]]; then
    echo "usage: $0 DIR TOKEN-LABEL PIN-FILE [KEY-LABEL] [KEY-ID-HEX]" >&2
    exit 64
fi
dir=$1
token=$2
pinfile=$3
keylabel=${4:-shc-key}
keyid=${5:-01}

say() { echo "softhsm-setup: $*" >&2; }

# 1. Packages.
packages=(softhsm2 opensc libengine-pkcs11-openssl)
missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
        missing+=("$p")
    fi
done
if [[ ${#missing[@]} -gt 0 ]]; then
    say "installing ${missing[*]}"
    sudo=()
    if [[ $(id -u) -ne 0 ]]; then
        if command -v sudo >/dev/null; then sudo=(sudo -n); else
            say "not root and no sudo: cannot install ${missing[*]}"; exit 2
        fi
    fi
    export DEBIAN_FRONTEND=noninteractive
    if ! "${sudo[@]}" apt-get install -y -qq "${missing[@]}" >&2; then
        "${sudo[@]}" apt-get update -qq >&2 || true
        "${sudo[@]}" apt-get install -y -qq "${missing[@]}" >&2 || { say "apt-get could not install ${missing[*]}"; exit 2; }
    fi
fi

module=""
for m in /usr/lib/softhsm/libsofthsm2.so /usr/lib/"$(uname -m)"-linux-gnu/softhsm/libsofthsm2.so; do
    if [[ -f $m ]]; then module=$m; break; fi
done
[[ -n $module ]] || { say "libsofthsm2.so not found after installing softhsm2"; exit 2; }
command -v pkcs11-tool >/dev/null || { say "pkcs11-tool not found after installing opensc"; exit 2; }

# 2. PIN.
[[ -r $pinfile ]] || { say "cannot read PIN file $pinfile"; exit 66; }
pin=$(head -n 1 -- "$pinfile" | tr -d '\r\n')
[[ ${#pin} -ge 4 ]] || { say "the PIN in $pinfile must be at least 4 characters (SoftHSM2 minimum)"; exit 65; }

# 3. A private token store.
mkdir -p -- "$dir/tokens"
dir=$(cd -- "$dir" && pwd)
pinfile=$(cd -- "$(dirname -- "$pinfile")" && pwd)/$(basename -- "$pinfile")
chmod 700 "$dir" "$dir/tokens"
conf=$dir/softhsm2.conf
cat > "$conf" <<CONF
directories.tokendir = $dir/tokens
objectstore.backend = file
log.level = ERROR
slots.removable = false
CONF
export SOFTHSM2_CONF=$conf

p11() { pkcs11-tool --module "$module" "$@"; }

if p11 --list-token-slots 2>/dev/null | grep -Eq "token label *: *${token}\$"; then
    say "token '$token' already exists in $dir"
else
    softhsm2-util --init-token --free --label "$token" --so-pin "$pin" --pin "$pin" >&2
fi

# 4. The key pair.
if p11 --token-label "$token" --login --pin "$pin" --list-objects --type privkey 2>/dev/null \
        | grep -Eq "label: *${keylabel}\$"; then
    say "key '$keylabel' already exists on token '$token'"
else
    p11 --token-label "$token" --login --pin "$pin" \
        --keypairgen --key-type EC:prime256v1 --label "$keylabel" --id "$keyid" >&2
fi

# 5. The URI (RFC 7512 percent-encoding; ASCII names and paths, '/' kept in paths).
pct() {
    local s=$1 keep=${2:-} out="" c i
    for ((i = 0; i < ${#s}; i++)); do
        c=${s:i:1}
        if [[ $c == [A-Za-z0-9._~-] || ( -n $keep && $c == "$keep" ) ]]; then out+=$c
        else out+=$(printf '%%%02X' "'$c"); fi
    done
    printf '%s' "$out"
}
id_pct=$(printf '%s' "$keyid" | sed 's/../%&/g')
say "SOFTHSM2_CONF=$conf"
echo "pkcs11:token=$(pct "$token");object=$(pct "$keylabel");id=${id_pct};type=private?module-path=$(pct "$module" /)&pin-source=file:$(pct "$pinfile" /)"
