# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The playbooks' variable tables in the operator docs, from their one declaration, playbooks/meta/argument_specs.yml.

Each table sits between the markers ``<!-- playbook-variables: NAME -->`` and ``<!-- /playbook-variables -->`` in a
page of docs/ (NAME: the playbook's entry point).  ``docs_playbooks.py`` rewrites them in place; ``--check`` fails
when a page differs from what the specification gives (scripts/docs.sh runs both).
"""

import glob
import json
import os
import re
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPEC = os.path.join(ROOT, 'playbooks', 'meta', 'argument_specs.yml')
BLOCK = re.compile(r'(<!-- playbook-variables: (\w+) -->\n)(.*?)(<!-- /playbook-variables -->)', re.S)
MARKUP = re.compile(r'\b[OVC]\(([^()]*)\)')
LINK = re.compile(r'\bL\(([^(),]*), *([^()]*)\)')


def text(description):
    """The description as Markdown: O(x), V(x) and C(x) as code, L(text,url) as a link."""
    if isinstance(description, list):
        description = ' '.join(description)
    description = LINK.sub(lambda match: '[%s](%s)' % match.groups(), ' '.join(description.split()))
    return MARKUP.sub(lambda match: '`%s`' % match.group(1), description).replace('|', '\\|')


def default(option):
    value = option.get('default')
    if value is None or value == '':
        return 'none'
    return '`%s`' % (value if isinstance(value, str) else json.dumps(value))


def table(options):
    lines = ['| Variable | Default | Meaning |', '|---|---|---|']
    for name, option in options.items():
        lines.append('| `%s` | %s | %s |' % (name, default(option), text(option.get('description', ''))))
    return '\n'.join(lines) + '\n'


def render(page, specs, path):
    def block(match):
        if match.group(2) not in specs:
            raise SystemExit('docs: %s names the playbook %s, which playbooks/meta/argument_specs.yml does not declare '
                             '(it declares %s)' % (path, match.group(2), ', '.join(sorted(specs))))
        return match.group(1) + table(specs[match.group(2)]['options']) + match.group(4)
    return BLOCK.sub(block, page)


def main(argv):
    if argv[1:] not in ([], ['--check']):
        sys.stderr.write('usage: %s [--check]\n' % argv[0])
        return 2
    check = argv[1:] == ['--check']
    with open(SPEC) as handle:
        specs = yaml.safe_load(handle)['argument_specs']
    stale, rendered = [], set()
    for path in sorted(glob.glob(os.path.join(ROOT, 'docs', '*.md'))):
        with open(path, encoding='utf-8') as handle:
            page = handle.read()
        rendered.update(match.group(2) for match in BLOCK.finditer(page))
        new = render(page, specs, os.path.relpath(path, ROOT))
        if new == page:
            continue
        if check:
            stale.append(os.path.relpath(path, ROOT))
        else:
            with open(path, 'w', encoding='utf-8') as handle:
                handle.write(new)
            print('docs: wrote the playbook variables of %s' % os.path.relpath(path, ROOT))
    if set(specs) - rendered:
        sys.stderr.write('docs: no page of docs/ shows the variables of the playbook %s (add the markers '
                         '<!-- playbook-variables: NAME --> and <!-- /playbook-variables --> where they belong)\n'
                         % ', '.join(sorted(set(specs) - rendered)))
        return 1
    if stale:
        sys.stderr.write('docs: the playbook variables of %s differ from playbooks/meta/argument_specs.yml; run make '
                         'docs and commit the result\n' % ', '.join(stale))
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
