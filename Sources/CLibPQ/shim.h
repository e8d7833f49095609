/* Umbrella header for the CLibPQ system library module. */
#include <libpq-fe.h>
