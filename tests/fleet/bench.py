# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fleet cost benchmark (`make fleet-bench`): what a no-op re-run of playbooks/wan_tune.yml costs next to fact gathering.

N systemd containers (bdp-fleet-01 .. bdp-fleet-NN) from the project's image, on an internal podman network in
198.18.90.0/24 (no route off the host; no test traffic is sent at all), forks = N, reached with

  --connection ssh (default): Ansible's ssh connection as a fleet uses it: pipelining on, ControlMaster/ControlPersist,
      root login with a key made for the run. The containers run sshd in inetd mode through a ProxyCommand
      ``podman exec -i NAME /usr/sbin/sshd -i`` (image localhost/bdp-wan-tune-fleet-ssh, built once from
      tests/fleet/Containerfile), so no network is involved;
  --connection podman: containers.podman.podman, which has no pipelining (5-6 podman processes per module run).

In one run it times:

  1. a first run of wan_tune.yml (-e rate=1g -e rtt=98), which tunes every container;
  2. ``ansible all -m setup`` on the same hosts;
  3. a no-op re-run of wan_tune.yml, which must report changed=0 on every host;

2 and 3 alternate --rounds times (default 7), in alternating order (2 then 3, then 3 then 2); it prints the median
of each, the ratio of the medians no-op / setup, each pair's ratio and their median, and the load average. It then
counts the remote module executions per host of a no-op run (the AnsiballZ payloads run on one host, from -vvv
output, untimed), with the default keys and with fewer keys (--check -e tcp_buffers_companions=false), to show the
count does not depend on the number of keys. JSON goes to results/fleet-bench-<timestamp>.json. The containers and
the network are removed on every exit, failure included.
"""

from __future__ import annotations

import argparse
import atexit
import datetime
import hashlib
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAYBOOK = os.path.join(ROOT, 'playbooks', 'wan_tune.yml')
IMAGE = os.environ.get('BDP_IMAGE', 'localhost/bdp-wan-tune-debian12:latest')
SSH_IMAGE = 'localhost/bdp-wan-tune-fleet-ssh:latest'
NETWORK = 'bdp-fleet'
SUBNET = '198.18.90.0/24'
PREFIX = 'bdp-fleet-'
EXTRA = ['-e', 'rate=1g', '-e', 'rtt=98']
RECAP = re.compile(r'^(\S+)\s*:\s*ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)', re.M)
# -vvv of the podman connection: "<host> RUN [b'/usr/bin/podman', b'exec', ... AnsiballZ_<module>.py ...]"
PAYLOAD = re.compile(r"^<(\S+)> (?:SSH: )?(?:RUN|EXEC) .*?python[0-9.]* \S*/AnsiballZ_(\w+)\.py", re.M)


def log(msg):
    print('fleet-bench: %s' % msg, flush=True)


def podman(*args, check=True, quiet=False):
    proc = subprocess.run(['podman'] + list(args), capture_output=True, text=True, check=False)
    if check and proc.returncode != 0:
        raise RuntimeError('podman %s failed: %s' % (' '.join(args), proc.stderr.strip()))
    if not quiet and proc.returncode != 0:
        log('podman %s: %s' % (' '.join(args[:2]), proc.stderr.strip()))
    return proc


def names(count):
    return ['%s%02d' % (PREFIX, index) for index in range(1, count + 1)]


def cleanup():
    """Remove every bdp-fleet-* container and the network (also those a crashed earlier run left behind)."""
    listed = podman('ps', '-a', '--format', '{{.Names}}', check=False, quiet=True).stdout.split()
    ours = [name for name in listed if name.startswith(PREFIX)]
    if ours:
        podman('rm', '-f', '-t', '0', *ours, check=False)
    if podman('network', 'exists', NETWORK, check=False, quiet=True).returncode == 0:
        podman('network', 'rm', '-f', NETWORK, check=False)


def ssh_image():
    """The test image plus sshd, built once (about a minute: apt inside the build) from tests/fleet/Containerfile;
    rebuilt when the Containerfile or the base image changes (their hash is the image's label)."""
    containerfile = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'Containerfile')
    base = podman('image', 'inspect', '--format', '{{.Id}}', IMAGE).stdout.strip()
    with open(containerfile, 'rb') as handle:
        wanted = hashlib.sha256(handle.read() + base.encode()).hexdigest()[:16]
    have = podman('image', 'inspect', '--format', '{{ index .Labels "org.bdp.wan_tune.fleet-hash" }}', SSH_IMAGE,
                  check=False, quiet=True).stdout.strip()
    if have != wanted:
        log('building %s from %s (apt-get install openssh-server)' % (SSH_IMAGE, IMAGE))
        podman('build', '--label', 'org.bdp.wan_tune.fleet-hash=%s' % wanted, '-t', SSH_IMAGE, '-f', containerfile,
               os.path.dirname(containerfile))
    return SSH_IMAGE


