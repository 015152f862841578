# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The TLS daemon's layout is written once (module_utils/transfer/rsynctls.py layout()): the role reads it through the filter
rsync_tls_layout, and docs/migration.md, which operators read, names the same paths, the same rsync option and the
same service."""

from __future__ import annotations

import os
import re

from ansible_collections.bdp.wan_tune.plugins.module_utils.transfer import rsynctls

DOC = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', '..', 'docs', 'migration.md')
VARS = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', '..', 'roles', 'rsync_daemon', 'vars', 'main.yml')


def test_docs_name_the_layout():
    with open(DOC, encoding='utf-8') as handle:
        text = handle.read()
    layout = rsynctls.layout('dc1-to-dc2', receiver='dc2-a')
    for path in list(layout['server'].values()) + [layout['unit'], layout['wrap']]:
        assert path in text or os.path.basename(path) in text, path
    for path in list(layout['client'].values()) + list(layout['ca'].values()):
        assert path in text, path
    assert layout['env'].replace(' ', ' \\\n       ') in text or all(part in text for part in layout['env'].split())
    assert layout['server_messages'] in text and layout['service'] in text and layout['name'] in text


def test_the_role_writes_no_path_of_its_own():
    """vars/main.yml builds the TLS paths from the filter, not from literals."""
    with open(VARS, encoding='utf-8') as handle:
        text = handle.read()
    assert 'bdp.wan_tune.rsync_tls_layout' in text
    assert not re.search(r'/etc/bdp-wan-tune|bdp-rsync-tls\.service|host\.crt|ca\.crt', text)
