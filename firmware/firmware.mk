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
fw_out = $(FW_BUILD)/$(1)/$(2)/$(3)$(if $(4),-$(4))

# $(call fw_build,rtos,board,app,variant,opts)
define fw_build
	cmake -S $(FW_DIR) -B $(call fw_out,$(2),$(1),$(3),$(4)) -G Ninja -DCMAKE_BUILD_TYPE= \
	  -DRTOS=$(1) -DBOARD=$(2) -DAPP=$(3) -DVARIANT=$(4) $(5) $(FW_DEP_ARGS) -Wno-dev --log-level=WARNING
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
	$(call fw_build,$(RTOS),$(BOARD),$(APP),$(VARIANT),$(OPTS))
	@echo "built $(call fw_out,$(BOARD),$(RTOS),$(APP),$(VARIANT))/ct.elf"

.PHONY: firmware ## build every RTOS x board x app image whose sources are available (+ variants)
firmware:
	@echo "RTOSes available: $(FW_RTOSES)"
	@set -e; for b in $(FW_BOARDS); do \
	  for a in calib isr_latency; do $(MAKE) --no-print-directory fw RTOS=baremetal BOARD=$$b APP=$$a; done; \
	  for r in $(filter-out baremetal,$(FW_RTOSES)); do \
	    for a in calib $(FW_APPS); do $(MAKE) --no-print-directory fw RTOS=$$r BOARD=$$b APP=$$a; done; \
	    for a in ctx_switch isr_latency fft_workload; do \
	      $(MAKE) --no-print-directory fw RTOS=$$r BOARD=$$b APP=$$a VARIANT=untraced OPTS=-DCT_TRACE=0; done; \
	    for n in 5 10; do \
	      $(MAKE) --no-print-directory fw RTOS=$$r BOARD=$$b APP=ctx_switch VARIANT=n$$n OPTS=-DCT_NTASKS=$$n; done; \
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

.PHONY: fw-ci ## CI: bare-metal images for both boards, boot the QEMU one to its sentinel, host tests
fw-ci:
	@set -e; for b in $(FW_BOARDS); do for a in calib isr_latency; do \
	  $(MAKE) --no-print-directory fw RTOS=baremetal BOARD=$$b APP=$$a; done; done
	$(MAKE) --no-print-directory qemu-smoke SMOKE_DIR=$(FW_BUILD)/qemu_netduinoplus2/baremetal
	CT_FW_BUILD=$(abspath $(FW_BUILD)) $(PY) -m pytest -q tests/firmware; rc=$$?; \
	  if [ $$rc -eq 5 ]; then echo "pytest collected no tests"; exit 1; fi; exit $$rc
