/**
 * A Node.js service whose live heap grows slowly, for the comparison with the VPA
 * (`vs-vpa-workloads.ts`): run as `node -e` in memory-scaler's image (Node.js 24), with its
 * runtime's default heap unless the workload's NODE_OPTIONS sets one.
 */

/**
 * Node.js, as `test/support/heap-programs.ts`'s NODE_HEAP_PROGRAM but a service's slow growth:
 * its live heap grows by `RATE_MIB` MiB a second until `HOLD_MIB`, then stays; it prints the heap
 * limit V8 chose, then what it holds every 10 s.
 */
export const NODE_GROWING_HEAP_PROGRAM = `
const MiB = 2 ** 20, hold = Number(process.env.HOLD_MIB), rate = Number(process.env.RATE_MIB), t0 = Date.now();
console.log("heap limit " + (require("v8").getHeapStatistics().heap_size_limit / MiB).toFixed(1) + " MiB");
const kept = [];
let said = 0;
const grow = () => {
  const want = Math.min(hold, (rate * (Date.now() - t0)) / 1000);
  while (process.memoryUsage().heapUsed / MiB < want) for (let i = 0; i < 5000; i++) kept.push({ s: String(Math.random()).repeat(8) });
  if (Date.now() - said >= 10000) { console.log("holding " + (process.memoryUsage().heapUsed / MiB).toFixed(0) + " MiB of heap"); said = Date.now(); }
  setTimeout(grow, 100);
};
grow();
`;
