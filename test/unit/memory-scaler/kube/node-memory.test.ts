// The Node-fit check's shared view of the Nodes (functions/memory-scaler/kube/node-memory.ts):
// one paged read shared by every caller in flight, reused while young, never kept when it failed.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createNodeMemoryView, NODE_PAGE_SIZE, type ReadNodePage } from "../../../../functions/memory-scaler/kube/node-memory.ts";

/** A Node list of `nodes` entries served in pages, counting the pages asked for. */
function pagedNodes(nodes: readonly (string | undefined)[]): { read: ReadNodePage; pages: { limit: number; token: string | undefined }[]; fail?: Error } {
  const state: { read: ReadNodePage; pages: { limit: number; token: string | undefined }[]; fail?: Error } = {
    pages: [],
    read: async (limit, token) => {
      state.pages.push({ limit, token });
      await new Promise((resolve) => setImmediate(resolve));
      if (state.fail !== undefined) throw state.fail;
      const from = token === undefined ? 0 : Number(token);
      const next = from + limit;
      return { allocatable: nodes.slice(from, next), continue: next < nodes.length ? String(next) : undefined };
    },
  };
  return state;
}

describe("the Nodes' allocatable memory, shared", () => {
  it("reads every page, NODE_PAGE_SIZE Nodes each, and keeps each Node's value in order", async () => {
    const nodes = Array.from({ length: NODE_PAGE_SIZE * 2 + 3 }, (_, i) => (i === 7 ? undefined : `${i + 1}Gi`));
    const api = pagedNodes(nodes);
    const view = createNodeMemoryView(api.read);
    assert.deepEqual(await view(), nodes);
    assert.deepEqual(api.pages, [{ limit: NODE_PAGE_SIZE, token: undefined }, { limit: NODE_PAGE_SIZE, token: String(NODE_PAGE_SIZE) }, { limit: NODE_PAGE_SIZE, token: String(NODE_PAGE_SIZE * 2) }]);
  });

  it("a storm of 200 callers in flight makes one read, and they share its answer", async () => {
    const api = pagedNodes(Array.from({ length: 1_000 }, () => "16Gi"));
    const view = createNodeMemoryView(api.read);
    const answers = await Promise.all(Array.from({ length: 200 }, () => view()));
    assert.equal(api.pages.length, Math.ceil(1_000 / NODE_PAGE_SIZE), "one paged read of 1,000 Nodes, not one per caller");
    assert.ok(answers.every((a) => a === answers[0]), "every caller gets the same array");
    assert.ok(Object.isFrozen(answers[0]), "the shared array cannot be changed by one caller");
  });

  it("reuses the answer while younger than maxAgeMs, then reads again", async () => {
    let now = 1_000;
    const api = pagedNodes(["8Gi"]);
    const view = createNodeMemoryView(api.read, { maxAgeMs: 30_000, now: () => now });
    await view();
    now += 29_000;
    await view();
    assert.equal(api.pages.length, 1);
    now += 2_000;
    await view();
    assert.equal(api.pages.length, 2);
  });

  it("a caller that needs a fresher view (fresherThanMs) gets a new read when the view is older, the view otherwise", async () => {
    let now = 1_000;
    const api = pagedNodes(["8Gi"]);
    const view = createNodeMemoryView(api.read, { maxAgeMs: 600_000, now: () => now });
    await view();
    now += 5_000;
    await view(10_000);
    assert.equal(api.pages.length, 1, "5 s old: young enough");
    now += 6_000;
    await Promise.all([view(10_000), view(10_000), view()]);
    assert.equal(api.pages.length, 2, "11 s old: one new read, shared by the three");
    await view(10_000);
    assert.equal(api.pages.length, 2, "the new read is the view now");
  });

  it("a failed read rejects the callers that waited for it and is not kept: the next caller reads again", async () => {
    const api = pagedNodes(["8Gi"]);
    api.fail = new Error("nodes is forbidden");
    const view = createNodeMemoryView(api.read);
    const failed = await Promise.allSettled([view(), view(), view()]);
    assert.deepEqual(failed.map((f) => f.status), ["rejected", "rejected", "rejected"]);
    assert.equal(api.pages.length, 1, "the three callers shared the one failed read");
    delete api.fail;
    assert.deepEqual(await view(), ["8Gi"]);
    assert.equal(api.pages.length, 2);
  });
});
