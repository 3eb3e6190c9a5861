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

# $(call zfw_build,board,app,variant,opts). BOARD is removed from the environment: make exports it, and
# Zephyr would take it for its own board name (the crosstrace -> Zephyr board map is in CMakeLists.txt).
define zfw_build
	@test -f $(ZEPHYR_WS)/zephyr/VERSION || { echo "Zephyr sources not found in $(ZEPHYR_WS): extract ../shared/deps \
	  (extract.sh DIR, then CT_DEPS_DIR=DIR) or run 'make zephyr-fetch' (online)"; exit 1; }
	$(ZEPHYR_ENV) nice cmake -S $(FW_DIR)/zephyr -B $(call zfw_out,$(1),$(2),$(3)) -G Ninja \
	  -DCT_BOARD=$(1) -DAPP=$(2) -DVARIANT=$(3) $(4) -DZEPHYR_MODULES="$(ZEPHYR_MODULE_DIRS)" \
	  -DBUILD_VERSION=$(ZEPHYR_VERSION) -DPython3_EXECUTABLE=$(ZEPHYR_PY) -Wno-dev --log-level=WARNING
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
