# finegrained: the eight fine-grained tests of Belleza & de Freitas 2018 (README.md), one per image.
# CT_FG_TEST: A .. H; CT_FG_BATCHES x CT_FG_SAMPLES measurements per op; CT_FG_ISR_PERIOD_US: test G's TIM5
# period; CT_FG_LOAD_SPIN: test H's load task spins this many loop iterations after each give/take pair.
# CT_PERIOD_FAST_MS: test H's period in ticks (1 kHz tick), the name the periodicity analyzer reads.
set(CT_APP_OPTIONS "CT_FG_TEST=A" "CT_FG_BATCHES=2" "CT_FG_SAMPLES=128" "CT_FG_ISR_PERIOD_US=100"
                   "CT_FG_LOAD_SPIN=2000" "CT_PERIOD_FAST_MS=1")
