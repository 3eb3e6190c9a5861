# calib: timestamp-read overhead, site cost, a fixed loop and the FFT-256 cost, without any scheduling.
set(CT_APP_OPTIONS "CT_ITERATIONS=100" "CT_CALIB_LOOP=1000" "CT_FFT_FRAMES=20")
