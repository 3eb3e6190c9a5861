# Zephyr firmware targets (included by the top Makefile after firmware/firmware.mk).
#   make fw-zephyr APP=ctx_switch BOARD=qemu_netduinoplus2 [VARIANT=n5] [OPTS="-DCT_NTASKS=5 -DCT_ZEPHYR_TRACE=ctf"]
# builds firmware/build/<board>/zephyr/<app>[-<variant>]/ct.elf (+ build.json, ct.map) from Zephyr 4.3 in
# $(ZEPHYR_WS) = $(CT_DEPS_DIR)/zephyrproject (offline: ../shared/deps extracted there; online:
# `make zephyr-fetch`, pinned to v4.3.0 and the module revisions of its west.yml). Options: firmware/README.md.
FW_DIR ?= firmware
FW_BUILD ?= $(FW_DIR)/build
CT_DEPS_DIR ?= $(FW_DIR)/third_party
ZEPHYR_WS ?= $(CT_DEPS_DIR)/zephyrproject
ZEPHYR_VERSION := v4.3.0
ZEPHYR_MODULE_DIRS = $(abspath $(ZEPHYR_WS))/modules/hal/cmsis_6;$(abspath $(ZEPHYR_WS))/modules/hal/stm32;$(abspath $(ZEPHYR_WS))/modules/debug/segger
ZEPHYR_ENV = env -u BOARD ZEPHYR_BASE=$(abspath $(ZEPHYR_WS))/zephyr ZEPHYR_TOOLCHAIN_VARIANT=gnuarmemb \
  GNUARMEMB_TOOLCHAIN_PATH=$(or $(GNUARMEMB_TOOLCHAIN_PATH),/usr)
ZEPHYR_PY ?= $(abspath $(or $(PY),python3))
ZEPHYR_APPS := calib ctx_switch periodic isr_latency fft_workload
zfw_out = $(FW_BUILD)/$(1)/zephyr/$(2)$(if $(3),-$(3))
# Thread-Metric apps (tm_*) take the upstream test sources from the pinned ThreadX tree, as `make fw` does:
# $(CT_DEPS_DIR)/threadx when it exists (otherwise thread_metric.cmake fetches it, online)
zfw_tm_args = $(if $(filter tm_%,$(1)),$(if $(wildcard $(CT_DEPS_DIR)/threadx),-DFETCHCONTENT_SOURCE_DIR_THREADX=$(abspath $(CT_DEPS_DIR)/threadx)))
# RTOSBench (apps/rtosbench): the upstream tests from $(CT_DEPS_DIR)/RTOSBench
zfw_tm_args += $(if $(filter rtosbench,$(1)),$(if $(wildcard $(CT_DEPS_DIR)/RTOSBench),-DFETCHCONTENT_SOURCE_DIR_RTOSBENCH=$(abspath $(CT_DEPS_DIR)/RTOSBench)))

