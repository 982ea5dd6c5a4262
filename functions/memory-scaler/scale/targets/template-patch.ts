// The compare-and-swap JSON Patch that applies a scale decision to a workload's Pod template.
import { LAST_SCALE_ANNOTATION, LAST_SCALE_RECORD_ANNOTATION } from "../../../lib/appmonitor.ts";
import { formatTimestamp } from "../../../lib/rfc3339.ts";
import { type ContainerChange, type ContainerMemory, type JsonPatchOperation, kindOf, listOf } from "../../model.ts";
import type { HeapFlagChange } from "../decide/fixed-heap.ts";
import { type ContainerSpecLike, replaceToken } from "../decide/heap-flags.ts";
import { HEAP_SETTINGS_ANNOTATION, type HeapSetting } from "../decide/heap-settings.ts";

/** What {@link buildTemplatePatch} needs, all as read from the workload just before the write. */
export interface TemplatePatchInput {
  /**
   * `spec.template.spec.containers`, then `initContainers`, each in template order (as
   * `decideScale` takes them): a container's index among those of its list is its index in the
   * patch path.
   */
  templateContainers: readonly ContainerMemory[];
  /** The changes of a `scale` decision (from `decideScale` on the same `templateContainers`). */
  changes: readonly ContainerChange[];
  /** The workload's `metadata.annotations`; `undefined` when it has none. */
  annotations: Readonly<Record<string, string>> | undefined;
  /** Time of the scale, recorded in the last-scale annotation. */
  time: Date;
  /** The workload's `metadata.resourceVersion`; when given, the patch also tests it. */
  resourceVersion?: string;
  /**
   * The value of the last-scale-record annotation (`status/recent-scales.ts` `formatScaleRecord`), written
   * with the scale; absent: not written.
   */
  record?: string;
}

/**
 * Escapes one reference token of a JSON Pointer: `~` → `~0`, `/` → `~1`, so the annotation key
 * `app-monitor.kubedemo.com/last-scale` becomes `app-monitor.kubedemo.com~1last-scale`.
 * Source: https://www.rfc-editor.org/rfc/rfc6901#section-3
 */
export function escapeJsonPointerToken(token: string): string {
  return token.replaceAll("~", "~0").replaceAll("/", "~1");
}

/**
 * Builds the JSON Patch that applies `changes` to a Deployment, StatefulSet, DaemonSet or
 * ReplicaSet (all keep the Pod template at `/spec/template`): a container's resources at
 * `/spec/template/spec/containers/<i>`, a native sidecar's at `…/initContainers/<i>`. It is a
 * compare-and-swap: `test` operations on `metadata.resourceVersion` (if given), each changed
 * container's name, current memory limit and current memory request come before the `replace`
 * operations, so a patch built
 * from stale values fails as a whole (the API server answers 422/409) and two concurrent
 * deliveries can never compound. The same patch sets `app-monitor.kubedemo.com/last-scale` to
 * `time`, adding the `annotations` map when the workload has none (testing that it still has none),
 * and testing the previous value when there is one, and `app-monitor.kubedemo.com/last-scale-record` to `record` when given
 * (testing the previous record too, which names its event: two scales in one second share a time). Sources: DESIGN.md "Decisions that matter for correctness" (compare-and-swap);
 * https://www.rfc-editor.org/rfc/rfc6902 (operations);
 * https://kubernetes.io/docs/tasks/manage-kubernetes-objects/update-api-object-kubectl-patch/
 * @throws {RangeError} when a change names a container not in `templateContainers` or an init
 *   container that is not a native sidecar, when its `from` values differ from the template's, or
 *   when it would add a request the template lacks (`decideScale` never does: a missing request
 *   keeps defaulting to the limit).
 */
