/**
 * The real-node files that hold the run's shared stack together, one beside the other: each keeps
 * to namespaces of its own, and its memory-scaler serves those alone (`WATCH_NAMESPACES`), so one
 * file's alerts and ticks never reach another's AppMonitors. `npm test` runs the files that import
 * this module side by side, on the stack a file lends them (`real-node-lock.ts`, `lendRunStack`),
 * else at the end of its real-node lane (`suite-lanes.ts`). A file that
 * changes what every namespace sees (a webhook on every Pod, an aggregated API, Eventing's fixed
 * `appmonitor` namespace and its memory-scaler serving all namespaces) keeps to
 * `real-node-file.ts` and holds the node alone.
 */
import type { Env } from "../../functions/lib/runtime/types.ts";
import { type ScalerUnderTest, startScaler } from "./memory-scaler.ts";
import { type RealNodeFile, type ScalerOnRealNode, startRealNodeFile, startScalerOnRealNode } from "./real-node-file.ts";

/** memory-scaler's environment that makes it serve `namespaces` alone. */
const serving = (namespaces: readonly string[]): Env => ({ WATCH_NAMESPACES: namespaces.join(",") });

/** {@link startRealNodeFile} beside the run's other such files. */
export function startRealNodeFileAlongside(prefix: string): Promise<RealNodeFile> {
  return startRealNodeFile(prefix, { alongside: true });
}

/**
 * memory-scaler in this process ({@link startScaler}) serving `namespaces` alone; `env` adds variables.
 * @throws Error as {@link startScaler} does.
 */
export function startScalerServing(namespaces: readonly string[], env: Env = {}): Promise<ScalerUnderTest> {
  return startScaler({ ...env, ...serving(namespaces) });
}

/**
 * {@link startScalerOnRealNode} beside the run's other such files, its memory-scaler serving `namespaces` alone.
 * @throws Error as {@link startScalerOnRealNode} does.
 */
export function startScalerOnRealNodeAlongside(prefix: string, namespaces: readonly string[]): Promise<ScalerOnRealNode> {
  return startScalerOnRealNode(prefix, { alongside: true }, serving(namespaces));
}
