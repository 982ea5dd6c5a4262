// Programs that run out of their runtime's heap for tests on the real node: each prints the heap
// limit its runtime chose, keeps live objects until it holds `HOLD_MIB` MiB (an environment
// variable), then says so and holds them, so a heap too small for `HOLD_MIB` ends in the
// runtime's own heap error and a large enough one in the line "holding N MiB of heap". memhog, our
// Go program, says the same of the Go runtime (`heap limit N MiB (GOMEMLIMIT)`, `holding N bytes`).

/** Node.js: prints the heap limit V8 chose, keeps live objects until `HOLD_MIB` are held, then holds them (and says so). */
export const NODE_HEAP_PROGRAM = `
const MiB = 2 ** 20, hold = Number(process.env.HOLD_MIB);
console.log("heap limit " + (require("v8").getHeapStatistics().heap_size_limit / MiB).toFixed(1) + " MiB");
const kept = [];
const grow = () => {
  for (let i = 0; i < 5000; i++) kept.push({ s: String(Math.random()).repeat(8) });
  const used = process.memoryUsage().heapUsed / MiB;
  if (used < hold) return setTimeout(grow, 1);
  console.log("holding " + used.toFixed(0) + " MiB of heap");
  setInterval(() => kept.length, 60000);
};
grow();
`;

/** The JVM: the same, with `maxMemory()` and 64 KiB arrays (not 1 MiB: G1 would keep those as humongous objects of two regions each); run by the source launcher from a ConfigMap. */
export const JAVA_HEAP_PROGRAM = `
import java.util.ArrayList;
public class Grow {
  public static void main(String[] args) throws Exception {
    final long MiB = 1L << 20;
    final long hold = Long.parseLong(System.getenv("HOLD_MIB"));
    System.out.printf("heap limit %.1f MiB%n", Runtime.getRuntime().maxMemory() / (double) MiB);
    final ArrayList<byte[]> kept = new ArrayList<>();
    while (kept.size() < hold * 16) { kept.add(new byte[64 << 10]); if (kept.size() % 128 == 0) Thread.sleep(10); }
    System.out.printf("holding %d MiB of heap%n", kept.size() / 16);
    while (true) Thread.sleep(60000);
  }
}
`;

/** The heap limit a program above printed (`heap limit N MiB`), in MiB; undefined when `log` has none. */
export function heapLimit(log: string): number | undefined {
  const m = /heap limit ([0-9.]+) MiB/.exec(log);
  return m === null ? undefined : Number(m[1]);
}

/**
 * The most a program above (`holding N MiB of heap`) or memhog (`memhog: holding N bytes`, its
 * live data in the Go heap) said it holds, in MiB; undefined when `log` says neither.
 */
export function heldMiB(log: string): number | undefined {
  const said = [
    ...[...log.matchAll(/holding ([0-9]+) MiB of heap/g)].map((m) => Number(m[1])),
    ...[...log.matchAll(/memhog: holding ([0-9]+) bytes/g)].map((m) => Number(m[1]) / 2 ** 20),
  ];
  return said.length === 0 ? undefined : Math.max(...said);
}
