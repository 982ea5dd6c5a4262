/**
 * A workload's in-place record, pure: the memory its Pods run with beyond its Pod template after
 * memory-scaler resized them in place (`spec.updateMode` `InPlace` or `InPlaceOrRollout`), as the
 * annotation `app-monitor.kubedemo.com/in-place-memory` holds it (`../lib/appmonitor.ts`
 * `IN_PLACE_MEMORY_ANNOTATION`). Shared by the scale targets (`scale/targets/in-place-target.ts`,
 * `scale/targets/template-target.ts`) and the follow-up.
 *
 * The rule, the same here and in the MutatingAdmissionPolicy that gives new Pods the memory
 * (`scripts/in-place-policy.ts`): a container's entry applies while the template still sets the
 * limit (and request) it was raised from; a template changed since is a new declaration, and its
 * own values stand. The workload's memory is then the template's with each applying entry's raised
 * values: what every target decides from.
 */
import type { MemoryResources } from "../lib/appmonitor.ts";
import { isDnsLabel } from "../lib/kube-names.ts";
import { ceil, compare, divide, formatBytes, multiply, parseQuantity, QuantityError, sameQuantity } from "../lib/quantity.ts";
import { type ContainerChange, type ContainerMemory, kindOf } from "./model.ts";

/** One container of the record: what the template sets, what the Pods get instead. */
export interface InPlaceEntry {
  readonly container: string;
  /** The template's memory the raise applies to; `request` absent when the template sets none. */
  readonly template: MemoryResources;
  /** The memory the Pods get; `request` absent exactly when `template.request` is. */
  readonly raised: MemoryResources;
}

/** `a>b`: one pair of the format. */
function pair(from: string, to: string): string {
  return `${from}>${to}`;
}

/** The annotation's value for `entries` (module comment); the empty string for none. */
export function formatInPlaceRecord(entries: readonly InPlaceEntry[]): string {
  return entries
    .map((e) => `${e.container}=${pair(e.template.limit, e.raised.limit)}${e.template.request === undefined || e.raised.request === undefined ? "" : `/${pair(e.template.request, e.raised.request)}`}`)
    .join(";");
}

/**
 * The record in the annotation's value, or undefined when it is absent, empty or not one (edited
 * by hand into something else): a container name that is not a DNS label, a quantity that does
 * not parse, a pair without its `>`, a request on one side only.
 */
export function parseInPlaceRecord(value: string | undefined): InPlaceEntry[] | undefined {
  if (value === undefined || value.trim() === "") return undefined;
  const entries: InPlaceEntry[] = [];
  for (const part of value.split(";")) {
    const [container, memory, ...rest] = part.trim().split("=");
    if (container === undefined || memory === undefined || rest.length > 0 || !isDnsLabel(container)) return undefined;
    const [limits, requests, ...more] = memory.split("/");
    const limit = limits?.split(">");
    const request = requests?.split(">");
    if (more.length > 0 || limit?.length !== 2 || (request !== undefined && request.length !== 2)) return undefined;
    const quantities = [...limit, ...(request ?? [])];
    try {
      for (const q of quantities) parseQuantity(q);
    } catch (error) {
      if (error instanceof QuantityError) return undefined;
      throw error;
    }
    const [fromLimit = "", toLimit = ""] = limit;
    const [fromRequest, toRequest] = request ?? [];
    entries.push({
      container,
      template: fromRequest === undefined ? { limit: fromLimit } : { limit: fromLimit, request: fromRequest },
      raised: toRequest === undefined ? { limit: toLimit } : { limit: toLimit, request: toRequest },
    });
  }
  return entries;
}

/** Whether `entry` applies to `container` of the template (module comment). */
function applies(entry: InPlaceEntry, container: ContainerMemory): boolean {
  return entry.container === container.name && sameQuantity(entry.template.limit, container.limit) && sameQuantity(entry.template.request, container.request);
}

/**
 * The workload's memory: the template's containers (`memoryOf` of `spec.template.spec`), each with
 * its raised memory where an entry of `record` applies. `record` undefined: the template's.
 */
