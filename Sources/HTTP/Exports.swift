// HTTP's value types (header fields, header-line and Retry-After parsing) live in the pure HTTPTypes module, which the
// fuzz harness links without libcurl or libmicrohttpd; every user of HTTP sees them as before.
@_exported import HTTPTypes
