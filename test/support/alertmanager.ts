/**
 * A real Alertmanager (Debian's `prometheus-alertmanager`) for tests: on 127.0.0.1 on a free
 * port, clustering off, storage in a temporary directory, the caller's configuration. Flags:
 * https://prometheus.io/docs/alerting/latest/alertmanager/ ; alerts API:
 * https://github.com/prometheus/alertmanager/blob/main/api/v2/openapi.yaml (`POST /api/v2/alerts`).
 */
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { stringify } from "yaml";
import { startProcess, tailOf } from "./child-process.ts";
import type { TestProcess } from "./child-process.ts";
import { freePort } from "../harness/lib/free-port.ts";
import { tempDir } from "./temp-dir.ts";
import { waitUntil } from "../harness/lib/wait-until.ts";

/** The binary; `ALERTMANAGER_BIN` overrides it. */
export const ALERTMANAGER_BIN = process.env.ALERTMANAGER_BIN ?? "/usr/bin/prometheus-alertmanager";

/** An alert as posted to `/api/v2/alerts` (postableAlert). */
export interface PostableAlert {
  readonly labels: Record<string, string>;
  readonly annotations?: Record<string, string>;
  /** RFC 3339. */
  readonly startsAt?: string;
  /** RFC 3339; in the past → resolved. */
  readonly endsAt?: string;
  readonly generatorURL?: string;
}

/** A running Alertmanager. */
export interface TestAlertmanager {
  /** Where it listens, e.g. `http://127.0.0.1:40123`. */
  readonly url: string;
  /** The `--web.external-url` it puts in webhook payloads. */
  readonly externalUrl: string;
  /** Its configuration file (`POST /-/reload` reads it again). */
  readonly configFile: string;
  readonly process: TestProcess;
  /** POSTs alerts to `/api/v2/alerts`. @throws Error unless it answers 200. */
  postAlerts(alerts: readonly PostableAlert[]): Promise<void>;
  /** Stops it (SIGTERM) and removes its storage. */
  stop(): Promise<void>;
}

/**
 * Writes `config` (the YAML document as an object) and starts Alertmanager with it; resolves
 * once `/-/ready` answers 200.
 * @throws Error with the process's last output when it does not become ready in 20 s.
 */
export async function startAlertmanager(config: object, externalUrl = "http://alertmanager.test:9093"): Promise<TestAlertmanager> {
  const dir = await tempDir("alertmanager");
  const configFile = path.join(dir.path, "alertmanager.yml");
  await writeFile(configFile, stringify(config));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = startProcess({
    name: "alertmanager",
    command: ALERTMANAGER_BIN,
    args: [
      `--config.file=${configFile}`,
      `--storage.path=${path.join(dir.path, "data")}`,
      `--web.listen-address=127.0.0.1:${port}`,
      `--web.external-url=${externalUrl}`,
      "--web.route-prefix=/",
      "--cluster.listen-address=",
      "--log.level=debug",
    ],
  });
  const stop = async (): Promise<void> => {
    await child.stop();
    await dir.remove();
  };
  try {
    await waitUntil(
      "Alertmanager to be ready",
      async () => {
        if (!child.running()) throw new Error("Alertmanager exited");
        return (await fetch(`${url}/-/ready`)).status === 200;
      },
      { timeoutMs: 20_000, intervalMs: 100 },
    );
  } catch (error) {
    const output = tailOf(child);
    await stop();
    throw new Error(`${(error as Error).message}\n${output}`, { cause: error });
  }
  return {
    url,
    externalUrl,
    configFile,
    process: child,
    postAlerts: async (alerts) => {
      const response = await fetch(`${url}/api/v2/alerts`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(alerts),
      });
      if (response.status !== 200) throw new Error(`Alertmanager refused alerts: ${response.status} ${await response.text()}`);
    },
    stop,
  };
}
