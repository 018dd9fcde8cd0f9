package main

import (
	"log/slog"
	"os"

	"github.com/bytedance/gopkg/util/gctuner"
)

// gcHeapTarget is the heap size the GC's trigger is steered towards.
const gcHeapTarget = 64 << 20

// tuneGC sets GOGC after every collection from the heap in use, so that the next collection
// comes near 64 MiB: (64 MiB − in use) / in use, between 50 and 500 (bytedance/gopkg's gctuner,
// with its bounds). A connector's live heap is a few MiB until thousands of streams are open,
// while each turn allocates tens of KiB: with GOGC=100 and the runtime's 4 MiB floor the GC ran
// about a dozen times a second at c=100 and took ~8 % of the connector's CPU; now GOGC is 500
// there. From ~21 MiB in use it is below 100, and 50 from ~43 MiB: a large heap (10,000 open
// streams) is collected more often than the default would, which keeps its peak lower. The
// container's memory limit (memlimit) still caps the heap in every case. GOGC set by the
// operator wins: then nothing is tuned.
//
// main calls it once per process, for serve only: chat is a client, and its output is the chat
// alone, without this log line.
func tuneGC(log *slog.Logger) {
	if v, ok := os.LookupEnv("GOGC"); ok {
		log.Info("GOGC is set: the GC is not tuned", slog.String("GOGC", v))
		return
	}
	gctuner.Tuning(gcHeapTarget)
	log.Info("GOGC follows the heap: 500 for a small heap, 100 at ~21 MiB in use, 50 from ~43 MiB")
}
