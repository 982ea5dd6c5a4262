/**
 * The Nodes' allocatable memory, as the Node-fit check reads it (`scale/decide/capacity.ts` `decideFit`):
 * one in-process view shared by every event in flight, so that a scale's cost and the function's
 * memory do not grow with the number of Nodes.
 *
 * Why: a Node object is about 14 KB on a production kubelet (images, conditions, nodeInfo), so a
 * LIST of 5,000 Nodes is about 70 MB of JSON; read once per event, a storm of 50 events in flight
 * held 50 of them at once and ran memory-scaler out of its memory limit. Here:
 * - one read at a time, shared by every caller that asks meanwhile (lru-cache's `fetch` coalesces
 *   them), and its answer reused (below: how long);
 * - the read is paged ({@link NODE_PAGE_SIZE} Nodes a request) and keeps only each Node's
 *   `status.allocatable.memory`, so one page of Node objects is alive at a time. A paged list is a
 *   consistent read (no `resourceVersion`): the API server serves `resourceVersion=0` from its
 *   watch cache and ignores `limit` there (kubernetes/kubernetes#70735), which would bring the whole
 *   list back in one answer.
 *
 * Staleness, and why it is safe: the check can only refuse (`Unschedulable`), so the view's age
 * matters in one direction. A view up to {@link NODE_VIEW_MAX_AGE_MS} old may say a Pod fits; a
 * Node that left since can make that wrong, as a read milliseconds old could (the check is
 * conservative by design: it ignores taints and what runs on a Node), and the follow-up reports
 * the rollout that does not progress. A view that would refuse is read again first when it is
 * older than {@link NODE_VIEW_REFUSAL_AGE_MS}, so a larger Node that joined since is seen before
 * any scale is refused. A failed read is not kept: the next caller reads again, and the scale
 * goes on with a Warning meanwhile (`scale/targets/write.ts`).
 */
import { LRUCache } from "lru-cache";

/**
 * Nodes per LIST request: about 1.4 MB of JSON with production-sized Node objects, whose parse
 * (before the list is cut to the allocatable memory) lives about 8 MB of heap at a time; a page of
 * 250 lived 19 MB, and lifted the function's peak in a storm by as much.
 */
export const NODE_PAGE_SIZE = 100;

/** How long one read of the Nodes serves every scale it lets through, ms. */
export const NODE_VIEW_MAX_AGE_MS = 600_000;

/** The oldest view a scale may be refused on, ms: an older one is read again first. */
export const NODE_VIEW_REFUSAL_AGE_MS = 10_000;

/** One page of a Node list: each Node's `status.allocatable.memory` (a quantity, or undefined), and the `continue` token of the next page, if any. */
export interface NodeMemoryPage {
  readonly allocatable: readonly (string | undefined)[];
  readonly continue: string | undefined;
}

/** What {@link createNodeMemoryView} needs: one LIST request of at most `limit` Nodes, from `continueToken` (undefined: the first page). */
export type ReadNodePage = (limit: number, continueToken: string | undefined) => Promise<NodeMemoryPage>;

/**
 * The shared view over `readPage`: a function resolving every Node's allocatable memory, one
 * entry a Node (frozen; callers share it). Concurrent calls share one paged read; a read younger
 * than `maxAgeMs` is reused, or younger than `fresherThanMs` when the caller gives it (a read is
 * made when the view is older). A failed read rejects every caller that waited for it and is not
 * kept. `now` (ms, monotonic) is for tests.
 */
export function createNodeMemoryView(readPage: ReadNodePage, options: { maxAgeMs?: number; now?: () => number } = {}): (fresherThanMs?: number) => Promise<readonly (string | undefined)[]> {
  const maxAgeMs = options.maxAgeMs ?? NODE_VIEW_MAX_AGE_MS;
  const cache = new LRUCache<"nodes", readonly (string | undefined)[]>({
    max: 1,
    ttl: maxAgeMs,
    ttlResolution: 0,
    ...(options.now === undefined ? {} : { perf: { now: options.now } }),
    fetchMethod: async () => {
      const allocatable: (string | undefined)[] = [];
      let token: string | undefined;
      do {
        const page = await readPage(NODE_PAGE_SIZE, token);
        allocatable.push(...page.allocatable);
        token = page.continue;
      } while (token !== undefined && token !== "");
      return Object.freeze(allocatable);
    },
  });
  return async (fresherThanMs) => {
    // A view's age is what its time to live has used; a read under way is joined, not repeated.
    const age = cache.has("nodes") ? maxAgeMs - cache.getRemainingTTL("nodes") : 0;
    const nodes = await cache.fetch("nodes", { forceRefresh: fresherThanMs !== undefined && age > fresherThanMs });
    // fetchMethod always resolves a list, so undefined cannot happen; the type allows it.
    return nodes ?? [];
  };
}
