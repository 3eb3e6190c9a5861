# Virtual logic analyzer (QEMU TCG plugin) and one-command paired captures; included by the top Makefile.
# Folder convention and run.json: captures/README.md. Plugin and converter: firmware/tools/vla/README.md.
VLA_SO ?= firmware/build/vla/vla.so
VLA_CC ?= gcc
LA ?= ideal,la100
RUN_ID ?=
CAPTURE_OUT ?= captures

$(VLA_SO): firmware/tools/vla/vla.c
	@mkdir -p $(@D)
	$(VLA_CC) -O2 -Wall -Wextra -shared -fPIC -fvisibility=hidden -o $@ $<

.PHONY: vla ## build the QEMU virtual-logic-analyzer plugin (firmware/build/vla/vla.so)
vla: $(VLA_SO)

# `make capture` and `make campaign` set up the venv (and, as root, the Debian packages) themselves.
# --opts=/--variant= are passed with `=` so that a value starting with "-" (OPTS='-DCT_NTASKS=2') is not
# taken for an option. QEMU_SHIFT: -icount shift (2**S ns per instruction; 3 = board speed).
CAPTURE_TIMEOUT ?= 300
.PHONY: capture ## paired trace + logic capture in QEMU: RTOS=freertos APP=ctx_switch [OPTS='K=V' VARIANT=n5 LA=ideal,la100 QEMU_SHIFT=0 RUN_ID=..]
capture: setup $(VLA_SO)
	@test -n "$(RTOS)" -a -n "$(APP)" || { echo "usage: make capture RTOS=<rtos> APP=<app> [OPTS='K=V ..'] [VARIANT=..] [LA=ideal,la100] [QEMU_SHIFT=0] [RUN_ID=..]"; exit 2; }
	VLA_PLUGIN=$(abspath $(VLA_SO)) FW_BUILD=$(abspath $(or $(FW_BUILD),firmware/build)) $(PY) firmware/tools/capture.py run --rtos=$(RTOS) --app=$(APP) --opts="$(OPTS)" \
	  --variant="$(VARIANT)" --la=$(LA) --shift=$(QEMU_SHIFT) --timeout=$(CAPTURE_TIMEOUT) --out=$(CAPTURE_OUT) $(if $(RUN_ID),--run-id=$(RUN_ID))

.PHONY: campaign ## rerun the reference campaign matrix (captures/campaign.toml) into captures/ [ONLY="<rtos> or <rtos>/<app-dir>[/<run-id>] .."] [CAMPAIGN=<file>]
campaign: setup $(VLA_SO)
	VLA_PLUGIN=$(abspath $(VLA_SO)) FW_BUILD=$(abspath $(or $(FW_BUILD),firmware/build)) $(PY) firmware/tools/capture.py campaign --out=$(CAPTURE_OUT) $(if $(CAMPAIGN),--campaign=$(CAMPAIGN)) $(foreach o,$(ONLY),--only=$(o))

.PHONY: captures-verify ## check that every captures/**/run.json matches its files' sha256
captures-verify:
	$(PY) firmware/tools/capture.py verify $(CAPTURE_OUT)
