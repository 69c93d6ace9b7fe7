// libqrencode 4.1 (Debian's libqrencode-dev): QR codes for `switchyard qeo realm otc`.
#include <qrencode.h>
