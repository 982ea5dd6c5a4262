/**
 * `npm run resend -- EVENT -n NAMESPACE [--broker NS/NAME]` (or `kubectl appmonitor resend EVENT -n
 * NAMESPACE`, through `scripts/explain/kubectl-appmonitor`): sends a dead letter again to the
 * Broker it came through, from its Warning Event `DeadLetter` (`kubectl get events -A
 * --field-selector reason=DeadLetter` lists them), with the kubeconfig of `KUBECONFIG` or the
 * default, through the API server's service proxy to Knative's Broker ingress (`resend.ts`).
 *
 * The Event is deleted first and written back if the Broker does not take the event (any answer
 * but 2xx, or no answer): so an event that fails again is dead-lettered again as a new Event,
 * and one that could not be sent keeps its Event.
 *
 * RBAC it needs (docs/operations.md): `get`, `delete` and `create` on `events.k8s.io` events in
 * NAMESPACE; `create` on `services/proxy` named `broker-ingress` in `knative-eventing`.
 *
 * Its arguments, options and exit codes: {@link USAGE} (`--help`).
 */
import https from "node:https";
import http from "node:http";
import { parseArgs } from "node:util";
import * as k8s from "@kubernetes/client-node";
import { HTTP } from "cloudevents";
import { exitOnHelp, usageText, type CommandUsage, type OptionUsage } from "../lib/usage.ts";
import { ResendError, resendOf } from "./resend.ts";

const OPTIONS = {
  namespace: { type: "string", short: "n", default: "default", value: "NAMESPACE", means: "the Event's namespace" },
  broker: { type: "string", value: "NAMESPACE/NAME", means: "the Broker to send it to", defaultIs: "the one the dead letter came through" },
} as const satisfies Record<string, OptionUsage>;

const USAGE: CommandUsage = {
  synopsis: ["npm run resend -- EVENT -n NAMESPACE [--broker NAMESPACE/NAME]", "kubectl appmonitor resend EVENT -n NAMESPACE"],
  arguments: [{ name: "EVENT", means: "a Warning Event DeadLetter (kubectl get events -A --field-selector reason=DeadLetter)" }],
  options: OPTIONS,
  notes: [
    "The kubeconfig is KUBECONFIG's or the default. Exit codes: 0 sent (the Broker answered 2xx); 1 the Event could",
    "not be read, is no dead letter's, kept no event, or the Broker refused it (named); 2 usage.",
  ],
};

/** POSTs `body` to the API server at `path` with `kc`'s credentials; the status and body of the answer. */
async function postThroughApiServer(kc: k8s.KubeConfig, path: string, headers: Record<string, string>, body: string): Promise<{ status: number; text: string }> {
  const server = kc.getCurrentCluster()?.server;
  if (server === undefined) throw new ResendError("the kubeconfig names no cluster");
  const url = new URL(path, server);
  const options: https.RequestOptions = { method: "POST", headers: { ...headers, "content-length": String(Buffer.byteLength(body)) } };
  await kc.applyToHTTPSOptions(options);
  const transport = url.protocol === "https:" ? https : http;
  return new Promise((resolve, reject) => {
    const req = transport.request(url, options, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") }));
      res.on("error", reject);
    });
    req.setTimeout(60_000, () => req.destroy(new Error("no answer within 60 s")));
    req.on("error", reject);
    req.end(body);
  });
}

async function main(argv: readonly string[]): Promise<number> {
  const args = argv[0] === "resend" ? argv.slice(1) : [...argv];
  exitOnHelp(args, USAGE);
  let parsed;
  try {
    parsed = parseArgs({ args, allowPositionals: true, options: OPTIONS });
  } catch (error) {
    console.error(`${(error as Error).message}\n${usageText(USAGE)}`);
    return 2;
  }
  const [name, ...extra] = parsed.positionals;
  if (name === undefined || extra.length > 0) {
    console.error(`one Event name is needed\n${usageText(USAGE)}`);
    return 2;
  }
  const namespace = parsed.values.namespace;
  const kc = new k8s.KubeConfig();
  kc.loadFromDefault();
  const events = kc.makeApiClient(k8s.EventsV1Api);
  let found: k8s.EventsV1Event;
  try {
    found = await events.readNamespacedEvent({ name, namespace });
  } catch (error) {
    console.error(`could not read Event ${namespace}/${name}: ${(error as { body?: unknown }).body ?? (error as Error).message}`);
    return 1;
  }
  const resend = resendOf(found, parsed.values.broker);
  await events.deleteNamespacedEvent({ name, namespace, body: { preconditions: { uid: found.metadata?.uid ?? "" } } });
  const message = HTTP.binary(resend.event);
  let answer: { status: number; text: string } | Error;
  try {
    answer = await postThroughApiServer(kc, resend.path, message.headers as Record<string, string>, String(message.body ?? ""));
  } catch (error) {
    answer = error as Error;
  }
  if (answer instanceof Error || answer.status < 200 || answer.status > 299) {
    const { metadata, ...rest } = found;
    await events.createNamespacedEvent({ namespace, body: { ...rest, metadata: { name: metadata?.name ?? name, namespace, annotations: metadata?.annotations ?? {} } } });
    const why = answer instanceof Error ? answer.message : `HTTP ${answer.status}: ${answer.text.slice(0, 500)}`;
    console.error(`the Broker ${resend.broker.namespace}/${resend.broker.name} did not take ${resend.event.type} ${resend.event.id} (${why}); Event ${namespace}/${name} is kept`);
    return 1;
  }
  console.log(`sent ${resend.event.type} from ${resend.event.source} (id ${resend.event.id}) to Broker ${resend.broker.namespace}/${resend.broker.name}: HTTP ${answer.status}; Event ${namespace}/${name} deleted (a new dead letter would write it again)`);
  return 0;
}

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (error) {
  console.error(error instanceof ResendError ? error.message : `resend failed: ${(error as Error).message}`);
  process.exitCode = 1;
}
