/**
 * The answers this instance gave to firing alerts, by event. CloudEvents 1.0 makes `source` +
 * `id` unique per distinct event ("Consumers MAY assume that Events with identical source and id
 * are duplicates", spec section 3.1.1, `id`), so a re-delivery of one — a sender's retry after a
 * timeout, Alertmanager repeating a notification, a storm of copies — is answered without a
 * read:
 * - while the event is being handled here, a copy waits for that handling and gets its answer;
 * - once it was acted on (`scaled`, `dry-run`), a copy within {@link ANSWER_TTL_SECONDS} gets the
 *   same answer at once. A skip is not remembered: its reason (a cooldown, a working set below the
 *   threshold, a rollout under way) can change while the alert keeps firing, and Alertmanager
 *   sends a still-firing alert again, with the same id, whenever its group changes.
 *
 * Only complete answers are remembered. A handling that failed (an HttpError: 5xx, 429) is not:
 * copies waiting on it fail the same way, and the sender's retry runs the flow again. Nor is one
 * whose Events or status write failed (an outcome with `warnings`): a later copy runs the flow,
 * which records what is missing (the README's "What it does", step 3a). Bounded by
 * {@link MAX_ANSWERS} entries (least recently used forgotten first) and the time to live, with
 * lru-cache's `fetch` (https://github.com/isaacs/node-lru-cache), which also coalesces the
 * concurrent copies. Correctness never rests on this: another instance, or this one later, reads
 * and decides again, and the compare-and-swap write makes a second scale impossible.
 */
import { LRUCache } from "lru-cache";
import type { Outcome } from "./outcome.ts";

/** Answers kept: about 200 bytes each, so a few MB at most. */
export const MAX_ANSWERS = 10_000;

/** How long an answer is remembered, seconds: past the shipped Knative delivery's retries (255 s of backoff). */
export const ANSWER_TTL_SECONDS = 600;

/** The outcomes remembered past their handling: the event was acted on, and a copy must never act again. */
const REMEMBERED: ReadonlySet<Outcome["outcome"]> = new Set(["scaled", "dry-run"]);

/** What a copy of an answered event is told: the first handling's outcome and reason. */
export interface Answer {
  readonly outcome: Outcome["outcome"];
  readonly reason: Outcome["reason"];
}

/** How an event was answered: handled here and now, or the answer of a handling of the same event. */
export type Answered =
  | { readonly shared: false; readonly outcome: Outcome }
  /** `inFlight`: it waited for a handling under way; `remembered`: that handling had ended. */
  | { readonly shared: "inFlight" | "remembered"; readonly answer: Answer };

/** The memory of answers; one per instance. */
export interface AnswerMemory {
  /**
   * Answers the event `source` + `id`: by `handle` (the flow) unless a handling of the same event
   * is under way or remembered.
   * @throws whatever `handle` throws, to this caller and to every copy that waited for it.
   */
  answer(source: string, id: string, handle: () => Promise<Outcome>): Promise<Answered>;
}

interface Handling {
  readonly handle: () => Promise<Outcome>;
  outcome?: Outcome;
}

/** A memory of at most `max` answers, each kept `ttlSeconds`. */
export function createAnswerMemory(max = MAX_ANSWERS, ttlSeconds = ANSWER_TTL_SECONDS): AnswerMemory {
  const cache = new LRUCache<string, Answer, Handling>({
    max,
    ttl: ttlSeconds * 1000,
    // An answer forgotten while its handling runs (the memory full) must still reach its callers.
    ignoreFetchAbort: true,
    fetchMethod: async (_key, _stale, { context }) => {
      const outcome = await context.handle();
      context.outcome = outcome;
      return { outcome: outcome.outcome, reason: outcome.reason };
    },
  });
  return {
    async answer(source, id, handle) {
      const context: Handling = { handle };
      const status: LRUCache.Status<string, Answer, Handling> = {};
      // The NUL cannot occur in a URI-reference or in an id a sender would use, so keys never collide.
      const key = `${source}\u0000${id}`;
      const answer = await cache.fetch(key, { context, status });
      if (context.outcome !== undefined) {
        if (!REMEMBERED.has(context.outcome.outcome) || context.outcome.warnings !== undefined) cache.delete(key);
        return { shared: false, outcome: context.outcome };
      }
      if (answer === undefined) throw new Error(`no answer remembered for event ${id} from ${source}`);
      return { shared: status.fetch === "hit" ? "remembered" : "inFlight", answer };
    },
  };
}
