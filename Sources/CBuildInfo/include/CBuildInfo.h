#ifndef CBUILDINFO_H
#define CBUILDINFO_H

// The git files that name the commit a binary is built from, embedded at compile time (build_info.c). Each is the
// file's text, or "" when the package was not built from a git checkout (WorkerRuntime's BuildInfo reads them).
const char *paypipe_build_git_head(void);
const char *paypipe_build_git_ref_name(void);
const char *paypipe_build_git_loose_ref(void);
const char *paypipe_build_git_packed_refs(void);

#endif
