#ifndef PAYPIPE_PROCESS_SHIM_H
#define PAYPIPE_PROCESS_SHIM_H

/// prctl(PR_SET_DUMPABLE, dumpable): 0 makes the process non-dumpable (no core file, no ptrace by other users,
/// /proc/<pid>/mem and environ root-only). Returns prctl's result (0, or -1 with errno).
int paypipe_prctl_set_dumpable(int dumpable);

/// prctl(PR_GET_DUMPABLE): 0 or 1 (or -1).
int paypipe_prctl_get_dumpable(void);

#endif
