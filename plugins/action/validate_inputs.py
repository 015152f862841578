# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin ``bdp.wan_tune.validate_inputs``: check every input of the collection's roles on the controller.

The variable list, types and choices come from each role's ``meta/argument_specs.yml`` (entry point ``main``),
the defaults from its ``defaults/main.yml``; the playbook's own variables from ``playbooks/meta/argument_specs.yml``
(plugin_utils/specs.py reads them all).  A variable of the collection's namespaces that none of them declares is
refused, with the closest declared names.

Each value is read by its declared type as the roles read it (as given: they never see what Ansible's validator
would convert it to), a boolean as Ansible's ``bool`` filter reads it, a whole number in digits, a list as a list, a
choice as the very string.  A value from ``-e key=value`` is a string, so ``false`` and ``4`` are taken as the
boolean and the number they say.  Every rule of meaning is the collection's one implementation, the one the role's
filter or module applies to the same value: rate, RTT, headroom, flows and memory share through
module_utils/common/bdp.py; the MTU, interface names and peers through module_utils/mtu/linkmtu.py (parse_mtu,
check_ifname, parse_peer, as the link_mtu module checks them before it changes anything); the congestion control name
through module_utils/tuning/kmod.py; the ranges of INT_RANGES from the module_utils constants, the defaults a message
shows from the specifications.  Their messages are passed on as they are.  All problems of a host are reported
together; nothing runs on the host.