export function buildTemplatePatch(input: TemplatePatchInput): JsonPatchOperation[] {
  const ops: JsonPatchOperation[] = [];
  if (input.resourceVersion !== undefined) ops.push({ op: "test", path: "/metadata/resourceVersion", value: input.resourceVersion });
  const writes: JsonPatchOperation[] = [];
  for (const change of input.changes) {
    const current = input.templateContainers.find((c) => c.name === change.container);
    if (current === undefined) throw new RangeError(`container ${change.container} is not in the workload's Pod template`);
    if (kindOf(current) === "init") throw new RangeError(`container ${change.container} is an init container, which runs to completion: it is not scaled`);
    if (current.limit !== change.from.limit || current.request !== change.from.request) {
      throw new RangeError(`container ${change.container}: the change was decided from other values than the template's`);
    }
    const list = listOf(current);
    const index = input.templateContainers.filter((c) => listOf(c) === list).indexOf(current);
    const base = `/spec/template/spec/${list}/${index}`;
    ops.push({ op: "test", path: `${base}/name`, value: change.container });
    ops.push({ op: "test", path: `${base}/resources/limits/memory`, value: change.from.limit });
    writes.push({ op: "replace", path: `${base}/resources/limits/memory`, value: change.to.limit });
    if (change.from.request !== undefined) {
      ops.push({ op: "test", path: `${base}/resources/requests/memory`, value: change.from.request });
      if (change.to.request !== undefined) writes.push({ op: "replace", path: `${base}/resources/requests/memory`, value: change.to.request });
    } else if (change.to.request !== undefined) {
      throw new RangeError(`container ${change.container}: cannot add a memory request the template does not set`);
    }
  }

  const stamp = formatTimestamp(input.time);
  if (input.annotations === undefined) {
    const value: Record<string, string> = { [LAST_SCALE_ANNOTATION]: stamp };
    if (input.record !== undefined) value[LAST_SCALE_RECORD_ANNOTATION] = input.record;
    // The map is still absent (a `test` of null passes only then): an `add` of the whole map
    // would otherwise drop annotations written since the read (a Deployment's revision).
    ops.push({ op: "test", path: "/metadata/annotations", value: null });
    writes.push({ op: "add", path: "/metadata/annotations", value });
  } else {
    // `add` of an existing member replaces it (RFC 6902, 4.1). The previous record is tested as
    // well as the last-scale time: two scales within one second write the same time, and a patch
    // read before the first of them, whose memory a revert has put back meanwhile, would pass the
    // time and memory tests and write a record that does not count the first scale.
    const recordPath = `/metadata/annotations/${escapeJsonPointerToken(LAST_SCALE_RECORD_ANNOTATION)}`;
    const previousRecord = input.annotations[LAST_SCALE_RECORD_ANNOTATION];
    if (input.record !== undefined && previousRecord !== undefined) ops.push({ op: "test", path: recordPath, value: previousRecord });
    if (input.record !== undefined) writes.push({ op: "add", path: recordPath, value: input.record });
    const path = `/metadata/annotations/${escapeJsonPointerToken(LAST_SCALE_ANNOTATION)}`;
    const previous = input.annotations[LAST_SCALE_ANNOTATION];
    if (previous !== undefined) {
      ops.push({ op: "test", path, value: previous });
      writes.push({ op: "replace", path, value: stamp });
    } else {
      writes.push({ op: "add", path, value: stamp });
    }
  }
  return [...ops, ...writes];
}

/** A Pod spec as the heap patches read it (V1PodSpec fits). */
type PodSpecLike = { readonly containers?: readonly ContainerSpecLike[]; readonly initContainers?: readonly ContainerSpecLike[] | undefined } | undefined;

/**
 * The container `name` of `spec` (its containers, then its init containers) and its JSON Pointer in the template.
 * @throws {RangeError} when the spec has none of that name.
 */
function containerAt(spec: PodSpecLike, name: string): { container: ContainerSpecLike; base: string } {
  const lists = [["containers", spec?.containers ?? []], ["initContainers", spec?.initContainers ?? []]] as const;
  const found = lists.map(([list, containers]) => ({ list, index: containers.findIndex((c) => c.name === name), containers })).find((f) => f.index >= 0);
  const container = found?.containers[found.index];
  if (found === undefined || container === undefined) throw new RangeError(`container ${name} is not in the workload's Pod template`);
  return { container, base: `/spec/template/spec/${found.list}/${found.index}` };
}

/**
 * The operations that raise heap flags with their containers' limits (`spec.heapFlags: Scale`,
 * `../decide/fixed-heap.ts` `heapFlagChanges`), for the same compare-and-swap as {@link buildTemplatePatch}:
 * per flag, a `test` of the container's name and of the env var's name and value (or the
 * `command`/`args` element) as read, then its `replace` with the one token changed. A flag
 * changed since it was read fails the whole patch, as a changed limit does.
 * @param spec the Pod template's `spec` as read (V1PodSpec fits).
 * @throws {RangeError} when a change names a container or place the spec does not have, or a
 *   token its value does not hold (`heapFlagChanges` is made from this spec, so never).
 */
