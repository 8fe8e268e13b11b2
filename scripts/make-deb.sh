#!/bin/bash
# Builds the Debian package of healthcards from a tree that `make install DESTDIR=STAGE PREFIX=/usr` filled:
# strips the binary, compresses the man pages, adds the copyright file, computes Depends with
# dpkg-shlibdeps from the libraries the binary really links (so a new C library, e.g. Cairo for PDFs, is
# picked up without editing this file), and runs dpkg-deb.
#
#   scripts/make-deb.sh STAGE OUTDIR MAINTAINER
#
# Prints the path of the .deb. The binary must be built with the Swift standard library linked statically
# (`swift build -c release --static-swift-stdlib`): the package depends on no Swift toolchain.
set -euo pipefail
stage=$(realpath "$1")
outdir=$2
maintainer=$3
bin=$stage/usr/bin/healthcards

if ldd "$bin" | grep -q 'libswift'; then
    echo "make-deb.sh: $bin links the Swift runtime dynamically; build it with --static-swift-stdlib" >&2
    exit 1
fi
if readelf -d "$bin" | grep -q -E 'RPATH|RUNPATH'; then
    echo "make-deb.sh: $bin has a run path; build it with --disable-local-rpath" >&2
    exit 1
fi
version=$("$bin" --version | head -n 1 | cut -d ' ' -f 2)
arch=$(dpkg --print-architecture)

strip --strip-unneeded --remove-section=.comment --remove-section=.note "$bin"
gzip -9nf "$stage"/usr/share/man/man1/*.1
doc=$stage/usr/share/doc/healthcards
install -d "$doc"
cat >"$doc/copyright" <<'EOF'
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: healthcards
Comment: A SMART Health Cards issuer toolkit. The package holds the healthcards program, its man pages,
 bash completion and the shipped templates with their synthetic sample CSVs (made-up people). It holds no
 private key and no patient data.

Files: *
Copyright: the healthcards authors
License: see the source repository
EOF

# dpkg-shlibdeps reads debian/control from the folder it runs in, and finds the package's root by its DEBIAN.
install -d "$stage/DEBIAN"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/debian"
printf 'Source: healthcards\n\nPackage: healthcards\nArchitecture: any\n' >"$work/debian/control"
depends=$(cd "$work" && dpkg-shlibdeps -O --warnings=1 -e"$bin" | sed -n 's/^shlibs:Depends=//p')
if [ -z "$depends" ]; then
    echo "make-deb.sh: dpkg-shlibdeps found no libraries for $bin" >&2
    exit 1
fi

cat >"$stage/DEBIAN/control" <<EOF
Package: healthcards
Version: $version
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $(du -sk --exclude=DEBIAN "$stage" | cut -f 1)
Depends: $depends
Recommends: libengine-pkcs11-openssl, fonts-noto-core, fonts-noto-cjk
Section: utils
Priority: optional
Description: SMART Health Cards issuer toolkit
 healthcards issues SMART Health Cards: it builds FHIR R4 Bundles from CSV exports (with a template) or
 FHIR Bundle files, signs them ES256 with the issuer's key, and writes .smart-health-card files, shc:/ QR
 images and the issuer's .well-known/jwks.json and revocation lists. healthcards verify checks anyone's
 cards offline, and healthcards print (or issue --pdf) makes printable PDF cards. Keys can live in an HSM
 through PKCS#11 (libengine-pkcs11-openssl); the Noto fonts print names in every script.
EOF
(cd "$stage" && find usr -type f -print0 | sort -z | xargs -0 md5sum) >"$stage/DEBIAN/md5sums"
mkdir -p "$outdir"
deb=$outdir/healthcards_${version}_$arch.deb
dpkg-deb --root-owner-group -Zxz --build "$stage" "$deb" >/dev/null
echo "$deb"
