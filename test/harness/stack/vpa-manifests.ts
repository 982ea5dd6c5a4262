/**
 * The Vertical Pod Autoscaler and metrics-server as their projects ship them (the VPA's `deploy/`,
 * metrics-server's `manifests/base/`, rendered by `kubectl kustomize` in `vpa-install.ts`), with
 * what this machine needs kept in separate named steps, each a pure function: the images built
 * here ({@link withImages}), each component's flags ({@link VPA_FLAGS}, {@link withFlags}) and,
 * in `vpa-install.ts`, the Pods placed on the real node. Text in, objects out.
 */
import type { EventingObject } from "./eventing-manifests.ts";

/** The namespace both install into (the upstream manifests' `kube-system`). */
export const VPA_NAMESPACE = "kube-system";

/** The VPA's commands, each its own Deployment `vpa-<command>` and image. */
export const VPA_COMMANDS = ["recommender", "updater", "admission-controller"] as const;

/** A VPA command. */
export type VpaCommand = (typeof VPA_COMMANDS)[number];

/** Where the images build.sh makes are named. */
const IMAGE_REPOSITORY = "localhost/appmonitor";

/** The image build.sh makes of VPA command `command` at version `version` (`1.8.1`). */
export function vpaImage(command: VpaCommand, version: string): string {
  return `${IMAGE_REPOSITORY}/vpa-${command}:${version}`;
}

/** The image build.sh makes of metrics-server at version `version` (`v0.8.0`). */
export function metricsServerImage(version: string): string {
  return `${IMAGE_REPOSITORY}/metrics-server:${version}`;
}

/** The upstream images the manifests name, by the Deployment that runs each. */
const UPSTREAM_IMAGES: Readonly<Record<string, RegExp>> = {
  "vpa-recommender": /^registry\.k8s\.io\/autoscaling\/vpa-recommender:/,
  "vpa-updater": /^registry\.k8s\.io\/autoscaling\/vpa-updater:/,
  "vpa-admission-controller": /^registry\.k8s\.io\/autoscaling\/vpa-admission-controller:/,
  "metrics-server": /^gcr\.io\/k8s-staging-metrics-server\/metrics-server:/,
};

/** One flag the stack sets on a component: the value, the component's default, and why. */
export interface VpaFlag {
  /** The Deployment whose only container gets it. */
  readonly deployment: "vpa-recommender" | "vpa-updater" | "vpa-admission-controller" | "metrics-server";
  readonly flag: string;
  readonly value: string;
  /** The component's own default (its flag's help, or the upstream manifest's value). */
  readonly upstreamDefault: string;
  readonly why: string;
}

/**
 * The flags set on the shipped manifests, so that a run of minutes sees what a cluster sees in
 * days; each with the default and the reason. The VPA's sources: `pkg/recommender/config`,
 * `pkg/updater/config` (v1.8.1); metrics-server's: its `--help` and `manifests/base`.
 */
export const VPA_FLAGS: readonly VpaFlag[] = [
  { deployment: "vpa-recommender", flag: "--recommender-interval", value: "10s", upstreamDefault: "1m", why: "a recommendation per scrape of metrics-server, not per minute" },
  { deployment: "vpa-recommender", flag: "--memory-aggregation-interval", value: "1m", upstreamDefault: "24h", why: "one memory peak per minute, so the 8 intervals of its window (count kept at 8) span 8 minutes, not 8 days" },
  { deployment: "vpa-recommender", flag: "--memory-histogram-decay-half-life", value: "5m", upstreamDefault: "24h", why: "older samples lose weight within a run" },
  { deployment: "vpa-updater", flag: "--updater-interval", value: "10s", upstreamDefault: "1m", why: "the updater acts within seconds of a new recommendation" },
  { deployment: "vpa-updater", flag: "--min-replicas", value: "1", upstreamDefault: "2", why: "the compared workloads run one replica, which the updater otherwise never updates" },
  { deployment: "vpa-updater", flag: "--in-recommendation-bounds-eviction-lifetime-threshold", value: "1m", upstreamDefault: "12h", why: "a Pod within the bounds is updated after a minute of life, not twelve hours" },
  { deployment: "metrics-server", flag: "--metric-resolution", value: "10s", upstreamDefault: "15s (the manifest's)", why: "its shortest: the VPA's samples as often as metrics-server allows" },
  { deployment: "metrics-server", flag: "--kubelet-request-timeout", value: "5s", upstreamDefault: "10s", why: "metrics-server refuses a resolution not above it" },
  { deployment: "metrics-server", flag: "--kubelet-insecure-tls", value: "true", upstreamDefault: "false", why: "the kubelet's serving certificate is signed by the stack's CA, which metrics-server's Pod does not mount" },
];

/** A Deployment's only container, to change in place (on a copy). */
function container(object: EventingObject): { image?: string; args?: string[] } {
  const containers = (object.spec as { template?: { spec?: { containers?: { image?: string; args?: string[] }[] } } } | undefined)?.template?.spec?.containers;
  if (containers?.length !== 1 || !containers[0]) throw new Error(`Deployment ${object.metadata.name} has ${containers?.length ?? 0} containers, not one`);
  return containers[0];
}

/** `objects` with the same object changed by `change` on a copy; the inputs as they are. */
function changingDeployment(objects: readonly EventingObject[], name: string, change: (c: { image?: string; args?: string[] }) => void): EventingObject[] {
  if (!objects.some((o) => o.kind === "Deployment" && o.metadata.name === name)) throw new Error(`the install has no Deployment ${name}`);
  return objects.map((o) => {
    if (o.kind !== "Deployment" || o.metadata.name !== name) return o;
    const copy = structuredClone(o);
    change(container(copy));
    return copy;
  });
}

/**
 * `objects` with each upstream image replaced by the one build.sh made: the VPA's at
 * `vpaVersion`, metrics-server's at `metricsServerVersion`.
 * @throws Error when a Deployment is missing or names another image than the upstream one.
 */
export function withImages(objects: readonly EventingObject[], vpaVersion: string, metricsServerVersion: string): EventingObject[] {
  let out = [...objects];
  for (const [deployment, upstream] of Object.entries(UPSTREAM_IMAGES)) {
    const image = deployment === "metrics-server" ? metricsServerImage(metricsServerVersion) : vpaImage(deployment.slice("vpa-".length) as VpaCommand, vpaVersion);
    out = changingDeployment(out, deployment, (c) => {
      if (!c.image || !upstream.test(c.image)) throw new Error(`Deployment ${deployment} runs ${c.image ?? "no image"}, not the upstream image`);
      c.image = image;
    });
  }
  return out;
}

/**
 * `objects` with `flags` set: each flag's `--flag=value` replacing an argument of the same flag,
 * else appended (`--flag` alone for `true`).
 * @throws Error when a Deployment is missing.
 */
export function withFlags(objects: readonly EventingObject[], flags: readonly VpaFlag[] = VPA_FLAGS): EventingObject[] {
  let out = [...objects];
  for (const f of flags) {
    out = changingDeployment(out, f.deployment, (c) => {
      const arg = f.value === "true" ? f.flag : `${f.flag}=${f.value}`;
      const args = (c.args ?? []).filter((a) => a !== f.flag && !a.startsWith(`${f.flag}=`));
      c.args = [...args, arg];
    });
  }
  return out;
}
