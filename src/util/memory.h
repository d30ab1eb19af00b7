// Peak resident memory of this process image (VmHWM): unlike getrusage's ru_maxrss, it starts fresh at
// exec, so a child spawned from a large parent reports its own peak.
#pragma once

namespace repoctx {

double peak_rss_mb();
double current_rss_mb();  // resident memory now (VmRSS)

}  // namespace repoctx
