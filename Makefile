# bdp.wan_tune: the two commands are `make demo` and `make test`.
SHELL := /bin/bash
.DEFAULT_GOAL := help

RATE ?= 1g
RTT ?= 98
LOSS ?= 0
MTU ?= 9000
DURATION ?= 15
INVENTORY ?=
N ?= 20
CONNECTION ?= ssh
SIZE ?= 2g
STREAMS ?= 4
SSH_STREAMS ?= 8
MIGRATE_SIZE ?= 3g
SMALL_FILES ?= 0

.PHONY: help setup image ee vm-image demo test check lint sanity units molecule transport-test host-test lab-test ee-test jumbo-test vm-test benchmark transfer migrate docs changelog fleet-bench clean

help:
	@echo "make demo [RATE=1g RTT=98 LOSS=0 MTU=9000 DURATION=15] [INVENTORY=path]"
	@echo "                                            set up, then show before/after tuning over the lab link (or tune your inventory)"
	@echo "make test                                    set up, then run every check CI runs"
	@echo "make check                                   the inner loop: lint, docs and changelog checks, unit tests (minutes)"
	@echo "make lint | sanity | units | molecule | transport-test | host-test | lab-test | ee-test | jumbo-test | vm-test"
	@echo "                                            one part of the tests"
	@echo "make benchmark [BENCH_ARGS=--quick]        the WAN-lab scenario matrix: docs/benchmarks.md, JSON and PNG"
	@echo "make transfer [RATE=1g RTT=98 LOSS=0 MTU=9000 SIZE=2g STREAMS=4 SSH_STREAMS=8]"
	@echo "                                            scp, rsync over SSH (1 and SSH_STREAMS streams), the rsync daemon in cleartext"
	@echo "                                            and over TLS (1 and STREAMS streams), HPN-SSH: stock vs tuned"
	@echo "make migrate [RATE=1g RTT=98 LOSS=0 MTU=9000 MIGRATE_SIZE=3g STREAMS=4 SMALL_FILES=0]"
	@echo "                                            playbooks/migrate.yml over TLS on a mixed tree, 1 stream and STREAMS,"
	@echo "                                            passes to a cut-over; SMALL_FILES files of 4 kB"
	@echo "make ee                                      build the execution environment localhost/bdp-wan-tune-ee:latest (AWX, ansible-runner)"
	@echo "make docs                                    regenerate docs/reference/ (roles, modules, filters) from their docs"
	@echo "make changelog                               regenerate CHANGELOG.rst from changelogs/changelog.yaml"
	@echo "make fleet-bench [N=20 CONNECTION=ssh|podman]  no-op re-run of wan_tune.yml against ansible -m setup on N containers"

setup:
	@bash scripts/setup.sh

image: setup
	@bash scripts/build-image.sh

ee: image
	@bash scripts/build-ee.sh

vm-image: setup
	@bash scripts/build-vm.sh

demo: setup
	@RATE='$(RATE)' RTT='$(RTT)' LOSS='$(LOSS)' MTU='$(MTU)' DURATION='$(DURATION)' INVENTORY='$(INVENTORY)' \
		bash scripts/demo.sh

test: image
	@bash scripts/test.sh all

check: setup
	@bash scripts/test.sh check

lint: setup
	@bash scripts/test.sh lint

sanity: setup
	@bash scripts/test.sh sanity

units: setup
	@bash scripts/test.sh units

molecule: image
	@bash scripts/test.sh molecule

transport-test: image
	@bash scripts/test.sh transports

host-test: setup
	@bash scripts/test.sh host

lab-test: image
	@bash scripts/test.sh lab

ee-test: image
	@bash scripts/test.sh ee

jumbo-test: image
	@bash scripts/test.sh jumbo

vm-test: vm-image
	@bash scripts/test.sh vm

benchmark: setup
	@bash -c '. scripts/env.sh && python tests/lab/benchmark.py $(BENCH_ARGS)'

transfer: image
	@bash -c '. scripts/env.sh && python tests/lab/transfer.py --rate "$(RATE)" --rtt "$(RTT)" --loss "$(LOSS)" \
		--mtu "$(MTU)" --size "$(SIZE)" --streams "$(STREAMS)"'

migrate: image
	@bash -c '. scripts/env.sh && python tests/lab/migrate.py --rate "$(RATE)" --rtt "$(RTT)" --loss "$(LOSS)" \
		--mtu "$(MTU)" --size "$(MIGRATE_SIZE)" --streams "$(STREAMS)" --small-files "$(SMALL_FILES)"'

docs: setup
	@bash scripts/docs.sh

changelog: setup
	@bash scripts/changelog.sh

# Not part of `make test`: N systemd containers, forks N (docs/fleet.md, docs/benchmarks.md).
fleet-bench: image
	@bash -c '. scripts/env.sh && python tests/fleet/bench.py -n $(N) --connection $(CONNECTION)'

clean:
	rm -rf tests/output .pytest_cache
