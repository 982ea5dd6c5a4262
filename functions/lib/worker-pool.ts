/** A bounded worker pool: run one async step over many items with at most N in flight. */

/**
 * Runs `work` over `items`, at most `limit` at once, each item once, started in order. Resolves
 * when every item is done. A `work` that throws stops its own worker and the returned promise
 * rejects with that error at once, while the other workers go on with the remaining items.
 *
 * @param items what to work on.
 * @param limit how many at once, ≥ 1.
 * @param work the step; catch inside it to keep going after a failure.
 */
export async function forEachLimit<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const item = items[next] as T;
      next += 1;
      await work(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}
