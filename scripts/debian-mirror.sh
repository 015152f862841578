# shellcheck shell=bash
# The Debian mirror this machine's apt already uses, for debootstrap (sourced by
# build-image.sh and build-vm.sh). Prints nothing when apt names none: then debootstrap
# is called without a mirror and uses its own default. One-line .list and deb822
# .sources formats; comments are ignored. The same mirror serves every Debian suite.
debian_mirror() {
    local f
    [ -n "${DEBIAN_MIRROR:-}" ] && { echo "$DEBIAN_MIRROR"; return; }
    shopt -s nullglob
    {
        for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
            [ -r "$f" ] || continue
            awk '
                /^[[:space:]]*deb[[:space:]]/ {
                    i = 2
                    if ($i ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
                    if ($(i + 1) ~ /^[a-z]+$/ && $(i + 2) ~ /main/) print $i
                }' "$f"
        done
        for f in /etc/apt/sources.list.d/*.sources; do
            [ -r "$f" ] || continue
            grep -v '^[[:space:]]*#' "$f" | awk '
                BEGIN { RS = ""; FS = "\n" }
                {
                    uri = ""; ok = 0
                    for (i = 1; i <= NF; i++) {
                        if ($i ~ /^URIs:/)       { split($i, a, /[[:space:]]+/); uri = a[2] }
                        if ($i ~ /^Suites:/)     { if ($i ~ /[[:space:]][a-z]+([[:space:]]|$)/) ok++ }
                        if ($i ~ /^Components:/) { if ($i ~ /main/) ok++ }
                    }
                    if (ok == 2 && uri != "") print uri
                }'
        done
    } | grep -v -e security -e '^$' | head -n 1
    shopt -u nullglob
}
