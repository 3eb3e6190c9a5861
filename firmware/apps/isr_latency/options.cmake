# isr_latency: TIM5 interrupt every CT_ISR_PERIOD_US gives a semaphore to a waiting priority-1 task.
set(CT_APP_OPTIONS "CT_ITERATIONS=200" "CT_ISR_PERIOD_US=1000")