``check_host()`` is the pure part: it takes the host's variables, already templated, and returns the problems.
"""

import math
import os
import re

import yaml

from ansible.errors import AnsibleError
from ansible.plugins.action import ActionBase
from ansible.utils.vars import load_extra_vars

from ansible_collections.bdp.wan_tune.plugins.module_utils.common import bdp as _bdp
from ansible_collections.bdp.wan_tune.plugins.module_utils.common import checks as _checks
from ansible_collections.bdp.wan_tune.plugins.module_utils.common import peers as _peers
from ansible_collections.bdp.wan_tune.plugins.module_utils.common import platforms as _platforms
from ansible_collections.bdp.wan_tune.plugins.module_utils.mtu import linkmtu as _linkmtu
from ansible_collections.bdp.wan_tune.plugins.module_utils.nic import settings as _nic
from ansible_collections.bdp.wan_tune.plugins.module_utils.transfer import hpnssh as _hpnssh
from ansible_collections.bdp.wan_tune.plugins.module_utils.transfer import rsyncd as _rsyncd
from ansible_collections.bdp.wan_tune.plugins.module_utils.transfer import rsynctls as _rsynctls
from ansible_collections.bdp.wan_tune.plugins.module_utils.tuning import kmod as _kmod
from ansible_collections.bdp.wan_tune.plugins.module_utils.tuning import pathprobe as _pathprobe
from ansible_collections.bdp.wan_tune.plugins.module_utils.verify import iperf3 as _iperf3
from ansible_collections.bdp.wan_tune.plugins.module_utils.verify import verify_report as _verify_report
from ansible_collections.bdp.wan_tune.plugins.plugin_utils import specs as _specs
from ansible_collections.bdp.wan_tune.plugins.plugin_utils import tls_ca as _tls_ca

# The role's rate and RTT also take auto (tasks/measure.yml); said after the parser's own message.
AUTO_HINT = {'tcp_buffers_rate': ' Or auto: the link speed of the NIC towards the peers.',
             'tcp_buffers_rtt': ' Or auto: measured to the peers.'}
SERIAL_HELP = ('a batch size or a list of them, each a whole number (1 or more) or a percentage (1% to 100%): 1, '
               '"10%", [1, "10%", "50%"], or on the command line -e wan_tune_serial=1,10%,50%')
# The playbook's inputs that feed role variables (rate, rtt, mtu); a role default built from one names it:
# tcp_buffers_rate (-e rate=...).
PLAYBOOK_INPUTS = _specs.playbook_inputs(_specs.load())
# Read once, when the play loads this plugin (before it forks its workers), not once per host.  (The roles' task
# files, for the names of their results, are read only where a host has a name that is no option.)
_specs.options()

# What Ansible's bool filter (ansible-core 2.19, plugins/filter/core.py) reads as true and false: these strings in any
# case, with nothing around them, and the integers 1 and 0.  It coerces anything else with a deprecation warning
# (' yes' to false), so anything else is refused here.
BOOL_TRUE, BOOL_FALSE, BOOL_HELP = _bdp.BOOL_TRUE, _bdp.BOOL_FALSE, _bdp.BOOL_HELP
PATH_HELP = 'an absolute path (starting with /)'
IFNAME_HELP = 'a Linux interface name: 1 to 15 characters, no spaces, "/" or ":" (eth0, ens3, bond0.100)'
LIST_HINT = (" In inventory write a YAML list (%(name)s: [a, b]); on the command line pass JSON: "
             "-e '{\"%(name)s\": [\"a\", \"b\"]}'.")
# A declared type in a message's words: what a refused value is not, and what is accepted.
TYPE_WORDS = {
    'bool': ('a boolean', BOOL_HELP),
    'int': ('a whole number', 'a whole number'),
    'str': ('a string', 'a string'),
    'path': ('a string', PATH_HELP),
    'dict': ('a mapping', 'a mapping'),
    'list': ('a list', 'a list'),
}
# The nic role's words-or-numbers (nic_rings: max, keep or a number), read by the rule of module_utils/nic/settings.py
# that the nic_settings module reads.
NIC_SETTINGS = tuple('nic_' + option for option in _nic.WORDS)
# What a variable with a rule of its own accepts, where its type alone says less.
RULE_HELP = dict([('bbr_algorithm', _kmod.CONGESTION_CONTROL_HELP)] +
                 [(var, _nic.accepted(var[len('nic_'):])) for var in NIC_SETTINGS])
# Whole numbers and their ranges: (lowest, highest or None, what is accepted).  A message shows the option's default
# from its specification at DEFAULT, else after the text (range_help); a text of module_utils that states the default
# of its own module is shown as it is.
DEFAULT = '{default}'
INT_RANGES = {
    'verify_streams': (_checks.STREAMS_MIN, _checks.STREAMS_MAX, _checks.streams_help()),
    'verify_duration': (1, _iperf3.DURATION_MAX, _iperf3.DURATION_HELP),
    'verify_omit': (0, _iperf3.OMIT_MAX, _iperf3.OMIT_HELP),
    'verify_report_html_runs': (1, None, 'a whole number of runs, 1 or more'),
    'tcp_buffers_probe_port': (_checks.PORT_MIN, _checks.PORT_MAX, _checks.port_help()),
    'jumbo_mtu_proof_port': (_checks.PORT_MIN, _checks.PORT_MAX, _checks.port_help()),
    'jumbo_mtu_confirm_timeout': (10, None, 'a whole number of seconds, 10 or more%s; the whole play must fit in it'
                                            % DEFAULT),
    'nic_confirm_timeout': (10, None, 'a whole number of seconds, 10 or more%s; the settings task on every host of '
                                      'the batch and the confirmations must fit in it' % DEFAULT),
    'wan_tune_max_fail_percentage': (0, 100, 'a whole percentage from 0 to 100%s; at 100 a batch goes on while any of '
                                             'its hosts succeeds' % DEFAULT),
    'rsync_daemon_port': (_checks.PORT_MIN, _checks.PORT_MAX, _checks.port_help()),
    'rsync_daemon_tls_port': (_checks.PORT_MIN, _checks.PORT_MAX, _rsynctls.PORT_HELP),
    'rsync_daemon_tls_days': (_rsynctls.RENEW_DAYS + 1, _rsynctls.DAYS_MAX, _rsynctls.DAYS_HELP),
    'rsync_daemon_streams': (1, _rsyncd.STREAMS_MAX, _rsyncd.STREAMS_HELP),
    'hpn_ssh_port': (_checks.PORT_MIN, _checks.PORT_MAX, _hpnssh.PORT_HELP),
    'jumbo_mtu_probe_count': (1, None, 'a whole number of ICMP echoes per probe size, 1 or more'),
    'jumbo_mtu_platform_max_mtu': (0, _linkmtu.MAX_MTU, '0 (no limit of your own) or an MTU from %d to %d'
                                   % (_linkmtu.MIN_MTU, _linkmtu.MAX_MTU)),
}
# Variables read by a parser of module_utils, the function the role's filter or module reads them with:
# (what the value is, what is accepted, parser(value, name)).  A parser's UnitError or MtuError is the message.
PARSERS = {
    'tcp_buffers_rate': ('a link rate', _bdp.RATE_HELP, _bdp.parse_rate),
    'tcp_buffers_rtt': ('a round-trip time', _bdp.RTT_HELP, _bdp.parse_rtt),
    'tcp_buffers_headroom': ('a number', _bdp.HEADROOM_HELP, _bdp.parse_headroom),
    'tcp_buffers_flows': ('a whole number', _bdp.FLOWS_HELP, _bdp.flow_count),
    'tcp_buffers_memory_share': ('a number', _bdp.MEMORY_SHARE_HELP, _bdp.parse_memory_share),
    'verify_rate': ('a link rate', _bdp.RATE_HELP, _bdp.parse_rate),
    'verify_rtt': ('a round-trip time', _bdp.RTT_HELP, _bdp.parse_rtt),
    'verify_min_fraction': ('a number', _bdp.FRACTION_HELP, _bdp.parse_fraction),
    'jumbo_mtu_target': ('a whole number of bytes', _linkmtu.MTU_HELP, _linkmtu.parse_mtu),
}
# The files a role owns: the boot-time readers (systemd-sysctl, systemd-modules-load) only read *.conf.
OWNED_FILES = ('bbr_sysctl_file', 'bbr_modules_load_file', 'tcp_buffers_sysctl_file')
SYSCTL_FILES = ('bbr_sysctl_file', 'tcp_buffers_sysctl_file')
ADMIN_SYSCTL_FILES = ('/etc/sysctl.conf',)


class Refusal(ValueError):
    """A value that cannot be used: ``reason`` follows the value, ``accepted`` follows 'expected'."""

    def __init__(self, reason, accepted, hint=''):
        super(Refusal, self).__init__(reason)
        self.reason = reason
        self.accepted = accepted
        self.hint = hint


class OutOfRange(Refusal):
    """A whole number outside its range of INT_RANGES."""


class Unresolved(object):
    """A variable whose template failed; ``error`` is the templating error."""

    def __init__(self, error):
        self.error = error


def plain(value):
    """``value`` with Ansible's tagged types turned into the built-in ones (messages never show their class names)."""
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, dict):
        return dict((plain(key), plain(item)) for key, item in value.items())
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    return value


