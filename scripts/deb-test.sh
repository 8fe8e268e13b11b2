#!/bin/bash
# Installs the healthcards .deb into a fresh minimal Debian 12 (bookworm) root, with apt so that its
# Depends are resolved and without its Recommends, with no Swift toolchain, and runs there, as an
# ordinary user: keygen, site, issue on each shipped sample CSV, verify, and jwks; then checks the results.
#
#   scripts/deb-test.sh [--if-possible] DEB
#
# --if-possible (what `make test` passes): when no Debian 12 root can be built here (not root, no
# network, no debootstrap, chroot refused), print a note and exit 0 instead of failing. A failure after the
# root is built always fails.
#
# Cached in .build/deb-test/ (so later runs take about a minute): the debootstrap result as a tarball,
# unpacked afresh for every run, and the .debs apt downloaded. Mounts are undone on every exit.
set -euo pipefail
if_possible=false
if [ "${1:-}" = --if-possible ]; then
    if_possible=true
    shift
fi
deb=$(realpath "$1")
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
cache=$(realpath -m .build/deb-test)
base=$cache/bookworm-minbase.tar
archives=$cache/apt-archives
mkdir -p "$cache" "$archives"

skip() {
    if $if_possible; then
        echo "deb-test: skipped: $1"
        exit 0
    fi
    echo "deb-test: $1" >&2
    exit 1
}

