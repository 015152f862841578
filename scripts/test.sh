#!/usr/bin/env bash
# Every check of the project; `make test` runs them all (CI: .ci/run).
#   scripts/test.sh all | check | lint | sanity | units | molecule | transports | host | lab | ee | jumbo | vm
# `check` is the inner loop (make check): lint and the unit tests, a few minutes.
set -euo pipefail
# shellcheck source=scripts/env.sh
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"

# Each stage's heading also gives the time the one before it took (docs/testing.md keeps them).
stage_started=
stage() {
    [ -z "$stage_started" ] || printf -- '--- %d s\n' "$(( $(date +%s) - stage_started ))"
    stage_started=$(date +%s)
    printf '\n=== %s ===\n' "$*"
}

lint() {
    stage "yamllint"
    yamllint --strict .
    stage "ansible-lint (production profile)"
    ansible-lint --profile production
    stage "reference pages match the roles' argument specs and the module and filter docs (docs/reference, make docs)"
    bash scripts/docs.sh --check
    stage "changelog: fragments lint, CHANGELOG.rst up to date, unreleased fragments render (make changelog)"
    bash scripts/changelog.sh --check
}

sanity() {
    stage "ansible-test sanity"
    bash scripts/sanity.sh
}

units() {
    stage "unit tests (collection and lab)"
    python -m pytest tests/unit -q
}

molecule_default() {
    stage "molecule default scenario"
    bash scripts/molecule.sh default
}

transports() {
    stage "molecule rsync_daemon (daemon, authenticated transfers between containers, refusals, state absent)"
    bash scripts/molecule.sh rsync_daemon
    stage "device nodes through the TLS daemon's sandbox (the default unit refuses mknod, rsync_daemon_devices allows it)"
    python -m pytest tests/integration/test_rsync_daemon_devices.py -q
    stage "hpn_ssh package sources and the rsync TLS daemon's platforms, in check mode with generated facts (Ubuntu, Fedora, Rocky, RHEL, Debian), and every row of the support matrix with its recorded facts"
    python -m pytest tests/integration/test_hpn_ssh_sources.py tests/integration/test_rsync_tls_platforms.py tests/integration/test_platforms.py -q
    stage "molecule hpn_ssh (the plumbing with a test stand-in built from Debian's OpenSSH; not HPN-SSH itself)"
    bash scripts/molecule.sh hpn_ssh
    stage "the rsync TLS daemon behind firewalld and ufw from Debian's archive (peer handshake, stranger refused, absent byte for byte)"
    python -m pytest tests/integration/test_rsync_tls_firewall.py -q
}

host() {
    stage "controller host run (initial network namespace)"
    python -m pytest tests/integration/test_controller_host.py -q
    stage "bad inputs stop every host before any change (two hosts on the controller)"
    python -m pytest tests/integration/test_bad_inputs.py -q
    stage "verify playbook on the controller (loopback): bad inputs, a pair in error, the report before the failure"
    python -m pytest tests/integration/test_verify_controller.py -q
    stage "the README's quick start from an installed build: build_ignore, install ., preview and undo in check mode"
    python -m pytest tests/integration/test_collection_install.py -q
}

lab() {
    stage "WAN lab: stock vs tuned over an emulated 1 Gbit/s, 98 ms link"
    python -m pytest tests/integration/test_lab_demo.py -q
    stage "WAN lab: measured RTT (rtt=auto) and the rollout controls (batches, canary)"
    python -m pytest tests/integration/test_rollout_lab.py -q
    stage "WAN lab: playbooks/verify.yml before (stock, fails) and after tuning (passes), report with the baseline"
    python -m pytest tests/integration/test_lab_verify.py -q
    stage "WAN lab: transfers stock vs tuned, 400 MB (scp at the 2 MiB window; the rsync daemon, cleartext and TLS 1.3, >= 3 x scp)"
    python -m pytest tests/integration/test_transfer_lab.py -q
    stage "WAN lab: --check of every shipped playbook with its opt-ins changes nothing on either host (snapshots)"
    python -m pytest tests/integration/test_check_mode_lab.py -q
}

ee() {
    stage "the execution environment (make ee: scripts/build-ee.sh, incremental) and its contract"
    bash scripts/build-ee.sh
    python -m pytest tests/integration/test_ee_image.py -q
    stage "runs from AWX: six jobs through ansible-runner in the EE, each on a fresh controller, against lab hosts over SSH"
    python -m pytest tests/integration/test_ee_runner.py -q
}

jumbo() {
    stage "jumbo frames in the WAN lab (proof, black hole, commit-confirm, lost SSH connection)"
    python -m pytest tests/integration/test_jumbo_lab.py -q
    stage "molecule jumbo_mtu (persistence across real restarts: networkd, ifupdown)"
    bash scripts/molecule.sh jumbo_mtu
}

# The real-kernel VMs: both suites side by side (13 min under TCG instead of 22 one after the other). Each log is
# printed whole when both have ended, so pytest's own summary lines close the stage.
VM_SUITES=(bookworm trixie)
vm_logs=
vm_pids=()
vm_started=
vm_images_rc=           # make test: the file the background image build writes its exit status to

