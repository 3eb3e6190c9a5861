# Firmware targets (included by the top Makefile). firmware/README.md explains options and outputs.
#   make fw RTOS=freertos BOARD=qemu_netduinoplus2 APP=ctx_switch [VARIANT=n5] [OPTS="-DCT_NTASKS=5"]
# builds firmware/build/<board>/<rtos>/<app>[-<variant>]/ct.elf (+ build.json). Third-party sources
# (FreeRTOS-Kernel, SEGGER SystemView/RTT, ThreadX) come from FetchContent at pinned commits, or from
# $(CT_DEPS_DIR)/<name> when that directory exists (FreeRTOS-Kernel, segger, threadx).
FW_DIR := firmware
FW_BUILD ?= $(FW_DIR)/build
CT_DEPS_DIR ?= $(FW_DIR)/third_party
RTOS ?= baremetal
BOARD ?= qemu_netduinoplus2
APP ?= calib
VARIANT ?=
OPTS ?=
QEMU ?= qemu-system-arm
QEMU_SHIFT ?= 0
QEMU_TIMEOUT ?= 120
QEMU_FLAGS = -M netduinoplus2 -nographic -monitor none -serial stdio \
  -semihosting-config enable=on,target=native -icount shift=$(QEMU_SHIFT),sleep=off,align=off

fw_dep = $(if $(wildcard $(CT_DEPS_DIR)/$(1)),-DFETCHCONTENT_SOURCE_DIR_$(2)=$(abspath $(CT_DEPS_DIR)/$(1)))
FW_DEP_ARGS = $(call fw_dep,FreeRTOS-Kernel,FREERTOS_KERNEL) $(call fw_dep,segger,SEGGER) \
  $(call fw_dep,threadx,THREADX)
# µC/OS-III and µC/OS-II (ports/ucos3, ports/ucos2) and SEGGER's SystemView glue for them
FW_DEP_ARGS += $(call fw_dep,uC-OS3,UC_OS3) $(call fw_dep,uC-CPU,UC_CPU) $(call fw_dep,uC-LIB,UC_LIB) \
  $(call fw_dep,uC-OS2,UC_OS2) $(call fw_dep,segger-sysview-ucos,SEGGER_SYSVIEW_UCOS)
fw_out = $(FW_BUILD)/$(1)/$(2)/$(3)$(if $(4),-$(4))

# $(call fw_build,rtos,board,app,variant,opts)
# A build folder is keyed by its full configure line: `-D` options persist in a CMake cache, so when the
# line differs from the one recorded in <build>/ct-configure.args the folder is configured afresh (no
# option of an earlier `make fw` survives) and rebuilt. APP=rtosbench also takes RTOSBench's tests from
# $(CT_DEPS_DIR)/RTOSBench (firmware/rtosbench/rtosbench.cmake).
fw_cfg = -DCMAKE_BUILD_TYPE= -DRTOS=$(1) -DBOARD=$(2) -DAPP=$(3) -DVARIANT=$(4) $(5) $(FW_DEP_ARGS) \
  $(if $(filter rtosbench,$(3)),$(call fw_dep,RTOSBench,RTOSBENCH))
define fw_build
	@out='$(call fw_out,$(2),$(1),$(3),$(4))'; args='$(strip $(call fw_cfg,$(1),$(2),$(3),$(4),$(5)))'; \
	  fresh=; if [ -f "$$out/CMakeCache.txt" ] && [ "$$(cat "$$out/ct-configure.args" 2>/dev/null)" != "$$args" ]; \
	  then fresh=--fresh; echo "$$out: options changed, configuring afresh"; fi; \
	  set -x; cmake $$fresh -S $(FW_DIR) -B "$$out" -G Ninja $$args -Wno-dev --log-level=WARNING && \
	  { set +x; } 2>/dev/null && printf '%s\n' "$$args" > "$$out/ct-configure.args"
	cmake --build $(call fw_out,$(2),$(1),$(3),$(4))
endef

FW_BOARDS := qemu_netduinoplus2 stm32f429i_disco
FW_APPS := ctx_switch periodic isr_latency fft_workload
# rtos -> available when its sources are (a local copy in CT_DEPS_DIR, or FW_ONLINE=1 to let FetchContent
# download them); bare-metal needs nothing.
FW_RTOSES := baremetal \
  $(if $(or $(FW_ONLINE),$(wildcard $(CT_DEPS_DIR)/FreeRTOS-Kernel)),freertos) \
  $(if $(and $(wildcard $(FW_DIR)/ports/threadx/port.cmake),$(or $(FW_ONLINE),$(wildcard $(CT_DEPS_DIR)/threadx))),threadx)

.PHONY: fw ## build one firmware image: RTOS=.. BOARD=.. APP=.. [VARIANT=..] [OPTS="-DCT_NTASKS=5"]
fw:
ifeq ($(RTOS),riot)
	@$(MAKE) --no-print-directory fw-riot # RIOT builds with its own make (firmware/ports/riot/riot.mk)