[ "$(id -u)" = 0 ] || skip "building a Debian root and chroot need root (run make deb-test as root)"
command -v debootstrap >/dev/null || skip "debootstrap is not installed"
root=""
cleanup() {
    local status=$?
    if [ -n "$root" ] && [ -d "$root" ]; then
        # Everything mounted under the root, deepest first; lazily if busy.
        local mounts
        mounts=$(awk -v r="$root" '$2 == r || index($2, r "/") == 1 { print $2 }' /proc/mounts | sort -r)
        for m in $mounts; do umount "$m" 2>/dev/null || umount -l "$m"; done
        if awk -v r="$root" '$2 == r || index($2, r "/") == 1 { found = 1 } END { exit !found }' /proc/mounts; then
            echo "deb-test: $root still has mounts; not removing it" >&2
        else
            rm -rf --one-file-system "$root"
        fi
    fi
    exit $status
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

started=$SECONDS
if [ ! -s "$base" ]; then
    echo "deb-test: making a minimal Debian 12 root with debootstrap (cached in $base)"
    build=$cache/debootstrap.tmp
    rm -rf --one-file-system "$build"
    if ! debootstrap --variant=minbase bookworm "$build" "$mirror" >"$cache/debootstrap.log" 2>&1; then
        rm -rf --one-file-system "$build"
        skip "debootstrap could not build a Debian 12 root here (see $cache/debootstrap.log)"
    fi
    rm -rf "$build"/var/cache/apt/archives/*.deb
    tar -C "$build" -cf "$base.tmp" . && mv "$base.tmp" "$base"
    rm -rf --one-file-system "$build"
fi

root=$(mktemp -d "$cache/root.XXXXXX")
tar -C "$root" -xf "$base"
chmod 755 "$root"
cp /etc/resolv.conf "$root/etc/resolv.conf"
in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 "$@"; }
in_root true || skip "chroot into the Debian root failed"
if in_root sh -c 'command -v swift' >/dev/null || find "$root" -name 'libswift*' | grep -q .; then
    echo "deb-test: the Debian root holds a Swift toolchain or runtime; the test would prove nothing" >&2
    exit 1
fi
mount -t proc proc "$root/proc" || skip "cannot mount /proc in the Debian root"
echo "deb-test: Debian $(cat "$root/etc/debian_version") root ready after $((SECONDS - started)) s"

# Install with apt: Depends resolved from the Debian archive, Recommends left out (they are optional).
cp "$archives"/*.deb "$root/var/cache/apt/archives/" 2>/dev/null || true
cp "$deb" "$root/tmp/healthcards.deb"
in_root apt-get -o DPkg::Lock::Timeout=600 -qq update
if ! in_root env DEBIAN_FRONTEND=noninteractive apt-get -qq -y --no-install-recommends install /tmp/healthcards.deb \
    >"$cache/apt-install.log" 2>&1; then
    cat "$cache/apt-install.log" >&2
    echo "deb-test: apt could not install the package in Debian 12" >&2
    exit 1
fi
cp "$root"/var/cache/apt/archives/*.deb "$archives/" 2>/dev/null || true
rm -f "$archives/healthcards.deb"
echo "deb-test: installed $(in_root dpkg-query -W -f '${Package} ${Version}, Depends: ${Depends}' healthcards)"

# What the package must hold besides the program.
files=$(in_root dpkg -L healthcards)
for f in /usr/bin/healthcards /usr/share/man/man1/healthcards.1.gz /usr/share/man/man1/healthcards-issue.1.gz \
    /usr/share/bash-completion/completions/healthcards /usr/share/healthcards/templates/covid19-vaccination.json \
    /usr/share/doc/healthcards/copyright; do
    grep -qx "$f" <<<"$files" || { echo "deb-test: the package has no $f" >&2; exit 1; }
done
for recommended in libengine-pkcs11-openssl fonts-noto-core; do
    if in_root dpkg-query -W -f '${Status}' $recommended 2>/dev/null | grep -q 'ok installed'; then
        echo "deb-test: $recommended got installed although Recommends were left out" >&2
        exit 1
    fi
done

# Expected records per sample: the distinct ids of each CSV's id column (computed here, outside the root).
count_ids() { awk -F, -v col="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == col) c = i; next } { print $c }' \
    "$root/usr/share/healthcards/templates/$1.sample.csv" | sort -u | wc -l; }
vaccinations=$(count_ids covid19-vaccination recip_id)
labs=$(count_ids lab-result patient_id)

in_root useradd --create-home --shell /bin/sh clinic
cat >"$root/home/clinic/run.sh" <<'EOF'
#!/bin/sh
# Runs in the Debian root as the user clinic; exits non-zero with a message at the first wrong result.
set -eu
cd "$HOME"
fail() { echo "deb-test (in Debian 12): $*" >&2; exit 1; }
templates=/usr/share/healthcards/templates

healthcards --version >version.txt
head -n 1 version.txt | grep -qx "healthcards $1" || fail "--version says $(head -n 1 version.txt)"
grep -qx 'SMART Health Cards framework 1.4.0' version.txt || fail "--version names no framework 1.4.0"
for lib in OpenSSL zlib libqrencode libpng zbar Cairo Pango librsvg; do
    grep -q "^$lib [0-9]" version.txt || fail "--version names no $lib version"
done

kid=$(healthcards keygen --out keys/issuer.pem)
[ ${#kid} -eq 43 ] || fail "keygen printed '$kid', not a 43-character kid"
[ "$(stat -c %a keys/issuer.pem)" = 600 ] || fail "keygen wrote the key with mode $(stat -c %a keys/issuer.pem)"
healthcards keygen --rid-secret keys/rid.secret
[ "$(stat -c %a keys/rid.secret)" = 600 ] || fail "keygen wrote the rid secret with mode $(stat -c %a keys/rid.secret)"
site=$(healthcards site --out site --issuer https://issuer.example.org keys/issuer.pem)
[ "$site" = "$kid (no CRL)" ] || fail "site printed '$site'"
[ -f site/.well-known/jwks.json ] || fail "site wrote no .well-known/jwks.json"

for template in covid19-vaccination:$2 lab-result:$3; do
    name=${template%%:*}
    expected=${template#*:}
    healthcards issue --quiet --issuer https://issuer.example.org --key keys/issuer.pem --rid-secret keys/rid.secret \
        --template $templates/$name.json --out out/$name $templates/$name.sample.csv \
        || fail "issue $name.sample.csv exited with $?"
    [ "$(wc -l <out/$name/report.ndjson)" -eq "$expected" ] || fail "$name: the report has not $expected lines"
    [ "$(grep -c '"status":"issued"' out/$name/report.ndjson)" -eq "$expected" ] || fail "$name: not every record issued"
    [ "$(grep -c '"rid":"' out/$name/report.ndjson)" -eq "$expected" ] || fail "$name: not every card has a rid"
    [ "$(ls out/$name/cards | wc -l)" -eq "$expected" ] || fail "$name: not $expected cards"
    [ "$(ls out/$name/qr/*.png | wc -l)" -eq "$expected" ] || fail "$name: not $expected QR images"
done

# Every card and every QR image (read back through libpng and zbar) verifies with the published key set.
credentials=$((2 * ($2 + $3)))
healthcards verify --jwks site out >verify.txt || fail "verify exited with $?: $(tail -n 3 verify.txt)"
tail -n 1 verify.txt | grep -qx "verify: $credentials credential(s) checked, 0 error(s), 0 warning(s)" \
    || fail "verify: $(tail -n 1 verify.txt)"
# And a key set without the signing key fails them.
healthcards keygen --out keys/other.pem >/dev/null
healthcards jwks keys/other.pem --out other/.well-known/jwks.json >/dev/null
if healthcards verify --jwks other out/covid19-vaccination/cards >/dev/null; then
    fail "verify accepted cards against a key set without their key"
fi
echo "deb-test (in Debian 12): keygen, site, issue ($2 + $3 cards), verify ($credentials credentials) and jwks as expected"
EOF
chmod 755 "$root/home/clinic/run.sh"
in_root chown -R clinic:clinic /home/clinic
version=$(dpkg-deb -f "$deb" Version)
clinic=$(in_root id -u clinic):$(in_root id -g clinic)
chroot --userspec="$clinic" "$root" /usr/bin/env -i HOME=/home/clinic PATH=/usr/bin:/bin LANG=C.UTF-8 \
    /home/clinic/run.sh "$version" "$vaccinations" "$labs"
echo "deb-test: passed in $((SECONDS - started)) s"