export function buildHeapFlagPatch(
  spec: PodSpecLike,
  changes: readonly HeapFlagChange[],
): JsonPatchOperation[] {
  const ops: JsonPatchOperation[] = [];
  for (const change of changes) {
    const { container, base } = containerAt(spec, change.container);
    ops.push({ op: "test", path: `${base}/name`, value: change.container });
    const { place, token } = change.flag;
    if ("env" in place) {
      const env = container.env ?? [];
      const j = env.findLastIndex((e) => e.name === place.env);
      const entry = env[j];
      if (entry === undefined || entry.value === undefined) throw new RangeError(`container ${change.container} sets no env ${place.env} value`);
      ops.push({ op: "test", path: `${base}/env/${j}/name`, value: place.env });
      ops.push({ op: "test", path: `${base}/env/${j}/value`, value: entry.value });
      ops.push({ op: "replace", path: `${base}/env/${j}/value`, value: replaceToken(entry.value, token, change.to) });
    } else {
      const [list, k] = "command" in place ? (["command", place.command] as const) : (["args", place.args] as const);
      const text = container[list]?.[k];
      if (text === undefined) throw new RangeError(`container ${change.container} has no ${list}[${k}]`);
      ops.push({ op: "test", path: `${base}/${list}/${k}`, value: text });
      ops.push({ op: "replace", path: `${base}/${list}/${k}`, value: replaceToken(text, token, change.to) });
    }
  }
  return ops;
}

/**
 * The operations that write heap settings after a heap error (`../decide/heap-settings.ts`), for
 * the same compare-and-swap as {@link buildTemplatePatch}: per setting, a `test` of the container's
 * name, then the token appended to the env var's value (tested as read, a space between), or the
 * env var added (the `env` list too when the container has none); and the annotation that names
 * the tokens memory-scaler owns (`HEAP_SETTINGS_ANNOTATION`), tested as read, set to `owned`
 * (removed when `owned` is undefined and it was there). Goes after {@link buildTemplatePatch},
 * which adds the annotations map when the workload has none.
 * @param annotations the workload's `metadata.annotations` as read.
 * @param owned the tokens owned after this write, per container; undefined: none.
 * @throws {RangeError} when a setting names a container the spec does not have, or an env var set from `valueFrom` (`heapSettings` never does).
 */
export function buildHeapSettingPatch(
  spec: PodSpecLike,
  settings: readonly HeapSetting[],
  annotations: Readonly<Record<string, string>> | undefined,
  owned: Readonly<Record<string, string>> | undefined,
): JsonPatchOperation[] {
  const ops: JsonPatchOperation[] = [];
  for (const setting of settings) {
    const { container, base } = containerAt(spec, setting.container);
    ops.push({ op: "test", path: `${base}/name`, value: setting.container });
    const env = container.env;
    const j = env === undefined ? -1 : env.findLastIndex((e) => e.name === setting.env);
    const entry = env?.[j];
    if (env === undefined) {
      ops.push({ op: "add", path: `${base}/env`, value: [{ name: setting.env, value: setting.token }] });
    } else if (entry === undefined) {
      ops.push({ op: "add", path: `${base}/env/-`, value: { name: setting.env, value: setting.token } });
    } else {
      if (entry.valueFrom !== undefined && entry.valueFrom !== null) throw new RangeError(`container ${setting.container}'s ${setting.env} is set from valueFrom`);
      const value = entry.value ?? "";
      ops.push({ op: "test", path: `${base}/env/${j}/name`, value: setting.env });
      if (entry.value === undefined) {
        ops.push({ op: "add", path: `${base}/env/${j}/value`, value: setting.token });
      } else {
        ops.push({ op: "test", path: `${base}/env/${j}/value`, value });
        ops.push({ op: "replace", path: `${base}/env/${j}/value`, value: value.trim() === "" ? setting.token : `${value} ${setting.token}` });
      }
    }
  }
  const path = `/metadata/annotations/${escapeJsonPointerToken(HEAP_SETTINGS_ANNOTATION)}`;
  const previous = annotations?.[HEAP_SETTINGS_ANNOTATION];
  const next = owned === undefined ? undefined : JSON.stringify(owned);
  if (next === previous) return ops;
  if (previous !== undefined) ops.push({ op: "test", path, value: previous });
  ops.push(next === undefined ? { op: "remove", path } : { op: "add", path, value: next });
  return ops;
}