def show(value):
    """A value as a message shows it (bdp.show_value), lists and mappings in YAML flow style, at most about 40
    characters."""
    value = plain(value)
    if isinstance(value, (list, dict)):
        text = yaml.safe_dump(value, default_flow_style=True, width=10 ** 6).strip()
        return text if len(text) <= _bdp.SHOW_CHARS else '%s... (%d characters)' % (text[:_bdp.SHOW_CHARS], len(text))
    return _bdp.show_value(value)


# ----------------------------------------------------------------------------- specs

def load_specs():
    """{variable: option} for the playbook and every role: type, elements, choices, no_log, default (from
    defaults/main.yml); the playbook's inputs are checked as the role variables they feed."""
    return dict((name, option) for name, option in _specs.load().items() if name not in PLAYBOOK_INPUTS)


def resolve(variables, specs=None):
    """[(variable, value, name shown, set by the user)] for every checked variable, in spec order.

    ``variables`` holds the host's variables that are set (templated).  An unset role variable takes its role
    default; a default built from another variable (``{{ rate | default('') }}``) takes that one's value and names
    it: ``tcp_buffers_rate (-e rate=...)``.  A role state left to ``wan_tune_state`` is not repeated: the playbook
    variable itself is checked.  A default that is some other template is computed by the role, and checked only
    where the user sets the variable.
    """
    specs = specs or load_specs()
    entries = []
    for var, option in specs.items():
        if var in variables:
            entries.append((var, variables[var], var, True))
            continue
        source = _specs.default_source(option.get('default'))
        if source is None:
            entries.append((var, option.get('default'), var, False))
            continue
        feeder, fallback = source
        if not feeder:
            continue
        if feeder in specs:
            if feeder not in variables:
                entries.append((var, specs[feeder].get('default', fallback), var, False))
            continue        # wan_tune_state is checked as itself, once
        shown = '%s (-e %s=...)' % (var, feeder) if feeder in PLAYBOOK_INPUTS else var
        if feeder in variables:
            entries.append((var, variables[feeder], shown, True))
        elif isinstance(fallback, _specs.Var):
            entries.append((var, variables.get(fallback), shown, False))
        else:
            entries.append((var, fallback, shown, False))
    return entries


# ----------------------------------------------------------------------------- the roles' reading

def _text(value):
    return str(value) if isinstance(value, (str, int, float)) and not isinstance(value, bool) else None


# How the roles read a value of each declared type (None: they cannot): a whole number in digits (bdp.read_whole), a
# string as a string or a number (never a boolean), a mapping as a mapping.  A raw value is read by its own rule.
READERS = {'int': _bdp.read_whole, 'str': _text, 'path': _text,
           'dict': lambda value: dict(value) if isinstance(value, dict) else None}


def typed(var, value, option, accepted=None):
    """``value`` as the roles read it by the option's declared type, elements and choices; a Refusal, in the words of
    the other checks, where they cannot (``accepted``: what it says is accepted, if not the type's words).

    The roles read their variables as given (-e passes strings), not as Ansible's validator (rolespec_validate)
    converts them, and their reading is the stricter one, so it is the only one here: a boolean as the ``bool``
    filter reads it (bdp.read_bool: ' yes' and 'n' are booleans to the validator, false to the filter), a choice
    as the very string (the validator turns true into 'yes'), a list as a list (the validator splits 'a,b') of
    strings where it holds strings, a string as a string or a number (never a boolean: 'True'), a mapping as a
    mapping (the validator parses JSON text), a whole number in digits (the validator also takes '3.0' and '1_000',
    which the roles' int filter does not)."""
    kind_ = option.get('type', 'str')
    what, words = TYPE_WORDS.get(kind_, (kind_, kind_))
    accepted = accepted or words
    if option.get('choices'):
        choices = [str(choice) for choice in option['choices']]
        if isinstance(value, str) and value in choices:
            return value
        what, accepted = 'one of the choices', 'one of %s' % ', '.join(choices)
        quoted = ', '.join("'%s'" % choice for choice in choices if choice in BOOL_TRUE + BOOL_FALSE)
        if isinstance(value, bool) and quoted:
            raise Refusal('is a boolean: YAML reads an unquoted on/off/yes/no as true or false, so quote it (%s)'
                          % quoted, accepted)
    elif kind_ == 'bool':
        result = _bdp.read_bool(value)
        if result is not None:
            return result
        if isinstance(value, str) and value.strip().lower() in BOOL_TRUE + BOOL_FALSE:
            raise Refusal("is not a boolean: it has white space around the word, which Ansible's bool filter does not "
                          "ignore (it would read it as false)", BOOL_HELP)
    elif kind_ == 'list' and isinstance(value, (list, tuple)):
        bad = [(index, item) for index, item in enumerate(value)
               if option.get('elements') == 'str' and not isinstance(item, str)]
        if bad:
            raise Refusal('has an item [%d] that is %s, not a string' % (bad[0][0], _bdp.yaml_kind(bad[0][1])),
                          'a list of strings')
        return list(value)
    elif kind_ == 'list' and isinstance(value, str):
        raise Refusal('is a string, not a list', accepted, LIST_HINT % {'name': var})
    elif kind_ != 'list':
        result = READERS[kind_](value) if kind_ in READERS else value
        if result is not None:
            return result
        if var in INT_RANGES:
            accepted = range_help(var, option.get('default'))
        accepted = RULE_HELP.get(var, accepted)
    raise Refusal('is not %s' % what if isinstance(value, str) else 'is %s, not %s' % (_bdp.yaml_kind(value), what), accepted)


