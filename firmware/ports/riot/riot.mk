# RIOT firmware targets (included by the top Makefile after firmware/firmware.mk).
#   make fw-riot APP=ctx_switch BOARD=qemu_netduinoplus2 [VARIANT=n5] [OPTS="-DCT_NTASKS=5"]
# builds firmware/build/<board>/riot/<app>[-<variant>]/ct.elf (+ build.json, ct.map) with RIOT's own make
# (the RIOT application is ports/riot/Makefile) from $(CT_DEPS_DIR)/RIOT and $(CT_DEPS_DIR)/RIOT-pkgs
# (../shared/deps extracted; RIOT needs make, python3, git and patch). Options: firmware/README.md "RIOT".
FW_DIR ?= firmware
FW_BUILD ?= $(FW_DIR)/build
CT_DEPS_DIR ?= $(FW_DIR)/third_party
RIOT_APPS := calib ctx_switch periodic isr_latency fft_workload
# RIOT's own make runs in a clean environment (none of this make's variables or job server), RFW_JOBS at a time
RFW_JOBS ?= 2
rfw_out = $(abspath $(FW_BUILD))/$(1)/riot/$(2)$(if $(3),-$(3))

# $(call rfw_build,board,app,variant,opts): RIOT's BOARD is set by ports/riot/Makefile from CT_BOARD; a
# board's images share one RIOT build folder (riot/_riot), so builds of one board wait for each other (flock)
define rfw_build
	@test -f $(CT_DEPS_DIR)/RIOT/VERSION || { echo "RIOT sources not found in $(CT_DEPS_DIR)/RIOT: extract \
	  ../shared/deps (extract.sh DIR, then CT_DEPS_DIR=DIR)"; exit 1; }
	@mkdir -p $(call rfw_out,$(1),_riot)
	@# RIOT's dependency files name the sources' absolute paths: sources extracted elsewhere clear the folder
	@d=$(call rfw_out,$(1),_riot); s=$(abspath $(CT_DEPS_DIR)); \
	  if [ -f $$d/.deps_dir ] && [ "$$(cat $$d/.deps_dir)" != "$$s" ]; then \
	    echo "RIOT sources now in $$s: clearing $$d"; find $$d -mindepth 1 ! -name .lock -delete; fi; \
	  echo "$$s" > $$d/.deps_dir
	flock $(call rfw_out,$(1),_riot)/.lock env -u MAKEFLAGS -u MFLAGS nice $(MAKE) -j$(RFW_JOBS) --no-print-directory \
	  -C $(FW_DIR)/ports/riot all \
	  CT_BOARD=$(1) APP=$(2) VARIANT='$(3)' OPTS='$(4)' CT_OUT=$(call rfw_out,$(1),$(2),$(3)) \
	  CT_DEPS_DIR=$(abspath $(CT_DEPS_DIR))
endef

.PHONY: fw-riot ## build one RIOT image: APP=.. BOARD=.. [VARIANT=..] [OPTS="-DCT_NTASKS=5"]
fw-riot:
	$(call rfw_build,$(BOARD),$(APP),$(VARIANT),$(OPTS))
	@echo "built $(call rfw_out,$(BOARD),$(APP),$(VARIANT))/ct.elf"

.PHONY: firmware-riot ## every RIOT image of the comparison for both boards (the apps, n5/n10, periodic load, untraced)
firmware-riot:
	@set -e; for b in qemu_netduinoplus2 stm32f429i_disco; do \
	  for a in $(RIOT_APPS); do $(MAKE) --no-print-directory fw-riot BOARD=$$b APP=$$a; done; \
	  for n in 5 10; do $(MAKE) --no-print-directory fw-riot BOARD=$$b APP=ctx_switch VARIANT=n$$n OPTS=-DCT_NTASKS=$$n; done; \
	  $(MAKE) --no-print-directory fw-riot BOARD=$$b APP=periodic VARIANT=load OPTS=-DCT_LOAD=1; \
	  for a in ctx_switch isr_latency; do \
	    $(MAKE) --no-print-directory fw-riot BOARD=$$b APP=$$a VARIANT=untraced OPTS=-DCT_TRACE=0; done; \
	done

# CI (`make ci`; .ci/run exports CT_DEPS_DIR with ../shared/deps extracted): every app for both boards with
# zero compiler warnings (RIOT's own sources included; RIOT's "PKG_SOURCE_LOCAL in use" notice is not a
# compiler warning), then the QEMU images booted to CT_DONE. The captures are rebuilt (elf_sha256, sampled)
# and riot/ctx_switch-n2/ref recorded again bit for bit by tests/firmware/test_reproduce_lines.py.
RFW_CI_LOG ?= $(FW_BUILD)/ci-riot.log
.PHONY: fw-ci-riot ## CI: every RIOT app for both boards with zero warnings, the QEMU images booted to CT_DONE
fw-ci-riot:
	@mkdir -p $(FW_BUILD)
	@set -o pipefail; t0=$$(date +%s); \
	  { for b in qemu_netduinoplus2 stm32f429i_disco; do for a in $(RIOT_APPS); do \
	    $(MAKE) --no-print-directory fw-riot BOARD=$$b APP=$$a || exit 1; done; done; } 2>&1 \
	  | tee $(RFW_CI_LOG) | grep -E '^built'; rc=$$?; \
	  n=$$(grep -c '^built ' $(RFW_CI_LOG)); w=$$(grep -iE 'warning' $(RFW_CI_LOG) | grep -vc 'PKG_SOURCE_LOCAL in use' || true); \
	  echo "fw-ci-riot: $$n RIOT images built in $$(( $$(date +%s) - t0 )) s, $$w warnings"; \
	  if [ "$$rc" != 0 ]; then grep -A2 -E 'error|Error [0-9]' $(RFW_CI_LOG) | head -30; echo "fw-ci-riot: a build failed"; exit 1; fi; \
	  if [ "$$w" != 0 ]; then grep -iE 'warning' $(RFW_CI_LOG) | grep -v 'PKG_SOURCE_LOCAL in use' | head -20; exit 1; fi
	$(PY) -m tests.firmware.qemu_smoke $(foreach a,$(RIOT_APPS),$(call rfw_out,qemu_netduinoplus2,$(a))/ct.elf)
