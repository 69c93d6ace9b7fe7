// sd-bus from Debian's libsystemd-dev: the D-Bus client the ble plugin talks to BlueZ with.
// Only the non-variadic entry points are used (Swift cannot call C varargs functions).
#include <systemd/sd-bus.h>
// The wake-up of the connection's loop thread (not exported by the Glibc module).
#include <sys/eventfd.h>
