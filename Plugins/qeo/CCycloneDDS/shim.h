// Eclipse Cyclone DDS 0.10 (Debian's cyclonedds-dev) for Swift: the public C API.
#include <dds/dds.h>