else
	$(call fw_build,$(RTOS),$(BOARD),$(APP),$(VARIANT),$(OPTS))
	@echo "built $(call fw_out,$(BOARD),$(RTOS),$(APP),$(VARIANT))/ct.elf"
endif

# Options that make an image fit its limits: ThreadX's TraceX buffer is a fixed RAM block (no streaming),
# so its fft_workload records no queue-service events (0x40) and its ctx_switch N=10 makes 80 yields per
# task (at 200 both overflow the buffer by design; captures/campaign.toml records the same).
FW_FIT_threadx_fft_workload := -DCT_TX_TRACE_FILTER=0x40
FW_FIT_threadx_n10 := -DCT_ITERATIONS=80

.PHONY: firmware ## build every RTOS x board x app image whose sources are available (+ variants)
firmware:
	@echo "RTOSes available: $(FW_RTOSES)"
	@set -e; for b in $(FW_BOARDS); do \
	  for a in calib isr_latency; do $(MAKE) --no-print-directory fw RTOS=baremetal BOARD=$$b APP=$$a; done; \
	  for r in $(filter-out baremetal,$(FW_RTOSES)); do \
	    for a in calib $(FW_APPS); do $(MAKE) --no-print-directory fw RTOS=$$r BOARD=$$b APP=$$a \
	      OPTS="$$([ $$r.$$a = threadx.fft_workload ] && echo '$(FW_FIT_threadx_fft_workload)')"; done; \
	    for a in ctx_switch isr_latency fft_workload; do \
	      $(MAKE) --no-print-directory fw RTOS=$$r BOARD=$$b APP=$$a VARIANT=untraced OPTS=-DCT_TRACE=0; done; \
	    for n in 5 10; do \
	      $(MAKE) --no-print-directory fw RTOS=$$r BOARD=$$b APP=ctx_switch VARIANT=n$$n \
	        OPTS="-DCT_NTASKS=$$n $$([ $$r.$$n = threadx.10 ] && echo '$(FW_FIT_threadx_n10)')"; done; \
	    $(MAKE) --no-print-directory fw RTOS=$$r BOARD=$$b APP=periodic VARIANT=load OPTS=-DCT_LOAD=1; \
	  done; \
	done

.PHONY: qemu-run ## run one QEMU image in its build folder: RTOS=.. APP=.. [VARIANT=..] (trace file lands there)
qemu-run:
	cd $(call fw_out,qemu_netduinoplus2,$(RTOS),$(APP),$(VARIANT)) && \
	  timeout $(QEMU_TIMEOUT) $(QEMU) $(QEMU_FLAGS) -kernel ct.elf | tee uart.log

SMOKE_DIR ?= $(FW_BUILD)/qemu_netduinoplus2
SMOKE_REPEAT ?= 1
.PHONY: qemu-smoke ## boot every built QEMU image (SMOKE_DIR) and check CT_DONE; SMOKE_REPEAT=2 checks determinism
qemu-smoke:
	$(PY) -m tests.firmware.qemu_smoke --repeat $(SMOKE_REPEAT) $(SMOKE_DIR)

.PHONY: fw-host ## compile the RTOS-neutral firmware code with the host gcc and test it
fw-host:
	$(PY) -m pytest -q tests/firmware/test_host.py tests/firmware/test_console.py tests/firmware/test_elfconfig.py

# CI (.ci/run exports CT_DEPS_DIR with the pinned sources of ../shared/deps): every image of `make
# firmware` for both boards, with zero compiler warnings anywhere (our code also has -Werror), then every
# QEMU image booted to its CT_DONE sentinel. The firmware tests (tests/firmware, with --runslow: RTOS
# images, QEMU runs, captures reproduced bit for bit) run in `make test-all`.
FW_CI_LOG ?= $(FW_BUILD)/ci-build.log
.PHONY: fw-ci ## CI: every RTOS x app image for both boards with zero warnings, each QEMU image booted to CT_DONE
fw-ci:
	@mkdir -p $(FW_BUILD)
	@set -o pipefail; t0=$$(date +%s); \
	  $(MAKE) --no-print-directory firmware FW_BUILD=$(FW_BUILD) 2>&1 | tee $(FW_CI_LOG) | grep -E '^(built|RTOSes)'; \
	  if [ -n "$$CI" ]; then for r in freertos threadx; do echo "$(FW_RTOSES)" | grep -qw $$r || \
	    { echo "fw-ci: $$r sources missing (CT_DEPS_DIR=$(CT_DEPS_DIR)): required in CI"; exit 1; }; done; fi; \
	  n=$$(grep -c '^built ' $(FW_CI_LOG)); w=$$(grep -cE 'warning:' $(FW_CI_LOG) || true); \
	  echo "fw-ci: $$n images built in $$(( $$(date +%s) - t0 )) s, $$w compiler warnings"; \
	  if [ "$$w" != 0 ]; then grep -E 'warning:' $(FW_CI_LOG) | head -20; exit 1; fi
	$(MAKE) --no-print-directory qemu-smoke SMOKE_DIR=$(FW_BUILD)/qemu_netduinoplus2

