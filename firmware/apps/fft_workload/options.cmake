# fft_workload: 1 kHz timer-triggered ADC sampling, 256-point FFT per frame, result over UART.
set(CT_APP_OPTIONS "CT_FFT_FRAMES=4" "CT_FFT_TONE_BIN=32")