vm_start() {
    vm_logs="$(mktemp -d)"
    vm_started=$(date +%s)
    local suite
    for suite in "${VM_SUITES[@]}"; do
        { local rc=0
          if [ -n "$vm_images_rc" ]; then
              while [ ! -s "$vm_images_rc" ]; do sleep 2; done
              [ "$(cat "$vm_images_rc")" = 0 ] || { echo "the VM images were not built" >"$vm_logs/$suite.log"; exit 1; }
          fi
          # a session of its own, and so a scheduling group of its own (autogroup), at the priority vm_nice set last
          # (applied before the pid file appears, which vm_nice reads from then on)
          # shellcheck disable=SC2016 # the inner shell expands them
          setsid -w sh -c 'level=$(cat "$1" 2>/dev/null) && { echo "$level" >/proc/$$/autogroup; renice -n "$level" -p $$; } >/dev/null 2>&1
                           echo "$$" >"$0"; shift; exec "$@"' "$vm_logs/$suite.pid" "$vm_logs/nice" \
              python -m pytest "tests/vm/test_$suite.py" -q -p no:cacheprovider --durations=0 \
              >"$vm_logs/$suite.log" 2>&1 </dev/null || rc=$?
          date +%s >"$vm_logs/$suite.end"
          exit "$rc"; } &
        vm_pids+=("$!")
    done
}

vm_finish() {
    local i rc=0
    for i in "${!VM_SUITES[@]}"; do
        wait "${vm_pids[$i]}" || rc=1
        printf -- '--- tests/vm/test_%s.py\n' "${VM_SUITES[$i]}"
        cat "$vm_logs/${VM_SUITES[$i]}.log"
    done
    printf -- '--- the VM tier took %d s from its start\n' "$(( $(cat "$vm_logs"/*.end | sort -n | tail -1) - vm_started ))"
    rm -rf "$vm_logs"
    [ -z "$vm_images_rc" ] || rm -f "$vm_images_rc"
    vm_pids=()
    return "$rc"
}

vm() {
    stage "real-kernel VMs: Debian 12 and 13 with Debian's kernels (check mode, converge, reboots, rollback, jumbo)"
    vm_start
    vm_finish
}

# When the run ends early: stop what runs in the background (the VM image build, the VMs and their qemu).
stop_background() {
    local pid
    local file
    for file in "$vm_logs"/*.pid; do                    # the VMs' own sessions
        if pid=$(cat "$file" 2>/dev/null); then kill -- "-$pid" 2>/dev/null || true; fi
    done
    for pid in $(jobs -p); do kill -- "-$pid" 2>/dev/null || kill "$pid" 2>/dev/null || true; done
}

# The priority of the VMs: of their sessions' scheduling groups (the kernel's autogroups: without this, a nice value
# orders processes only within one session, and Molecule's ansible-playbook runs in a session of its own), and of
# their processes (qemu and the playbook runs they start inherit it).
vm_nice() {
    local file pid
    echo "$1" >"$vm_logs/nice"
    for file in "$vm_logs"/*.pid; do
        pid=$(cat "$file" 2>/dev/null) || continue
        [ -n "$pid" ] || continue
        echo "$1" >"/proc/$pid/autogroup" 2>/dev/null || true
        renice -n "$1" -g "$pid" >/dev/null 2>&1 || true
    done
}

# make test. The VMs run in the background from the start (as soon as the VM images, built or found in the
# background, are there) to the end: their checks are functional, not timed, and they are not on the critical path,
# so they take the CPU the other stages leave. They run at the lowest priority during lint, sanity and the units, and
# during the throughput labs, which need the CPU when they measure but leave most of it idle (measured: 0.5 to 1.1 of
# the 2 cores busy), and at nice 10 beside the container and jumbo stages (at nice 5, Molecule rsync_daemon still took
# 765 s beside them instead of 328 s alone: each VM runs two vCPU threads).
all() {
    set -m                                  # every background job in its own process group, for stop_background
    trap stop_background EXIT
    local images images_pid
    images="$(mktemp)"
    vm_images_rc="$images.rc"
    { rc=0; bash scripts/build-vm.sh >"$images" 2>&1 </dev/null || rc=$?; echo "$rc" >"$vm_images_rc"; exit "$rc"; } &
    images_pid=$!
    vm_start
    vm_nice 19
    lint; sanity; units
    stage "the VM images (scripts/build-vm.sh, built in the background since the start; the VMs started on them)"
    wait "$images_pid" || { cat "$images"; return 1; }
    cat "$images"
    rm -f "$images"
    vm_nice 10
    molecule_default; transports; host; jumbo
    vm_nice 19
    lab; ee
    vm_nice 0
    stage "real-kernel VMs, in the background since the VM images: Debian 12 and 13 with Debian's kernels (check mode, converge, reboots, rollback, jumbo)"
    vm_finish
    trap - EXIT
}

started=$(date +%s)
case "${1:-all}" in
    all) all ;;
    check) lint; units ;;
    lint) lint ;;
    sanity) sanity ;;
    units) units ;;
    molecule) molecule_default ;;
    transports) transports ;;
    host) host ;;
    lab) lab ;;
    ee) ee ;;
    jumbo) jumbo ;;
    vm) vm ;;
    *) echo "usage: $0 all|check|lint|sanity|units|molecule|transports|host|lab|ee|jumbo|vm" >&2; exit 2 ;;
esac
stage "done in $(( $(date +%s) - started )) s"
