"""crosstrace virtual logic analyzer, host side: edge log -> analyzer profile -> sigrok .sr.

The QEMU TCG plugin (vla.c) writes an exact edge log; ``convert.edge_log_to_sr`` rebuilds the pins
and the UART waveform and writes one .sr per analyzer profile. See README.md in this folder."""
