/**
 * Preloaded (`--import`) into the test files `run-suite.ts` runs beside the real-node lane: lowers
 * the file's process, and the processes it starts, to nice 10. On two cores the real-node files'
 * nodes (kubelet, containerd, their control planes) are what the run's wall time waits on; the
 * others take the CPU they leave.
 */
import os from "node:os";

/** The niceness the lane runs at (0 is the default, 19 the lowest priority). */
export const OTHERS_NICENESS = 10;

os.setPriority(Math.max(os.getPriority(), OTHERS_NICENESS));
