# ---- reader fuzzing (issue 15): tools/fuzz/fuzz_readers.py, Rust target trace_parsers/_core/tests ----
FUZZ_SECONDS ?= 600
FUZZ_ARGS ?=
SV_FUZZ_ITERS ?= 1000000

.PHONY: fuzz ## mutation-fuzz every reader for FUZZ_SECONDS (findings: out/fuzz; small ones saved under tests/)
fuzz: $(VENV)/.installed
	nice $(PY) tools/fuzz/fuzz_readers.py --seconds $(FUZZ_SECONDS) --progress 10000 \
		--save-regressions tests/trace_parsers/fuzz_regressions $(FUZZ_ARGS)
	SV_FUZZ_ITERS=$(SV_FUZZ_ITERS) SV_FUZZ_CORPUS=$(CURDIR)/../shared/corpus/systemview nice cargo test -q \
		--release --manifest-path trace_parsers/_core/Cargo.toml --no-default-features \
		--test fuzz_systemview -- --nocapture

.PHONY: fuzz-ci ## the short fixed-budget fuzz run of `make ci` (300 inputs per format, fixed seed)
fuzz-ci: $(VENV)/.installed
	$(PY) tools/fuzz/fuzz_readers.py --inputs 2100 --seed 1 --out out/fuzz-ci