def create(count, image, mounts=()):
    cleanup()
    podman('network', 'create', '--internal', '--subnet', SUBNET, NETWORK)
    for index, name in enumerate(names(count), start=1):
        volumes = [arg for mount in mounts for arg in ('-v', mount)]
        podman('run', '-d', '--name', name, '--hostname', name, '--privileged', '--systemd=always',
               '--network', NETWORK, '--ip', '198.18.90.%d' % (10 + index), '--label', 'owner=bdp-fleet-bench',
               *volumes, image, '/sbin/init')
    deadline = time.time() + 300
    for name in names(count):
        while True:
            state = podman('exec', name, 'systemctl', 'is-system-running', '--wait', check=False, quiet=True)
            if state.stdout.strip() in ('running', 'degraded'):
                break
            if time.time() > deadline:
                raise RuntimeError('%s: systemd did not finish booting (%s)' % (name, state.stdout.strip()))
            time.sleep(1)


def inventory(path, count, connection, key=None, control_dir=None):
    with open(path, 'w') as handle:
        handle.write('[fleet]\n')
        for name in names(count):
            handle.write('%s\n' % name)
        handle.write('\n[fleet:vars]\nansible_python_interpreter=/usr/bin/python3\n')
        if connection == 'podman':
            handle.write('ansible_connection=containers.podman.podman\n')
            return
        # what docs/fleet.md recommends, as inventory variables: root login (become is then skipped), pipelining,
        # one master connection per host kept for the whole benchmark
        handle.write('ansible_connection=ssh\nansible_user=root\nansible_ssh_private_key_file=%s\n'
                     'ansible_pipelining=true\n'
                     'ansible_ssh_common_args="-o ProxyCommand=\'podman exec -i %%h /usr/sbin/sshd -i\' '
                     '-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR"\n'
                     'ansible_ssh_extra_args="-o ControlMaster=auto -o ControlPersist=300s -o ControlPath=%s/%%C"\n'
                     % (key, control_dir))


def run(cmd, env):
    started = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    elapsed = time.monotonic() - started
    return proc, elapsed


def recap(output):
    return dict((host, {'ok': int(ok), 'changed': int(changed), 'unreachable': int(unr), 'failed': int(failed)})
                for host, ok, changed, unr, failed in RECAP.findall(output))


def timed_playbook(label, inv, forks, env, expect_changed=None):
    proc, elapsed = run(['ansible-playbook', PLAYBOOK, '-i', inv, '-f', str(forks)] + EXTRA, env)
    hosts = recap(proc.stdout)
    if proc.returncode != 0 or any(item['failed'] or item['unreachable'] for item in hosts.values()):
        fatal = '\n'.join(line for line in proc.stdout.splitlines() if line.startswith(('fatal:', 'failed:')))
        raise RuntimeError('%s failed (rc %d):\n%s%s\nthe failures:\n%s'
                           % (label, proc.returncode, proc.stdout[-6000:], proc.stderr[-3000:], fatal[:20000]))
    if expect_changed is not None:
        wrong = dict((host, item['changed']) for host, item in hosts.items() if item['changed'] != expect_changed)
        if wrong:
            raise RuntimeError('%s: changed must be %d on every host, got %r\n%s'
                               % (label, expect_changed, wrong, proc.stdout[-6000:]))
    log('%s: %.1f s (%s)' % (label, elapsed, ', '.join('changed=%d' % n for n in sorted(
        set(item['changed'] for item in hosts.values())))))
    return elapsed, hosts


