# ctx_switch: CT_NTASKS equal-priority tasks yield round-robin, CT_ITERATIONS yields each.
set(CT_APP_OPTIONS "CT_NTASKS=2" "CT_ITERATIONS=200")
