# QEMU runs are driven by crosstrace's own tooling (firmware/zephyr/zephyr.mk, capture.py).