# µC/OS-III and µC/OS-II (issue 35): every image of theirs for both boards with zero compiler warnings, then
# every QEMU one booted to CT_DONE (fw-ucos, ~6 minutes). CI runs fw-ci-ucos: every app of both kernels for the
# QEMU board, two builds at a time, each booted to CT_DONE (the F429 images: tests/firmware/ucos builds one per
# kernel). µC/OS-II runs one task per priority: no ctx_switch (ports/ucos2/port.cmake).
UCOS_CI_JOBS ?= 2
FW_UCOS_CI_LOG ?= $(FW_BUILD)/ucos-ci-build.log
.PHONY: fw-ci-ucos ## CI: every µC/OS-III and µC/OS-II app for QEMU with zero warnings, each booted to CT_DONE
fw-ci-ucos:
	@mkdir -p $(FW_BUILD)
	@set -o pipefail; t0=$$(date +%s); \
	  { for a in calib ctx_switch periodic isr_latency fft_workload; do echo "RTOS=ucos3 APP=$$a"; done; \
	    for a in calib periodic isr_latency fft_workload; do echo "RTOS=ucos2 APP=$$a"; done; } \
	  | xargs -P $(UCOS_CI_JOBS) -L 1 $(MAKE) --no-print-directory fw BOARD=qemu_netduinoplus2 2>&1 \
	  | tee $(FW_UCOS_CI_LOG) | grep -E '^built'; rc=$$?; \
	  n=$$(grep -c '^built ' $(FW_UCOS_CI_LOG)); w=$$(grep -cE 'warning:' $(FW_UCOS_CI_LOG) || true); \
	  echo "fw-ci-ucos: $$n images built in $$(( $$(date +%s) - t0 )) s ($(UCOS_CI_JOBS) at a time), $$w compiler warnings"; \
	  if [ "$$rc" != 0 ] || [ "$$n" != 9 ]; then grep -A2 -E 'error:|Error [0-9]' $(FW_UCOS_CI_LOG) | head -30; \
	    echo "fw-ci-ucos: a build failed"; exit 1; fi; \
	  if [ "$$w" != 0 ]; then grep -E 'warning:' $(FW_UCOS_CI_LOG) | head -20; exit 1; fi
	$(PY) -m tests.firmware.qemu_smoke $(FW_BUILD)/qemu_netduinoplus2/ucos3 $(FW_BUILD)/qemu_netduinoplus2/ucos2

FW_UCOS_LOG ?= $(FW_BUILD)/ucos-build.log
.PHONY: fw-ucos ## every µC/OS-III and µC/OS-II image for both boards with zero warnings, each QEMU image booted
fw-ucos:
	@mkdir -p $(FW_BUILD)
	@set -o pipefail; t0=$$(date +%s); { set -e; for b in $(FW_BOARDS); do \
	  for r in ucos3 ucos2; do apps="calib periodic isr_latency fft_workload"; untr="isr_latency fft_workload"; \
	    if [ $$r = ucos3 ]; then apps="$$apps ctx_switch"; untr="$$untr ctx_switch"; fi; \
	    for a in $$apps; do $(MAKE) --no-print-directory fw RTOS=$$r BOARD=$$b APP=$$a; done; \
	    for a in $$untr; do $(MAKE) --no-print-directory fw RTOS=$$r BOARD=$$b APP=$$a VARIANT=untraced OPTS=-DCT_TRACE=0; done; \
	    $(MAKE) --no-print-directory fw RTOS=$$r BOARD=$$b APP=periodic VARIANT=load OPTS=-DCT_LOAD=1; \
	    if [ $$r = ucos3 ]; then for n in 5 10; do \
	      $(MAKE) --no-print-directory fw RTOS=$$r BOARD=$$b APP=ctx_switch VARIANT=n$$n OPTS=-DCT_NTASKS=$$n; done; fi; \
	  done; done; } 2>&1 | tee $(FW_UCOS_LOG) | grep -E '^built'; \
	  n=$$(grep -c '^built ' $(FW_UCOS_LOG)); w=$$(grep -cE 'warning:' $(FW_UCOS_LOG) || true); \
	  echo "fw-ucos: $$n images built in $$(( $$(date +%s) - t0 )) s, $$w compiler warnings"; \
	  if [ "$$w" != 0 ]; then grep -E 'warning:' $(FW_UCOS_LOG) | head -20; exit 1; fi
	$(PY) -m tests.firmware.qemu_smoke $(FW_BUILD)/qemu_netduinoplus2/ucos3 $(FW_BUILD)/qemu_netduinoplus2/ucos2
