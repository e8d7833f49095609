// The commit a binary is built from, without running git and without a SwiftPM plugin: Package.swift finds the git
// directory when it is evaluated and passes the paths of HEAD, of the branch's loose ref and of packed-refs as
// defines; this file embeds their text (#embed) when it is compiled. SwiftPM caches the manifest, so the paths may be
// as old as the last evaluation, but the contents are read at every compile, and clang lists embedded files in the
// dependency file, so a commit (which rewrites the ref) recompiles this file. A file that disappeared (refs packed
// by git gc) is skipped by __has_embed rather than failing the build; BuildInfo then falls back to packed-refs. A
// compiler without #embed (clang before 19) builds it too, reporting no commit.
#include "CBuildInfo.h"

#pragma clang diagnostic ignored "-Wc23-extensions"

#if defined(__has_embed) && defined(BUILDINFO_GIT_HEAD_FILE)
#if __has_embed(BUILDINFO_GIT_HEAD_FILE)
#define BUILDINFO_HAS_HEAD
#endif
#endif
#ifdef BUILDINFO_HAS_HEAD
static const char head[] = {
#embed BUILDINFO_GIT_HEAD_FILE suffix(,)
    0};
#else
static const char head[] = "";
#endif

#if defined(__has_embed) && defined(BUILDINFO_GIT_LOOSE_REF_FILE)
#if __has_embed(BUILDINFO_GIT_LOOSE_REF_FILE)
#define BUILDINFO_HAS_LOOSE_REF
#endif
#endif
#ifdef BUILDINFO_HAS_LOOSE_REF
static const char loose_ref[] = {
#embed BUILDINFO_GIT_LOOSE_REF_FILE suffix(,)
    0};
#else
static const char loose_ref[] = "";
#endif

#if defined(__has_embed) && defined(BUILDINFO_GIT_PACKED_REFS_FILE)
#if __has_embed(BUILDINFO_GIT_PACKED_REFS_FILE)
#define BUILDINFO_HAS_PACKED_REFS
#endif
#endif
#ifdef BUILDINFO_HAS_PACKED_REFS
static const char packed_refs[] = {
#embed BUILDINFO_GIT_PACKED_REFS_FILE suffix(,)
    0};
#else
static const char packed_refs[] = "";
#endif

#ifdef BUILDINFO_GIT_REF_NAME
static const char ref_name[] = BUILDINFO_GIT_REF_NAME;
#else
static const char ref_name[] = "";
#endif

const char *paypipe_build_git_head(void) { return head; }
const char *paypipe_build_git_ref_name(void) { return ref_name; }
const char *paypipe_build_git_loose_ref(void) { return loose_ref; }
const char *paypipe_build_git_packed_refs(void) { return packed_refs; }
