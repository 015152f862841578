#!/usr/bin/env python3
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The playbooks' variable tables in the operator docs, from their one declaration, playbooks/meta/argument_specs.yml.

Each table sits between the markers ``<!-- playbook-variables: NAME -->`` and ``<!-- /playbook-variables -->`` in a
page of docs/ (NAME: the playbook's entry point).  ``docs_playbooks.py`` rewrites them in place; ``--check`` fails
when a page differs from what the specification gives (scripts/docs.sh runs both).
"""

import glob
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
    if 'default' not in option:
        return 'none'
    value = option['default']
    return '`%s`' % (str(value).lower() if isinstance(value, bool) else value)


def table(options):
    lines = ['| Variable | Default | Meaning |', '|---|---|---|']
    for name, option in options.items():
        lines.append('| `%s` | %s | %s |' % (name, default(option), text(option.get('description', ''))))
    return '\n'.join(lines) + '\n'


def render(page, specs):
    return BLOCK.sub(lambda match: match.group(1) + table(specs[match.group(2)]['options']) + match.group(4), page)


def main(argv):
    check = argv[1:] == ['--check']
    with open(SPEC) as handle:
        specs = yaml.safe_load(handle)['argument_specs']
    stale = []
    for path in sorted(glob.glob(os.path.join(ROOT, 'docs', '*.md'))):
        with open(path, encoding='utf-8') as handle:
            page = handle.read()
        new = render(page, specs)
        if new == page:
            continue
        if check:
            stale.append(os.path.relpath(path, ROOT))
        else:
            with open(path, 'w', encoding='utf-8') as handle:
                handle.write(new)
            print('docs: wrote the playbook variables of %s' % os.path.relpath(path, ROOT))
    if stale:
        sys.stderr.write('docs: the playbook variables of %s differ from playbooks/meta/argument_specs.yml; run make '
                         'docs and commit the result\n' % ', '.join(stale))
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
