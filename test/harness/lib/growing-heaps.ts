/**
 * Services whose live heap grows slowly, each in its runtime with the runtime's default heap, for
 * the comparison with the VPA (`vs-vpa-workloads.ts`): Node.js run as `node -e` in memory-scaler's
 * image (Node.js 24), the JVM by OpenJDK 17's source launcher (`npm run image openjdk`) from a
 * ConfigMap. Each grows by `RATE_MIB` MiB a second until it holds `HOLD_MIB`, then stays; each
 * prints the heap limit its runtime chose, then what it holds every 10 s, as
 * `test/support/heap-programs.ts`'s programs do.
 */

/** Node.js: as `heap-programs.ts`'s NODE_HEAP_PROGRAM, at a service's pace. */
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

/** The file name the JVM's program is mounted as (the source launcher needs `.java`). */
export const JAVA_GROWING_HEAP_FILE = "Grow.java";

/** The JVM: as `heap-programs.ts`'s JAVA_HEAP_PROGRAM (64 KiB arrays), at a service's pace. */
export const JAVA_GROWING_HEAP_PROGRAM = `
import java.util.ArrayList;
public class Grow {
  public static void main(String[] args) throws Exception {
    final long MiB = 1L << 20;
    final long hold = Long.parseLong(System.getenv("HOLD_MIB"));
    final double rate = Double.parseDouble(System.getenv("RATE_MIB"));
    System.out.printf("heap limit %.1f MiB%n", Runtime.getRuntime().maxMemory() / (double) MiB);
    final ArrayList<byte[]> kept = new ArrayList<>();
    final long t0 = System.currentTimeMillis();
    long said = 0;
    while (true) {
      final long want = (long) (Math.min(hold, rate * (System.currentTimeMillis() - t0) / 1000.0) * 16);
      while (kept.size() < want) kept.add(new byte[64 << 10]);
      final long now = System.currentTimeMillis();
      if (now - said >= 10000) { System.out.printf("holding %d MiB of heap%n", kept.size() / 16); said = now; }
      Thread.sleep(100);
    }
  }
}
`;