def to_path(value):
    if not value.startswith('/'):
        raise Refusal('is not an absolute path' if value.strip() else 'is empty', PATH_HELP)
    if re.search(r'[\x00-\x1f\x7f]', value):
        raise Refusal('contains a control character (a newline?)', PATH_HELP)
    return value


def range_help(var, default=None):
    """What INT_RANGES accepts for ``var``, with the option's ``default`` (from its specification) where one is given
    and the text does not state its module's own: 'a whole number of seconds, 10 or more (default 180); ...'."""
    text = INT_RANGES[var][2]
    if DEFAULT not in text and '(default ' not in text:
        text += DEFAULT
    return text.replace(DEFAULT, '' if default is None else ' (default %s)' % default)


def in_range(var, number, default=None):
    """A whole number (already read by its type) in its range of INT_RANGES."""
    low, high, dummy = INT_RANGES[var]
    if var == 'jumbo_mtu_platform_max_mtu' and number:
        low = _linkmtu.MIN_MTU
    accepted = range_help(var, default)
    if low is not None and number < low:
        raise OutOfRange('is below %d' % low, accepted)
    if high is not None and number > high:
        raise OutOfRange('is above %d' % high, accepted)
    return number


def serial_batches(value):
    """wan_tune_serial as the play's serial list: '1,10%' and [1, '10%'] -> ['1', '10%'] (each checked)."""
    items = value.split(',') if isinstance(value, str) else value if isinstance(value, (list, tuple)) else [value]
    batches = []
    for item in items:
        if isinstance(item, bool) or not isinstance(item, (int, str)):
            raise Refusal('is %s, not a batch size' % _bdp.yaml_kind(item), SERIAL_HELP)
        text = str(item).strip()
        number = text[:-1] if text.endswith('%') else text
        if not number.isdigit() or int(number) < 1 or (text.endswith('%') and int(number) > 100):
            raise Refusal('is not a batch size' if len(items) == 1 else 'has the batch size %s' % show(item),
                          SERIAL_HELP)
        batches.append(text)
    if not batches:
        raise Refusal('is empty', SERIAL_HELP)
    return batches


# ----------------------------------------------------------------------------- checks

def _message(name, value, reason, accepted, hint='', label=''):
    """'name: value reason; expected accepted.'"""
    return '%s: %s%s %s; expected %s.%s' % (name, label, show(value), reason, accepted, hint)


def _check_items(var, name, value, check, accepted, problems, label=''):
    """The list, or None after one problem per bad item, named var[index].  ``check`` is the module's own check
    (linkmtu.check_ifname, linkmtu.parse_peer): its message is the problem of a string item."""
    if not isinstance(value, (list, tuple)):
        typed(var, value, {'type': 'list'}, 'a list, each item ' + accepted)
    bad = 0
    for index, item in enumerate(value):
        where = '%s[%d]' % (name, index)
        if not isinstance(item, str):
            problems.append(_message(where, item, 'is %s, not a string' % _bdp.yaml_kind(item), accepted, label=label))
            bad += 1
            continue
        try:
            check(item)
        except _linkmtu.MtuError as exc:
            problems.append('%s: %s' % (where, exc))
            bad += 1
    return None if bad else list(value)


def convert(var, name, value, option, problems):
    """The value of one variable: converted by its declared type (``typed``: Ansible's validator), then checked by
    the rule of meaning its name has; None (and a problem) when unusable."""
    if isinstance(value, Unresolved):
        problems.append('%s: its value could not be templated: %s' % (name, _short_error(value.error)))
        return None
    try:
        if var in AUTO_HINT or var == 'verify_rtt':
            if _pathprobe.is_auto(value):
                return _pathprobe.AUTO
        if var in PARSERS:
            # a link rate, an RTT, a factor: read by the role's filter, with units, a richer grammar than the type
            what, accepted, parser = PARSERS[var]
            if isinstance(value, bool) or not isinstance(value, (int, float, str)):
                raise Refusal('is %s, not %s' % (_bdp.yaml_kind(value), what), accepted)
            return parser(value, name)
        if var in SPECIAL:
            return SPECIAL[var](var, name, value, problems)
        return meaning(var, typed(var, value, option), option)
    except (_bdp.UnitError, _linkmtu.MtuError) as exc:
        problems.append(str(exc) + AUTO_HINT.get(var, ''))
    except Refusal as exc:
        if _specs.is_secret(option):
            problems.append('%s: (the value is not shown: it holds passwords) %s; expected %s.%s'
                            % (name, exc.reason, exc.accepted, exc.hint))
        else:
            problems.append(_message(name, value, exc.reason, exc.accepted, exc.hint))
    return None