export function effectiveMemory(template: readonly ContainerMemory[], record: readonly InPlaceEntry[] | undefined): ContainerMemory[] {
  return template.map((c) => {
    const entry = record?.find((e) => applies(e, c));
    if (entry === undefined) return c;
    return { ...c, limit: entry.raised.limit, ...(entry.raised.request === undefined ? {} : { request: entry.raised.request }) };
  });
}

/**
 * The record after an in-place scale: each change (decided from the workload's memory,
 * {@link effectiveMemory}) becomes its container's entry, raised from the template's values; the
 * entries that still apply to other containers stay; entries that no longer apply go.
 * @throws {RangeError} when a change names a container the template does not have.
 */
export function withInPlaceChanges(template: readonly ContainerMemory[], record: readonly InPlaceEntry[] | undefined, changes: readonly ContainerChange[]): InPlaceEntry[] {
  const kept = (record ?? []).filter((e) => !changes.some((c) => c.container === e.container) && template.some((c) => applies(e, c)));
  const added = changes.map((change): InPlaceEntry => {
    const container = template.find((c) => c.name === change.container);
    if (container?.limit === undefined) throw new RangeError(`container ${change.container} has no memory limit in the workload's Pod template`);
    const templateMemory: MemoryResources = container.request === undefined ? { limit: container.limit } : { limit: container.limit, request: container.request };
    const raised: MemoryResources = container.request === undefined || change.to.request === undefined ? { limit: change.to.limit } : { limit: change.to.limit, request: change.to.request };
    return { container: change.container, template: templateMemory, raised };
  });
  return [...kept, ...added];
}

/**
 * `changes` (decided from the workload's memory) as changes of the template: each `from` the
 * template's own values, so a template patch writes the whole raise, the in-place part included.
 * A change of a container the template does not have is returned as is (the patch builder refuses it).
 */
export function foldedChanges(template: readonly ContainerMemory[], changes: readonly ContainerChange[]): ContainerChange[] {
  return changes.map((change) => {
    const container = template.find((c) => c.name === change.container);
    if (container?.limit === undefined) return change;
    return { ...change, from: container.request === undefined ? { limit: container.limit } : { limit: container.limit, request: container.request } };
  });
}

/**
 * The raise the record holds beyond the template, as template changes: what a fallback to the
 * template patch writes (`scale/flow.ts`). Only the entries that apply; none when there is no record.
 */
export function recordedChanges(template: readonly ContainerMemory[], record: readonly InPlaceEntry[] | undefined): ContainerChange[] {
  return template.flatMap((c) => {
    const entry = record?.find((e) => applies(e, c));
    return entry === undefined ? [] : [{ container: c.name, from: entry.template, to: entry.raised }];
  });
}

/**
 * The changes that bring a Pod's containers (`memoryOf` of its spec) up to the workload's memory
 * `target`: one per container whose limit is below the target's, `from` the Pod's values. Used for
 * the resize of each running Pod, and for a Pod created without the memory (the admission policy
 * not installed), whose crossing is then answered by this resize alone (no new scale). A Pod's
 * request where the target sets none (defaulted) keeps its ratio to the limit. With `down` (a
 * down-step of `spec.scaleDown`), the other way: one per container whose limit is above the target's.
 */
export function podChanges(pod: readonly ContainerMemory[], target: readonly ContainerMemory[], down = false): ContainerChange[] {
  return target.flatMap((t) => {
    // Init containers run to completion before the Pod starts: nothing of theirs runs to resize.
    if (kindOf(t) === "init") return [];
    const p = pod.find((c) => c.name === t.name && kindOf(c) === kindOf(t));
    if (p?.limit === undefined || t.limit === undefined) return [];
    const order = compare(parseQuantity(p.limit), parseQuantity(t.limit));
    if (down ? order <= 0 : order >= 0) return [];
    if (p.request === undefined) return [{ container: t.name, from: { limit: p.limit }, to: { limit: t.limit } }];
    // A template without a request gives its Pods one (the limit, or a LimitRange's default): the
    // Pod's ratio is kept, or the resize would change the Pod's QoS class, which the API refuses.
    const request = t.request ?? formatBytes(ceil(multiply(parseQuantity(t.limit), divide(parseQuantity(p.request), parseQuantity(p.limit)))));
    return [{ container: t.name, from: { limit: p.limit, request: p.request }, to: { limit: t.limit, request } }];
  });
}
