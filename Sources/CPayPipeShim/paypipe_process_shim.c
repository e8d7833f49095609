#include "paypipe_process_shim.h"
#include <sys/prctl.h>

int paypipe_prctl_set_dumpable(int dumpable) { return prctl(PR_SET_DUMPABLE, (unsigned long)dumpable, 0UL, 0UL, 0UL); }

int paypipe_prctl_get_dumpable(void) { return prctl(PR_GET_DUMPABLE, 0UL, 0UL, 0UL, 0UL); }
