// memory-scaler's handler bounds the firing events it handles at once (FLOWS_IN_FLIGHT): a storm
// waits in line instead of holding every event's reads at the same time; copies of an event wait
// for its answer without taking a place.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { pino } from "pino";
import { Registry } from "prom-client";
import { validateAlertEventData } from "../../../functions/lib/alert-event.ts";
import type { FunctionContext } from "../../../functions/lib/runtime/types.ts";
import { createAnswerMemory } from "../../../functions/memory-scaler/answers.ts";
import { createHandler } from "../../../functions/memory-scaler/handler.ts";
import { createMetrics } from "../../../functions/memory-scaler/metrics.ts";
import { alertEvent } from "../../support/memory-scaler.ts";
import { alertData, flowDeps, memhogCluster } from "../../support/memory-scaler-fakes.ts";

const context: FunctionContext = { log: pino({ level: "silent" }), requestId: "r", signal: new AbortController().signal };

describe("firing events handled at once", () => {
  it("a storm of 40 distinct events: at most flowsInFlight read at the same time, and every one is answered", async () => {
    const cluster = memhogCluster();
    // Every Pod read waits at the gate: the reads pending there are the flows under way.
    let open: () => void = () => {};
    const gate = new Promise<void>((resolve) => (open = resolve));
    let pending = 0;
    let most = 0;
    const readPod = cluster.readPod.bind(cluster);
    cluster.readPod = async (namespace, name) => {
      pending += 1;
      most = Math.max(most, pending);
      await gate;
      pending -= 1;
      return readPod(namespace, name);
    };
    const flow = flowDeps(cluster);
    const handle = createHandler({ validate: validateAlertEventData, metrics: createMetrics(new Registry()), flow, follow: { cluster, events: flow.events, status: flow.status, now: flow.now }, answers: createAnswerMemory(), flowsInFlight: 4 });
    const { namespace, pod, container, appmonitor } = alertData();
    const events = Array.from({ length: 40 }, () => alertEvent({ namespace, pod, container, appmonitor }));
    const answers = Promise.all(events.map((event) => handle(context, event)));
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(pending, 4, "four flows started, 36 wait their turn");
    open();
    const outcomes = await answers;
    assert.equal(most, 4);
    assert.equal(outcomes.filter((o) => o.outcome === "scaled").length, 1, "one scale for the crossing");
    assert.equal(outcomes.length, 40);
    assert.equal(cluster.writes.length, 1);
  });
});
