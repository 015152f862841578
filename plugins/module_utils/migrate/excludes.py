# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A migration's excludes (migrate_exclude): rsync's exclude patterns, read the way rsync reads them, so that the
preflight (which files, how many bytes), the runner's walk, the copy, the proof and the deletes leave out the same
paths.

The runner hands each pattern to rsync as ``--exclude=PATTERN`` (rsync applies them to the listed files, and an
excluded file on the receiver is never deleted); the preflight and the runner walk the tree with matches() below
(tree.py).  Standard library only: the runner's copy of this file sits beside it in the run's directory.  The rules, as
rsync(1) "PATTERN MATCHING RULES" gives them: a pattern with a trailing ``/`` matches directories only; a leading
``/`` anchors it at the top of the tree; a pattern with a ``/`` inside (or ``**``) is matched against the end of the
path at a directory boundary (the whole path when anchored), one without against the last component only; ``*``
matches anything but ``/``, ``**`` anything, ``?`` one character but ``/``, ``[...]`` a class; ``dir/***`` matches
``dir`` and everything below it.  An excluded directory is not entered.  Pure functions.
"""

import re

MAX_PATTERNS = 1000
HELP = ('a list of rsync exclude patterns (such as [".cache/", "*.tmp", "/scratch/"]): * ? [..] ** and a leading / '
        'or trailing /, no filter rule prefixes (+ - : . ! etc. followed by a space) and no newline')
RULE_PREFIX = re.compile(r'^([-+.:!PRHSE]|include|exclude|merge|dir-merge|hide|show|protect|risk|clear),? ')


def check(patterns, var='migrate_exclude'):
    """The problems with ``patterns`` (a list of strings), one message each."""
    if not isinstance(patterns, (list, tuple)):
        return ['%s: %r is not a list; expected %s.' % (var, patterns, HELP)]
    problems = []
    if len(patterns) > MAX_PATTERNS:
        problems.append('%s: %d patterns; expected at most %d.' % (var, len(patterns), MAX_PATTERNS))
    for index, pattern in enumerate(patterns):
        if not isinstance(pattern, str) or not pattern.strip('/') or '\n' in pattern or '\r' in pattern \
                or '\0' in pattern or RULE_PREFIX.match(pattern):
            problems.append('%s[%d]: %r is not an exclude pattern; expected %s.' % (var, index, pattern, HELP))
    return problems


def _regex(body):
    """The regular expression of a pattern's body (no anchor, no trailing slash)."""
    out, index = [], 0
    while index < len(body):
        char = body[index]
        if body.startswith('***', index) and index + 3 == len(body) and index > 0 and body[index - 1] == '/':
            out[-1:] = ['(?:/.*)?']            # 'dir/***': the directory and everything below it
            index += 3
        elif body.startswith('**', index):
            out.append('.*')
            index += 2
        elif char == '*':
            out.append('[^/]*')
            index += 1
        elif char == '?':
            out.append('[^/]')
            index += 1
        elif char == '[':
            end = body.find(']', index + 2 if body[index + 1:index + 2] in ('!', '^', ']') else index + 1)
            if end < 0:
                out.append(re.escape(char))
                index += 1
                continue
            inner = body[index + 1:end]
            out.append('[%s%s]' % ('^' if inner[:1] in ('!', '^') else '',
                                   re.escape(inner[1:] if inner[:1] in ('!', '^') else inner).replace('\\-', '-')))
            index = end + 1
        elif char == '\\' and index + 1 < len(body):
            out.append(re.escape(body[index + 1]))
            index += 2
        else:
            out.append(re.escape(char))
            index += 1
    return ''.join(out)


def compile_patterns(patterns):
    """[(regex, directories only)] of ``patterns`` (check() passed them)."""
    compiled = []
    for pattern in patterns:
        directory = pattern.endswith('/') and not pattern.endswith('***')
        body = pattern.rstrip('/') if directory else pattern
        anchored = body.startswith('/')
        body = body.lstrip('/')
        regex = _regex(body)
        # anchored: the whole path; else the end of the path at a directory boundary (one component when the pattern
        # has no /, since * and ? never match one)
        compiled.append((re.compile(('^%s$' if anchored else '(?:^|/)%s$') % regex, re.S), directory))
    return compiled


def matches(compiled, path, is_dir):
    """Whether the relative ``path`` (a directory when ``is_dir``) is excluded by one of ``compiled``."""
    for regex, directory in compiled:
        if directory and not is_dir:
            continue
        if regex.search(path):
            return True
    return False