def count_executions(host, inv, env, extra=()):
    """The remote module executions of one no-op run on ``host`` (untimed, -vvv, without pipelining so that the
    payload names show), by module name."""
    proc = run(['ansible-playbook', PLAYBOOK, '-i', inv, '-l', host, '-vvv', '-e', 'ansible_pipelining=false']
               + EXTRA + list(extra), env)[0]
    if proc.returncode != 0:
        raise RuntimeError('counting run failed (rc %d):\n%s' % (proc.returncode, proc.stdout[-6000:]))
    modules = [module for target, module in PAYLOAD.findall(proc.stdout) if target == host]
    keys = sorted(set(re.findall(r'"(net\.[a-z0-9_.]+)": \{', proc.stdout)))
    return {'modules': modules, 'count': len(modules), 'keys': len(keys)}


def timed_setup(inv, forks, env):
    proc, elapsed = run(['ansible', 'all', '-i', inv, '-f', str(forks), '-m', 'ansible.builtin.setup'], env)
    if proc.returncode != 0:
        raise RuntimeError('ansible -m setup failed:\n%s' % proc.stdout[-4000:])
    log('ansible -m setup: %.1f s' % elapsed)
    return elapsed


def measure(args, forks, env, inv):
    first = timed_playbook('first run of wan_tune.yml', inv, forks, env)[0]
    setups, noops, loads = [], [], []
    for index in range(args.rounds):
        # interleaved, so that load from elsewhere hits both alike, and in alternating order (setup first, then the
        # no-op first), so that neither always runs right after the other
        loads.append(round(os.getloadavg()[0], 2))
        if index % 2 == 0:
            setup = timed_setup(inv, forks, env)
            noop, hosts = timed_playbook('no-op re-run of wan_tune.yml', inv, forks, env, expect_changed=0)
        else:
            noop, hosts = timed_playbook('no-op re-run of wan_tune.yml', inv, forks, env, expect_changed=0)
            setup = timed_setup(inv, forks, env)
        setups.append(setup)
        noops.append(noop)
    setup, noop = statistics.median(setups), statistics.median(noops)
    pairs = [noop_s / setup_s for noop_s, setup_s in zip(noops, setups)]
    host = names(1)[0]
    default = count_executions(host, inv, env)
    fewer = count_executions(host, inv, env, ['--check', '-e', 'tcp_buffers_companions=false'])
    if default['count'] != fewer['count']:
        raise RuntimeError('remote module executions depend on the keys: %r vs %r' % (default, fewer))
    return {'setup_s': round(setup, 1), 'first_run_s': round(first, 1), 'noop_s': round(noop, 1),
            'ratio': round(noop / setup, 2), 'rounds': args.rounds, 'setup_runs_s': [round(x, 1) for x in setups],
            'noop_runs_s': [round(x, 1) for x in noops], 'pair_ratios': [round(x, 2) for x in pairs],
            'pair_ratio_median': round(statistics.median(pairs), 2), 'load_average_rounds': loads,
            'noop_changed': sum(item['changed'] for item in hosts.values()),
            'hosts': len(hosts), 'executions_per_host': default['count'], 'modules_per_host': default['modules'],
            'executions_fewer_keys': fewer['count'], 'keys': {'default': default['keys'], 'fewer': fewer['keys']}}


INOTIFY = '/proc/sys/fs/inotify/max_user_instances'
INOTIFY_NEEDED = 1024       # systemd in each container holds several inotify instances; Debian's default is 128


