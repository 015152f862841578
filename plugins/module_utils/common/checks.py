# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Small rules shared by the validation play, the filters and the modules, each written here once: what a TCP port
is, and how many parallel streams a path test may open.  Numbers are read by bdp.read_whole, the collection's one
whole-number reader.  tests/unit/test_one_rule.py fails when one of these bounds is written again elsewhere.
"""

from ansible_collections.bdp.wan_tune.plugins.module_utils.common.bdp import read_whole

PORT_MIN, PORT_MAX = 1, 65535
STREAMS_MIN, STREAMS_MAX = 1, 128       # parallel streams of one iperf3 test (-P): iperf3's own limit


def read_port(value):
    """A TCP port (int) from an int or a string of digits (bdp.read_whole); None when it is not one."""
    number = read_whole(value)
    return number if number is not None and PORT_MIN <= number <= PORT_MAX else None


def is_port(value):
    """Whether ``value`` is a TCP port, as a number or a string of digits."""
    return read_port(value) is not None


def port_help(default=None, extra=''):
    """What a port option accepts: 'a TCP port: a whole number from 1 to 65535 (default 873)' + ``extra`` (such as
    ', other than 22')."""
    text = 'a TCP port: a whole number from %d to %d' % (PORT_MIN, PORT_MAX)
    if default is not None:
        text += ' (default %s)' % default
    return text + extra


def is_streams(value):
    """Whether ``value`` is a number of parallel streams for one test (a whole number from 1 to 128)."""
    number = read_whole(value)
    return number is not None and STREAMS_MIN <= number <= STREAMS_MAX


def streams_help(default=None):
    """What a stream count accepts: 'a whole number of streams from 1 to 128 (default 1)'."""
    text = 'a whole number of streams from %d to %d' % (STREAMS_MIN, STREAMS_MAX)
    return text if default is None else '%s (default %s)' % (text, default)