# A build folder is keyed by its configure line (as fw_build in firmware/firmware.mk): -D options persist in
# the CMake cache, so a folder whose recorded line (<build>/ct-configure.args) differs is configured afresh.
zfw_cfg = -DCT_BOARD=$(1) -DAPP=$(2) -DVARIANT=$(3) $(4) -DBUILD_VERSION=$(ZEPHYR_VERSION)
# $(call zfw_build,board,app,variant,opts). BOARD is removed from the environment: make exports it, and
# Zephyr would take it for its own board name (the crosstrace -> Zephyr board map is in CMakeLists.txt).
define zfw_build
	@test -f $(ZEPHYR_WS)/zephyr/VERSION || { echo "Zephyr sources not found in $(ZEPHYR_WS): extract ../shared/deps \
	  (extract.sh DIR, then CT_DEPS_DIR=DIR) or run 'make zephyr-fetch' (online)"; exit 1; }
	@out='$(call zfw_out,$(1),$(2),$(3))'; args='$(strip $(call zfw_cfg,$(1),$(2),$(3),$(4)))'; \
	  fresh=; if [ -f "$$out/CMakeCache.txt" ] && [ "$$(cat "$$out/ct-configure.args" 2>/dev/null)" != "$$args" ]; \
	  then fresh=--fresh; echo "$$out: options changed, configuring afresh"; fi; \
	  set -x; $(ZEPHYR_ENV) nice cmake $$fresh -S $(FW_DIR)/zephyr -B "$$out" -G Ninja $$args \
	  -DZEPHYR_MODULES="$(ZEPHYR_MODULE_DIRS)" $(call zfw_tm_args,$(2)) -DPython3_EXECUTABLE=$(ZEPHYR_PY) -Wno-dev --log-level=WARNING && \
	  { set +x; } 2>/dev/null && printf '%s\n' "$$args" > "$$out/ct-configure.args"
	$(ZEPHYR_ENV) nice cmake --build $(call zfw_out,$(1),$(2),$(3)) -- -j2
	cp $(call zfw_out,$(1),$(2),$(3))/zephyr/zephyr.elf $(call zfw_out,$(1),$(2),$(3))/ct.elf
	cp $(call zfw_out,$(1),$(2),$(3))/zephyr/zephyr.map $(call zfw_out,$(1),$(2),$(3))/ct.map
endef

.PHONY: fw-zephyr ## build one Zephyr image: APP=.. BOARD=.. [VARIANT=..] [OPTS="-DCT_ZEPHYR_TRACE=ctf -DCT_ZEPHYR_MPU=1"]
fw-zephyr:
	$(call zfw_build,$(BOARD),$(APP),$(VARIANT),$(OPTS))
	@echo "built $(call zfw_out,$(BOARD),$(APP),$(VARIANT))/ct.elf"

.PHONY: firmware-zephyr ## every Zephyr image of the comparison for both boards (SystemView, CTF, untraced, MPU)
firmware-zephyr:
	@set -e; for b in qemu_netduinoplus2 stm32f429i_disco; do \
	  for a in $(ZEPHYR_APPS); do $(MAKE) --no-print-directory fw-zephyr BOARD=$$b APP=$$a; done; \
	  for a in ctx_switch isr_latency; do \
	    $(MAKE) --no-print-directory fw-zephyr BOARD=$$b APP=$$a VARIANT=ctf OPTS=-DCT_ZEPHYR_TRACE=ctf; \
	    $(MAKE) --no-print-directory fw-zephyr BOARD=$$b APP=$$a VARIANT=untraced OPTS=-DCT_TRACE=0; \
	    $(MAKE) --no-print-directory fw-zephyr BOARD=$$b APP=$$a VARIANT=mpu-untraced \
	      OPTS="-DCT_TRACE=0 -DCT_ZEPHYR_MPU=1"; done; \
	  for n in 5 10; do \
	    $(MAKE) --no-print-directory fw-zephyr BOARD=$$b APP=ctx_switch VARIANT=n$$n OPTS=-DCT_NTASKS=$$n; done; \
	  $(MAKE) --no-print-directory fw-zephyr BOARD=$$b APP=periodic VARIANT=load OPTS=-DCT_LOAD=1; \
	done

.PHONY: zephyr-fetch ## online: Zephyr v4.3.0 + cmsis_6, hal_stm32, segger (west, pinned by Zephyr's west.yml) into ZEPHYR_WS
zephyr-fetch:
	@command -v west >/dev/null || { echo "west is required: pip install -e '.[zephyr]'"; exit 1; }
	test -d $(ZEPHYR_WS)/.west || west init -m https://github.com/zephyrproject-rtos/zephyr --mr $(ZEPHYR_VERSION) $(ZEPHYR_WS)
	cd $(ZEPHYR_WS) && west update --narrow --fetch-opt=--depth=1 cmsis_6 hal_stm32 segger

