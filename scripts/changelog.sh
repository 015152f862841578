#!/usr/bin/env bash
# The changelog, kept with antsibull-changelog (changelogs/config.yaml).
#   scripts/changelog.sh           regenerate CHANGELOG.rst from changelogs/changelog.yaml (`make changelog`)
#   scripts/changelog.sh --check   lint the fragments and changelog.yaml, fail when CHANGELOG.rst is not what
#                                  changelog.yaml renders to, and render the unreleased fragments as the next
#                                  release in a scratch copy (nothing is written to the checkout)
# CHANGELOG.rst holds the releases in changelog.yaml. Unreleased changes stay fragments in changelogs/fragments/
# until a release folds them in (docs/testing.md, Changelog); that keeps branches from editing one shared file.
set -euo pipefail
# shellcheck source=scripts/env.sh
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"

case "${1:-}" in
    "")
        antsibull-changelog generate
        echo "changelog: wrote CHANGELOG.rst"
        exit 0 ;;
    --check) ;;
    *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

antsibull-changelog lint
antsibull-changelog lint-changelog-yaml changelogs/changelog.yaml

antsibull-changelog generate --output "$tmp/CHANGELOG.rst"
if [ ! -f CHANGELOG.rst ]; then
    echo "changelog: CHANGELOG.rst is missing; run make changelog and commit it" >&2
    exit 1
fi
if ! diff -u CHANGELOG.rst "$tmp/CHANGELOG.rst" >"$tmp/diff"; then
    head -n 60 "$tmp/diff" >&2
    echo "changelog: CHANGELOG.rst is not what changelogs/changelog.yaml renders to; run make changelog and commit it" >&2
    exit 1
fi

# The unreleased fragments, rendered as the release after the last one in changelog.yaml, in a scratch copy.
mkdir -p "$tmp/preview"
cp -r changelogs galaxy.yml "$tmp/preview/"
next="$(python - <<'EOF'
import yaml
with open('changelogs/changelog.yaml', encoding='utf-8') as f:
    releases = (yaml.safe_load(f) or {}).get('releases') or {}
with open('galaxy.yml', encoding='utf-8') as f:
    version = yaml.safe_load(f)['version']
if version in releases:
    major, minor = (int(x) for x in version.split('.')[:2])
    version = '%d.%d.0' % (major, minor + 1)
print(version)
EOF
)"
fragments="$(find changelogs/fragments -name '*.y*ml' | wc -l)"
(
    cd "$tmp/preview"
    antsibull-changelog release --version "$next" --date 1970-01-01 >"$tmp/release.log" 2>&1 ||
        { cat "$tmp/release.log" >&2; echo "changelog: the fragments do not render as release $next" >&2; exit 1; }
)
echo "changelog: CHANGELOG.rst is up to date; $fragments unreleased fragments render as $next"
