/* Umbrella header for the CCurl system library module. */
#include <curl/curl.h>
