/* The ABI is the header; this file only makes the header a buildable C target. */
#include "switchyard_plugin.h"

/* Lets a C plugin author check which header a build used. */
const uint32_t switchyard_abi_header_version = SY_ABI_VERSION_1;
