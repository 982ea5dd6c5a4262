/**
 * The stack's Alertmanager routes of one process: each chain or alert path adds its namespace's
 * route and takes it off at its end, so several can run at once in one test file. Writes are one
 * at a time; the configuration the first route found is put back when the last is taken off.
 * Alertmanager keeps its alerts and what it has notified across a reload, and each namespace's
 * route and receiver keep their names, so a reload for one namespace sends nothing again for another.
 */
import { readFile, writeFile } from "node:fs/promises";
import { stringify } from "yaml";
import { namespaceRoutes, type NamespaceRoute } from "./alertmanager-route.ts";

/** The Alertmanager whose routes these are: the stack's configuration file and address. */
export interface RoutedAlertmanager {
  readonly alertmanagerConfig: string;
  readonly alertmanagerUrl: string;
}

/** Per configuration file: the routes on, and the configuration before the first. */
const routed = new Map<string, { routes: NamespaceRoute[]; before: string }>();
let writing: Promise<unknown> = Promise.resolve();

/** Runs `step` after every earlier write, and before any later one. */
function serially<T>(step: () => Promise<T>): Promise<T> {
  const next = writing.then(step, step);
  writing = next.catch(() => undefined);
  return next;
}

/** POSTs Alertmanager's `/-/reload`. @throws Error when it answers other than 2xx. */
async function reload(url: string): Promise<void> {
  const answer = await fetch(`${url}/-/reload`, { method: "POST" });
  if (!answer.ok) throw new Error(`${url}/-/reload answered ${answer.status}: ${await answer.text()}`);
}

/**
 * Routes `route.namespace`'s alerts to its alert-receiver beside the routes already on, and reloads.
 * @returns the route's removal: the others written again (or, the last, the configuration from
 *   before the first), and a reload; it never throws (a failed reload is left to the next write).
 * @throws Error when the reload is refused (the route is taken off again first).
 */
export function addRoute(am: RoutedAlertmanager, route: NamespaceRoute): Promise<() => Promise<void>> {
  return serially(async () => {
    let entry = routed.get(am.alertmanagerConfig);
    if (entry === undefined) {
      entry = { routes: [], before: await readFile(am.alertmanagerConfig, "utf8") };
      routed.set(am.alertmanagerConfig, entry);
    }
    const current = entry;
    current.routes = [...current.routes.filter((r) => r.namespace !== route.namespace), route];
    const takeOff = async () => {
      current.routes = current.routes.filter((r) => r !== route);
      if (current.routes.length === 0) routed.delete(am.alertmanagerConfig);
      await writeFile(am.alertmanagerConfig, current.routes.length === 0 ? current.before : stringify(namespaceRoutes(current.routes)));
      await reload(am.alertmanagerUrl).catch(() => undefined);
    };
    await writeFile(am.alertmanagerConfig, stringify(namespaceRoutes(current.routes)));
    try {
      await reload(am.alertmanagerUrl);
    } catch (error) {
      await takeOff();
      throw error;
    }
    const remove = () => serially(takeOff);
    return remove;
  });
}
