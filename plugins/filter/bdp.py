# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters over the collection's unit parsing and BDP math (plugins/module_utils/common/bdp.py).

Documentation lives in the .yml file of each filter beside this file.
"""

from ansible.errors import AnsibleFilterError
from ansible.utils.display import Display

from ansible_collections.bdp.wan_tune.plugins.module_utils.common import bdp as _bdp

display = Display()


def _guard(func, *args, **kwargs):
    try:
        return func(*args, **kwargs)
    except _bdp.UnitError as exc:
        raise AnsibleFilterError(str(exc))


def rate_bps(value, name='rate'):
    """'1g' -> 1000000000."""
    return _guard(_bdp.parse_rate, value, name)


def human_bytes(value):
    """12250000 -> '12.25 MB' (decimal units)."""
    return _bdp.human_bytes(int(value))


def rtt_ms(value, name='rtt'):
    """'0.098s' -> 98.0."""
    return float(_guard(_bdp.parse_rtt, value, name))


def bdp(rate, rtt):
    """'1g' | bdp(98) -> 12250000 bytes."""
    return _guard(_bdp.bdp_bytes, rate, rtt)


def tcp_buffer_plan(rate, rtt, headroom=_bdp.DEFAULT_HEADROOM, flows=None, mem_total_mb=None,
                    memory_share=0.25, names=None, tcp_mem=None, page_size=_bdp.PAGE_SIZE):
    """Everything the tcp_buffers role needs for one host, with warnings shown once.

    The memory guard (``flows`` with ``mem_total_mb`` and/or ``tcp_mem``) is bdp.memory_plan, the same check the
    sysctl_dropin module's memory_guard runs on the host itself.
    """
    try:
        mem = int(mem_total_mb) * 2 ** 20 if mem_total_mb else None
    except (TypeError, ValueError):
        raise AnsibleFilterError('mem_total_mb: %r is not a whole number of MiB.' % (mem_total_mb,))
    plan = _guard(_bdp.buffer_plan, rate, rtt, headroom, flows, mem, memory_share, names, tcp_mem or None, page_size)
    for warning in plan['warnings']:
        display.warning(warning)
    return plan


def tcp_buffer(rate, rtt, headroom=_bdp.DEFAULT_HEADROOM):
    """'1g' | tcp_buffer(98) -> 98000000 bytes (headroom x BDP, at most 2147483647)."""
    return tcp_buffer_plan(rate, rtt, headroom)['buffer_bytes']


class FilterModule(object):
    def filters(self):
        return {
            'rate_bps': rate_bps,
            'human_bytes': human_bytes,
            'rtt_ms': rtt_ms,
            'bdp': bdp,
            'tcp_buffer': tcp_buffer,
            'tcp_buffer_plan': tcp_buffer_plan,
        }