def meaning(var, value, option):
    """A value of its declared type, checked by the rule its type or name has: a whole number in its range, an
    absolute path, a string that is not empty, a congestion control the kernel could name, a NIC setting."""
    kind_ = option.get('type', 'str')
    if var == 'bbr_algorithm':
        reason = _kmod.congestion_control_name(value)
        if reason:
            raise Refusal(reason, _kmod.CONGESTION_CONTROL_HELP)
    elif var in NIC_SETTINGS:
        return nic_setting(var, value)
    elif kind_ == 'int':
        return in_range(var, value, option.get('default'))
    elif kind_ == 'path':
        return to_path(value)
    elif kind_ == 'str' and not option.get('choices') and not value.strip() and option.get('default') != '':
        raise Refusal('is empty', 'a string')
    return value


def host_pattern(var, name, value, problems):
    """wan_tune_hosts: a host pattern or a list of them."""
    del var, name, problems
    if isinstance(value, str) and value.strip():
        return value
    if isinstance(value, (list, tuple)) and value and all(isinstance(item, str) and item for item in value):
        return list(value)
    raise Refusal('is not a host pattern' if isinstance(value, (str, list, tuple))
                  else 'is %s, not a host pattern' % _bdp.yaml_kind(value),
                  'a host pattern (all, a group name, web:&dc1) or a list of them')


# The variables whose rule reads the value as given (their type is raw, or each item is checked by its module's own
# check): var -> function(var, name, value, problems).
SPECIAL = {
    'wan_tune_serial': lambda var, name, value, problems: serial_batches(value),
    'wan_tune_hosts': host_pattern,
    'bbr_interfaces': lambda var, name, value, problems: _check_items(
        var, name, value, _linkmtu.check_ifname, IFNAME_HELP, problems),
    'jumbo_mtu_interfaces': lambda var, name, value, problems: _check_items(
        var, name, value, _linkmtu.check_ifname, IFNAME_HELP, problems),
    'jumbo_mtu_peers': lambda var, name, value, problems: _check_items(
        var, name, value, _linkmtu.parse_peer, _linkmtu.PEER_HELP, problems, label='peer '),
    'nic_interfaces': lambda var, name, value, problems: _check_items(
        var, name, value, _linkmtu.check_ifname, IFNAME_HELP, problems),
    'nic_peers': lambda var, name, value, problems: _check_items(
        var, name, value, _linkmtu.parse_peer, _linkmtu.PEER_HELP, problems, label='peer '),
    'verify_baseline': lambda var, name, value, problems: given_baseline(name, value, problems),
}


def given_baseline(name, value, problems):
    """verify_baseline: a stock run of an earlier job (its artifact), read by the report module's own reader
    (module_utils/verify/verify_report.py given_baseline); its message is the problem."""
    try:
        return _verify_report.given_baseline(value, name)
    except _verify_report.ReportError as exc:
        problems.append(str(exc))
        return None


def nic_setting(var, value):
    """nic_rings, nic_txqueuelen, nic_coalescing: a word or a whole number, as the nic_settings module reads it."""
    option = var[len('nic_'):]
    try:
        return _nic.choice(option, value, var)
    except _nic.SettingsError:
        raise Refusal('is not accepted', _nic.accepted(option))


def _short_error(error):
    text = ' '.join(str(error).split())
    return text if len(text) <= 200 else text[:200] + '...'