def raise_inotify_limit():
    """Raise the host's inotify instance limit for N systemd containers; put it back at exit."""
    with open(INOTIFY) as handle:
        before = int(handle.read())
    if before >= INOTIFY_NEEDED:
        return
    with open(INOTIFY, 'w') as handle:
        handle.write(str(INOTIFY_NEEDED))
    log('fs.inotify.max_user_instances %d -> %d for the containers (restored at exit)' % (before, INOTIFY_NEEDED))

    def restore():
        with open(INOTIFY, 'w') as handle:
            handle.write(str(before))
    atexit.register(restore)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n', maxsplit=1)[0])
    parser.add_argument('-n', type=int, default=int(os.environ.get('N', '20')), help='containers (default 20)')
    parser.add_argument('--forks', type=int, default=None, help='forks (default: N)')
    parser.add_argument('--connection', choices=['ssh', 'podman'], default=os.environ.get('CONNECTION') or 'ssh')
    parser.add_argument('--rounds', type=int, default=int(os.environ.get('ROUNDS', '7')),
                        help='setup / no-op pairs, in alternating order (default 7); the medians are reported')
    parser.add_argument('--max-ratio', type=float, default=1.5, help='fail above this no-op / setup ratio')
    parser.add_argument('--keep', action='store_true', help='leave the containers and the inventory (removed by the next run)')
    args = parser.parse_args()
    forks = args.forks or args.n
    if not 1 <= args.n <= 99:
        parser.error('-n must be 1..99')
    raise_inotify_limit()
    if not args.keep:
        atexit.register(cleanup)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    env = dict(os.environ, ANSIBLE_HOST_KEY_CHECKING='false', ANSIBLE_RETRY_FILES_ENABLED='false',
               ANSIBLE_NOCOLOR='1', ANSIBLE_FORCE_COLOR='false')
    os.makedirs(os.path.join(ROOT, 'results'), exist_ok=True)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime('%Y%m%dT%H%M%SZ')
    work = tempfile.mkdtemp(prefix='bdp-fleet-')      # short: the ssh ControlPath lives here
    inv = os.path.join(work, 'inventory.ini')
    try:
        image, mounts, key = IMAGE, [], None
        if args.connection == 'ssh':
            image, key = ssh_image(), os.path.join(work, 'id_ed25519')
            subprocess.run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-C', 'bdp-fleet-bench', '-f', key],
                           check=True)
            mounts = ['%s.pub:/root/.ssh/authorized_keys:ro' % key]
        inventory(inv, args.n, args.connection, key, work)
        started = time.monotonic()
        log('starting %d systemd containers from %s (connection %s)' % (args.n, image, args.connection))
        create(args.n, image, mounts)
        boot = time.monotonic() - started
        log('containers up in %.0f s' % boot)
        result = dict({
            'timestamp': stamp, 'n': args.n, 'forks': forks, 'connection': args.connection, 'image': image,
            'pipelining': args.connection == 'ssh', 'inputs': EXTRA[1::2], 'boot_s': round(boot, 1),
            'machine': {'cpus': os.cpu_count(), 'kernel': platform.release(), 'arch': platform.machine(),
                        'python': platform.python_version(), 'ansible': ansible_version(env),
                        'load_average_before': os.getloadavg()[0]},
        }, **measure(args, forks, env, inv))
        path = os.path.join(ROOT, 'results', 'fleet-bench-%s.json' % stamp)
        with open(path, 'w') as handle:
            json.dump(result, handle, indent=2)
            handle.write('\n')
        print('\nN=%d forks=%d, connection %s%s, %d CPUs'
              % (args.n, forks, args.connection, ' (pipelining, ControlPersist)' if result['pipelining'] else
                 ' (no pipelining)', os.cpu_count()))
        print('  ansible -m setup          %6.1f s   (median of %s)' % (result['setup_s'], result['setup_runs_s']))
        print('  first run of wan_tune.yml %6.1f s' % result['first_run_s'])
        print('  no-op re-run              %6.1f s   (median of %s; changed=0 on all %d hosts)'
              % (result['noop_s'], result['noop_runs_s'], result['hosts']))
        print('  ratio no-op / setup       %6.2f     (target <= %g; median of the pairs\' ratios %.2f: %s)'
              % (result['ratio'], args.max_ratio, result['pair_ratio_median'], result['pair_ratios']))
        print('  load average (1 min)      before %.1f, at each pair %s, after %.1f'
              % (result['machine']['load_average_before'], result['load_average_rounds'], os.getloadavg()[0]))
        print('  remote module executions per host: %d (%s); with %d instead of %d keys: %d'
              % (result['executions_per_host'], ', '.join(result['modules_per_host']), result['keys']['fewer'],
                 result['keys']['default'], result['executions_fewer_keys']))
        print('  JSON: %s' % os.path.relpath(path, ROOT))
        return 0 if result['ratio'] <= args.max_ratio else 1
    finally:
        if args.keep:
            log('kept the containers; inventory: %s' % inv)
        else:
            shutil.rmtree(work, ignore_errors=True)


def ansible_version(env):
    proc = subprocess.run(['ansible', '--version'], capture_output=True, text=True, env=env, check=False)
    return proc.stdout.split('\n', 1)[0].strip()


if __name__ == '__main__':
    sys.exit(main())