# CI (`make ci`, after fw-ci; .ci/run exports CT_DEPS_DIR with ../shared/deps extracted): the Zephyr images
# from CT_DEPS_DIR/zephyrproject with zero compiler warnings (Zephyr's own sources included): every app on
# QEMU with SystemView, CTF and the MPU stack guard once each, Thread-Metric twice (tm_interrupt with SystemView:
# the porting layer, the upstream test from $(CT_DEPS_DIR)/threadx and the TIM5 path; tm_cooperative untraced
# with the stack guard and time slicing on), and the STM32F429 Discovery build; then every QEMU image booted
# to its CT_DONE sentinel. The Zephyr captures are rebuilt (elf_sha256) and one is
# recorded again bit for bit by tests/firmware/test_reproduce_lines.py in `make test-all`.
ZFW_CI_LOG ?= $(FW_BUILD)/ci-zephyr.log
# images built at once, each in its own folder (the builds are mostly CPU-bound: 2 at a time took
# 219 s for the 9 images where one at a time took 230 s)
ZFW_CI_JOBS ?= 2
ZFW_CI_QEMU := $(FW_BUILD)/qemu_netduinoplus2/zephyr
.PHONY: fw-ci-zephyr ## CI: the Zephyr images (QEMU: every app, CTF, MPU, two Thread-Metric; F429) with zero warnings, QEMU ones booted to CT_DONE
fw-ci-zephyr:
	@mkdir -p $(FW_BUILD)
	@set -o pipefail; t0=$$(date +%s); \
	  { for a in $(ZEPHYR_APPS); do echo "BOARD=qemu_netduinoplus2 APP=$$a"; done; \
	    echo 'BOARD=qemu_netduinoplus2 APP=ctx_switch VARIANT=n2-ctf "OPTS=-DCT_NTASKS=2 -DCT_ZEPHYR_TRACE=ctf"'; \
	    echo 'BOARD=qemu_netduinoplus2 APP=isr_latency VARIANT=mpu OPTS=-DCT_ZEPHYR_MPU=1'; \
	    echo 'BOARD=qemu_netduinoplus2 APP=tm_interrupt'; \
	    echo 'BOARD=qemu_netduinoplus2 APP=tm_cooperative VARIANT=mpu-timeslice-untraced "OPTS=-DCT_TRACE=0 -DCT_ZEPHYR_MPU=1 -DCT_ZEPHYR_TIMESLICING=1"'; \
	    echo 'BOARD=stm32f429i_disco APP=ctx_switch'; \
	    echo 'BOARD=stm32f429i_disco APP=isr_latency VARIANT=ctf OPTS=-DCT_ZEPHYR_TRACE=ctf'; \
	  } | xargs -P $(ZFW_CI_JOBS) -L 1 $(MAKE) --no-print-directory fw-zephyr 2>&1 | tee $(ZFW_CI_LOG) | grep -E '^built'; rc=$$?; \
	  n=$$(grep -c '^built ' $(ZFW_CI_LOG)); w=$$(grep -ciE 'warning:' $(ZFW_CI_LOG) || true); \
	  echo "fw-ci-zephyr: $$n Zephyr images built in $$(( $$(date +%s) - t0 )) s ($(ZFW_CI_JOBS) at a time), $$w warnings"; \
	  if [ "$$rc" != 0 ]; then grep -A2 -E 'error:|CMake Error|Error [0-9]|^make.*\*\*\*' $(ZFW_CI_LOG) | head -30; echo "fw-ci-zephyr: a build failed"; exit 1; fi; \
	  if [ "$$w" != 0 ]; then grep -iE 'warning:' $(ZFW_CI_LOG) | head -20; exit 1; fi
	$(ZEPHYR_PY) -m tests.firmware.qemu_smoke $(foreach d,calib ctx_switch periodic isr_latency fft_workload ctx_switch-n2-ctf isr_latency-mpu tm_interrupt tm_cooperative-mpu-timeslice-untraced,$(ZFW_CI_QEMU)/$(d)/ct.elf)