def check_host(variables, tcp_buffers=True, jumbo_mtu=True, play_peers=None, specs=None, inventory=None,
               sources=None):
    """Every problem with one host's inputs, one message each (an empty list when all are usable).

    ``variables``: the host's variables that are set, templated (a value that failed to template is
    ``Unresolved``).  ``tcp_buffers``/``jumbo_mtu``: whether those roles run at all (tags).  ``play_peers``: a
    callable returning [(peer, where it comes from)] for the other hosts of the play, used when the jumbo_mtu role
    takes its peers from the play.  ``inventory``: the inventory's host names; ``sources``: the inventory sources.
    """
    specs = specs or load_specs()
    host = variables.get('inventory_hostname')
    # the interpreter the modules will run with, where its path tells it is too old (EL 8's platform-python)
    problems = [problem for problem in [_platforms.interpreter_problem(variables.get('ansible_python_interpreter'))]
                if problem]
    values, raw, names, given = {}, {}, {}, {}
    for var, value, name, is_set in resolve(variables, specs):
        raw[var], names[var], given[var] = value, name, is_set
        if var in ('verify_rate', 'verify_rtt') and name != var:
            continue                        # from -e rate / rtt: checked as tcp_buffers_rate / tcp_buffers_rtt
        if var in ('tcp_buffers_rate', 'tcp_buffers_rtt') and not is_set and value == '':
            values[var] = None              # required only when tcp_buffers runs; see below
            continue
        if not is_set and value is None:
            continue                        # unset, and its default is computed by the role (or there is none)
        if var == 'jumbo_mtu_address' and not is_set:
            values[var] = value             # Ansible's own ansible_host or inventory name; peers are checked below
            continue
        values[var] = convert(var, name, value, specs[var], problems)
    state = values.get('wan_tune_state')

    def role_state(role):
        var = '%s_state' % role
        return values.get(var) if var in variables else state

    # The tcp_buffers plan: rate and RTT are needed only when the role runs with state present.
    if tcp_buffers and role_state('tcp_buffers') == 'present':
        for var, example, accepted in (('tcp_buffers_rate', 'rate=1g', _bdp.RATE_HELP),
                                       ('tcp_buffers_rtt', 'rtt=98', _bdp.RTT_HELP)):
            if values[var] is None and not given[var]:
                problems.append('%s is not set: pass -e %s or set %s for the host or its group; expected %s.'
                                % (names[var], example, var, accepted))
        auto = [var for var in ('tcp_buffers_rate', 'tcp_buffers_rtt') if values.get(var) == _pathprobe.AUTO]
        if values.get('tcp_buffers_rtt') == _pathprobe.AUTO and not rtt_peers(values, play_peers):
            problems.append('%s is auto, but the host has no peers to measure the round-trip time to: set wan_peers '
                            '(inventory names or addresses) or wan_peer for the host, tcp_buffers_rtt_peers, or run the '
                            'play on its peers too; or give the RTT, rtt=98.' % names['tcp_buffers_rtt'])
        if not auto and all(values.get(var) is not None
                            for var in ('tcp_buffers_rate', 'tcp_buffers_rtt', 'tcp_buffers_headroom')):
            try:
                _bdp.buffer_plan(raw['tcp_buffers_rate'], raw['tcp_buffers_rtt'], raw['tcp_buffers_headroom'],
                                 names=names_for_plan(names))
            except _bdp.UnitError as exc:
                problems.append(str(exc))

    # The distinct files each role owns, compared by their normalised paths (/etc/sysctl.d/./x.conf is x.conf).
    owned = [(var, values[var], normalise(values[var])) for var in OWNED_FILES if values.get(var)]
    for var, path, normal in owned:
        if var in SYSCTL_FILES and (normal in ADMIN_SYSCTL_FILES or os.path.basename(normal) == '99-sysctl.conf'):
            problems.append(_message(names[var], path, "is the administrator's sysctl file",
                                     'a file of its own, such as /etc/sysctl.d/90-bdp-wan-tune.conf'))
        elif not normal.endswith('.conf'):
            problems.append(_message(names[var], path, 'does not end in .conf, so it is not read at boot',
                                     'a file name ending in .conf'))
    for index, (var, path, normal) in enumerate(owned):
        for other, other_path, other_normal in owned[index + 1:]:
            if normal == other_normal:
                same = '' if other_path == path else ' (%s)' % show(path)
                problems.append(_message(names[other], other_path, 'is also %s%s' % (names[var], same),
                                         'a file of its own for each role'))

    # jumbo_mtu: the peers whose path must carry the MTU, when the role runs with state present.
    jumbo_on = jumbo_mtu and ('mtu' in variables or values.get('jumbo_mtu_enabled') is True)
    if jumbo_on and role_state('jumbo_mtu') == 'present' and values.get('jumbo_mtu_peers') is not None:
        peers = [(peer, names['jumbo_mtu_peers']) for peer in values['jumbo_mtu_peers']]
        if not peers and values.get('jumbo_mtu_peers_from_play'):
            bad = 0
            for peer, where in (play_peers() if play_peers else []):
                if isinstance(peer, Unresolved):
                    problems.append('%s: its value could not be templated: %s' % (where, _short_error(peer.error)))
                    bad += 1
                    continue
                try:
                    _linkmtu.parse_peer(peer)
                except _linkmtu.MtuError as exc:
                    problems.append('%s: %s' % (where, exc))
                    bad += 1
                    continue
                peers.append((peer, where))
            if not peers and not bad:
                problems.append('jumbo_mtu_peers: no peers (none set, and no other host in the play), so the path '
                                'cannot be proven; expected %s for each peer whose path must carry the MTU, or other '
                                'hosts in the play with jumbo_mtu_address.' % _linkmtu.PEER_HELP)
        elif not peers and values.get('jumbo_mtu_peers_from_play') is False:
            problems.append('jumbo_mtu_peers: no peers, and jumbo_mtu_peers_from_play is false, so the path cannot be '
                            'proven; expected a list of %s.' % _linkmtu.PEER_HELP)
    # nic: the interfaces it tunes are nic_interfaces, else those that route to its peers: it needs one or the other.
    if values.get('nic') and role_state('nic') == 'present' and not values.get('nic_interfaces') \
            and values.get('nic_interfaces') is not None and not values.get('nic_peers') \
            and not rtt_peers(values, play_peers):
        problems.append('nic: no interfaces to tune: nic_interfaces is empty, and the host has no peers whose route '
                        'would name them (nic_peers, wan_peers, wan_peer, or other hosts in the play); expected '
                        'nic_interfaces (a list of interface names, such as [ens4]) or the peers.')
    # rsync_daemon: the role's own rules (module_utils/transfer/rsyncd.py: writable modules, paths, socket options, max
    # connections, users), where the role runs with state present; they never show a password.
    # A host without modules is left alone by the role; an explicit rsync_daemon_state: present there is refused.
    rsync_modules = values.get('rsync_daemon_modules')
    if values.get('rsync_daemon') and 'rsync_daemon_state' in variables and values.get('rsync_daemon_state') == \
            'present' and isinstance(rsync_modules, list) and not rsync_modules:
        problems.append("rsync_daemon_state: 'present' is set, but rsync_daemon_modules is empty, so the daemon "
                        'would serve nothing; expected the modules of this receiving host in rsync_daemon_modules, or '
                        'rsync_daemon_state left unset (a host without modules is left alone).')
    elif values.get('rsync_daemon') and role_state('rsync_daemon') == 'present' and rsync_modules != []:
        variables = [_rsyncd.PREFIX + key for key in _rsyncd.SETTINGS + _rsynctls.SETTINGS]
        settings = dict((var[len(_rsyncd.PREFIX):], raw[var]) for var in variables if var in raw)
        if all(values.get(var) is not None for var in variables if var in raw):
            problems.extend(_rsyncd.check(settings)[1])
            problems.extend(_tls_ca.problems(settings, inventory=inventory, sources=sources))
    # hpn_ssh: the role's own rules (module_utils/transfer/hpnssh.py: port 22, sources, files with checksums, repository keys).
    if values.get('hpn_ssh') and role_state('hpn_ssh') == 'present':
        settings = dict((var, values[var]) for var in raw if var.startswith('hpn_ssh_') and values.get(var) is not None)
        if len(settings) == len([var for var in raw if var.startswith('hpn_ssh_')]):
            problems.extend(_hpnssh.check_inputs(settings))
            # the package files the role copies from the controller: there, now, before any host changes
            problems.extend(_hpnssh.controller_file_problems(settings.get('hpn_ssh_package_files', [])))
    return problems


