#ifndef PAYPIPE_CURL_SHIM_H
#define PAYPIPE_CURL_SHIM_H
#include <curl/curl.h>

/* curl_easy_setopt / curl_easy_getinfo are variadic: one forwarder per argument type. */
CURLcode paypipe_curl_setopt_long(CURL *handle, CURLoption option, long value);
CURLcode paypipe_curl_setopt_pointer(CURL *handle, CURLoption option, const void *value);
CURLcode paypipe_curl_setopt_offset(CURL *handle, CURLoption option, curl_off_t value);
CURLcode paypipe_curl_setopt_write_function(CURL *handle, size_t (*fn)(char *, size_t, size_t, void *));
CURLcode paypipe_curl_setopt_header_function(CURL *handle, size_t (*fn)(char *, size_t, size_t, void *));
/* CURLOPT_PREREQFUNCTION (libcurl >= 7.80): called before every request attempt on a connection. */
CURLcode paypipe_curl_setopt_prereq_function(CURL *handle, int (*fn)(void *, char *, char *, int, int));
CURLcode paypipe_curl_getinfo_long(CURL *handle, CURLINFO info, long *value);
CURLcode paypipe_curl_getinfo_double(CURL *handle, CURLINFO info, double *value);
#endif