# The numbers a role checks in its own tasks, before it runs (roles/verify/tasks/plan.yml asks with role: verify):
# their ranges are those of INT_RANGES and of the fraction parser here, the one place they are written.
ROLE_RANGES = {
    'verify': ('verify_streams', 'verify_duration', 'verify_omit', 'verify_min_fraction', 'verify_report_html_runs'),
}
# The role's variables with a rule of their own (SPECIAL) that it checks with its numbers, in the same message.
ROLE_RULES = {
    'verify': ('verify_baseline',),
}


def _is_number(value):
    try:
        return not isinstance(value, bool) and math.isfinite(float(str(value).strip()))
    except (TypeError, ValueError):
        return False


def range_problems(role, variables):
    """The role's numbers of ROLE_RANGES that are outside their ranges, in the words of the role's other checks:
    'verify_streams: 0 is out of range; expected a whole number of streams from 1 to 128.'  The role's argument
    specification has checked their types; a value that is not a number at all gets the message of check_host."""
    problems = []
    for var in ROLE_RANGES[role]:
        if var not in variables:
            continue
        value = variables[var]
        if isinstance(value, Unresolved):
            problems.append('%s: its value could not be templated: %s' % (var, _short_error(value.error)))
            continue
        if var in INT_RANGES:
            try:
                in_range(var, typed(var, value, {'type': 'int'}))
                continue
            except Refusal as exc:
                # a negative whole number is out of range too; anything else is not a whole number
                negative = isinstance(value, (int, str)) and not isinstance(value, bool) \
                    and re.match(r'^\s*-[0-9]+\s*$', str(value))
                accepted = range_help(var) if isinstance(exc, OutOfRange) or negative else None
        else:
            _what, accepted, parser = PARSERS[var]
            try:
                parser(value, var)
                continue
            except _bdp.UnitError:
                accepted = accepted if _is_number(value) else None
        if accepted is None:
            convert(var, var, value, {'type': 'int'}, problems)      # the message of check_host
        else:
            problems.append('%s: %s is out of range; expected %s.' % (var, value, accepted))
    return problems


def rtt_peers(values, play_peers):
    """Whether rtt=auto has peers: tcp_buffers_rtt_peers, wan_peers, wan_peer, or other hosts of the play."""
    return bool(values.get('tcp_buffers_rtt_peers') or values.get('wan_peers') or values.get('wan_peer')
                or (play_peers is not None and play_peers()))


def no_hosts_check(pattern, matched, sources=None):
    """The result of the play's host check: a warning when the host pattern matched no inventory host."""
    if matched:
        return {'changed': False, 'msg': '%d inventory hosts match %s.' % (matched, show(pattern))}
    where = ', '.join(str(source) for source in sources or []) or 'no inventory'
    warning = ('The play matched no hosts: the pattern %s (wan_tune_hosts, default all) matches no host of the '
               'inventory (%s), so nothing is tuned. Pass an inventory with -i inventory.ini (README, Quick start), '
               'or fix wan_tune_hosts or --limit.' % (show(pattern), where))
    return {'changed': False, 'msg': warning, 'warnings': [warning]}


def normalise(path):
    """``path`` normalised by its text (os.path.normpath; the host's links cannot be seen from here):
    /etc/sysctl.d/./x.conf, /etc//sysctl.d/x.conf and /etc/sysctl.d/a/../x.conf are all /etc/sysctl.d/x.conf, and so
    is //etc/sysctl.d/x.conf (normpath keeps a leading //, which Linux reads as /)."""
    path = os.path.normpath(path)
    return '/' + path.lstrip('/') if path.startswith('//') else path


def names_for_plan(names):
    return {'rate': names['tcp_buffers_rate'], 'rtt': names['tcp_buffers_rtt'],
            'headroom': names['tcp_buffers_headroom'], 'flows': names['tcp_buffers_flows']}


def extra_var_names(loader):
    """The names this run was given with -e: ansible-playbook read them before it forked (load_extra_vars keeps
    what it read, so this reads nothing again)."""
    return frozenset(load_extra_vars(loader))


def name_checks(variables, extra):
    """(problems, warnings) for the names of the host's variables: a variable of the collection's namespaces that no
    specification declares, and a name one slip from a declared option (rsync_deamon_users).  Given with -e (in
    ``extra``) it stops the run; from the inventory it is a warning (an inventory shared with other playbooks may
    hold a verify_* or migrate_* of its own), worded without the host so that Ansible shows it once."""
    problems, warnings = [], []
    found = [(name, _specs.undeclared_message(name, closest)) for name, closest in _specs.undeclared(variables)]
    found += [(name, '%s: no role or playbook of bdp.wan_tune declares this variable, so nothing reads it; did you mean '
                     '%s?' % (name, option)) for name, option in _specs.near_misses(variables)]
    for name, message in found:
        if name in extra:
            problems.append(message)
        else:
            warnings.append('Host variable ' + message)
    return problems, warnings


def outcome(host, problems, ok, warnings=()):
    """The action's result: failed with every problem, or ``ok``; with the warnings."""
    result = {'changed': False, 'failed': True, 'msg': failure_message(host, problems)} if problems else \
        {'changed': False, 'msg': ok}
    if warnings:
        result['warnings'] = list(warnings)
    return result


def failure_message(host, problems):
    """One message for a host: every problem on its own line, and that nothing changed."""
    return ('Inputs of host %s are not usable (%d problem%s):\n%s\nNothing was changed on any host.'
            % (host, len(problems), '' if len(problems) == 1 else 's', '\n'.join('- ' + item for item in problems)))


# ----------------------------------------------------------------------------- the action

class ActionModule(ActionBase):
    """Check the inputs of one host on the controller; never runs a module on the host."""

    TRANSFERS_FILES = False
    _requires_connection = False
    _VALID_ARGS = frozenset(('tcp_buffers', 'jumbo_mtu', 'hosts_pattern', 'hosts_matched', 'role', 'names_only'))

    def _template(self, raw):
        try:
            return plain(self._templar.template(raw))
        except AnsibleError as exc:
            return Unresolved(getattr(exc, 'message', None) or str(exc))

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        dummy, args = self.validate_argument_spec(argument_spec=dict(
            tcp_buffers=dict(type='bool', default=True),
            jumbo_mtu=dict(type='bool', default=True),
            hosts_pattern=dict(type='raw'),
            hosts_matched=dict(type='int'),
            role=dict(type='str', choices=sorted(ROLE_RANGES)),
            names_only=dict(type='bool', default=False),
        ))
        if args['hosts_matched'] is not None:
            return dict(result, **no_hosts_check(args['hosts_pattern'], args['hosts_matched'],
                                                 task_vars.get('ansible_inventory_sources')))
        if args['role']:
            rules = ROLE_RULES.get(args['role'], ())
            variables = dict((var, self._template(task_vars[var])) for var in ROLE_RANGES[args['role']] + rules
                             if var in task_vars)
            problems = range_problems(args['role'], variables)
            for var in rules:
                if var in variables:
                    convert(var, var, variables[var], {}, problems)
            return dict(result, changed=False, problems=problems,
                        msg='; '.join(problems) or 'The numbers of role %s are in range.' % args['role'])
        host = task_vars.get('inventory_hostname', '?')
        problems, warnings = name_checks(task_vars, extra_var_names(self._loader))
        if args['names_only']:
            # verify.yml and migrate.yml check names only; the interpreter too (check_host does it for wan_tune.yml)
            problems += [problem for problem in [_platforms.interpreter_problem(
                self._template(task_vars.get('ansible_python_interpreter')))] if problem]
            return dict(result, **outcome(host, problems, 'The variables of host %s in the collection\'s namespaces '
                                                          'are declared.' % host, warnings))
        specs = load_specs()
        wanted = set(specs) | set(PLAYBOOK_INPUTS) | {'inventory_hostname', 'ansible_host',
                                                      'ansible_python_interpreter'}
        variables = {}
        for var in wanted:
            if var not in task_vars:
                continue
            raw = task_vars[var]
            if var in specs and isinstance(raw, str) and raw == specs[var].get('default'):
                continue        # the role's own default (the roles of this play are loaded): not set by the user
            variables[var] = self._template(raw)

        def play_peers():
            peers = []
            hostvars = task_vars.get('hostvars', {})
            for other in task_vars.get('ansible_play_hosts_all', []):
                if other == host:
                    continue
                try:
                    address, var = _peers.address_of(other, hostvars[other])
                    peers.append((plain(address), '%s of host %s' % (var or 'inventory name', other)))
                except AnsibleError as exc:
                    where = getattr(exc, 'address_var', 'address')
                    peers.append((Unresolved(str(exc)), '%s of host %s' % (where, other)))
            return peers

        problems += check_host(variables, tcp_buffers=args['tcp_buffers'], jumbo_mtu=args['jumbo_mtu'],
                               play_peers=play_peers, specs=specs, inventory=task_vars.get('groups', {}).get('all'),
                               sources=task_vars.get('ansible_inventory_sources'))
        return dict(result, **outcome(host, problems, 'All inputs of host %s are usable.' % host, warnings))
