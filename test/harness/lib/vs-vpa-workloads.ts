/**
 * The comparison with the VPA (`npm run bench -- vs-vpa`) as data: the memory patterns, each a
 * memhog mode (scripts/images/memhog), the arms that face them, and the objects that make one
 * pattern in one arm (a Deployment, and the arm's VerticalPodAutoscaler or AppMonitor); a
 * runtime's pattern runs one of `growing-heaps.ts`'s programs instead. Every pattern starts at the
 * same requests and limits in every arm. Pure: plain objects out.
 */
import { JAVA_GROWING_HEAP_FILE, JAVA_GROWING_HEAP_PROGRAM, NODE_GROWING_HEAP_PROGRAM } from "./growing-heaps.ts";

/** Every workload's memory at the start, in every arm. */
export const START_RESOURCES = { requests: { memory: "128Mi", cpu: "10m" }, limits: { memory: "256Mi" } } as const;

/** One memory pattern: its name, what it stands for, and its program's environment. */
export interface Pattern {
  readonly name: string;
  readonly means: string;
  readonly env: Readonly<Record<string, string>>;
  /** A runtime's program instead of memhog, with its runtime's default heap. */
  readonly runtime?: Runtime;
}

/**
 * A runtime and how it runs its program: Node.js 24 (memory-scaler's image) with `command`, or
 * OpenJDK 17 (`npm run image openjdk`) with `args`, its `program` mounted read-only at
 * {@link PROGRAM_DIR} from the ConfigMap {@link programConfigMap}. Either keeps its log's tail as
 * the termination message, as docs/fixed-heaps.md asks of a service whose heap error is to be seen.
 */
export interface Runtime {
  readonly image: keyof PatternImages;
  readonly command?: readonly string[];
  readonly args?: readonly string[];
  readonly program?: { readonly file: string; readonly source: string };
}

/** Where a runtime's program is mounted. */
export const PROGRAM_DIR = "/program";

/** The container of every workload of the comparison. */
export const CONTAINER = "app";

/** The patterns, each against the 256Mi limit of {@link START_RESOURCES}. */
export const PATTERNS: readonly Pattern[] = [
  { name: "creep", means: "creeps up, then levels off at 85 % of the limit", env: { MEMHOG_MODE: "hold", MEMHOG_TARGET: "218Mi", MEMHOG_RATE: "1Mi" } },
  { name: "step", means: "holds 50 %, then steps to 95 % after 2 minutes", env: { MEMHOG_MODE: "step", MEMHOG_TARGET: "128Mi", MEMHOG_STEP_TARGET: "243Mi", MEMHOG_STEP_AFTER: "120s", MEMHOG_RATE: "16Mi" } },
  { name: "spike", means: "needs 320Mi at once: OOM-killed at the limit until it has more", env: { MEMHOG_MODE: "hold", MEMHOG_TARGET: "320Mi", MEMHOG_RATE: "32Mi" } },
  { name: "child", means: "a forked child grows until the kernel kills it; the main process lives on", env: { MEMHOG_MODE: "grow-child", MEMHOG_TARGET: "16Mi", MEMHOG_RATE: "8Mi" } },
  { name: "leak", means: "leaks 768Ki a second until it is killed or given more", env: { MEMHOG_MODE: "grow", MEMHOG_TARGET: "16Mi", MEMHOG_RATE: "768Ki" } },
  { name: "cycle", means: "a daily cycle in about a minute: 64Mi to 200Mi and back", env: { MEMHOG_MODE: "sawtooth", MEMHOG_TARGET: "200Mi", MEMHOG_LOW: "64Mi", MEMHOG_RATE: "2Mi" } },
  { name: "cache", means: "reads a 400Mi file over and over: its working set is page cache", env: { MEMHOG_MODE: "cache", MEMHOG_TARGET: "400Mi", MEMHOG_RATE: "64Mi", MEMHOG_FILE: "/cache/memhog.data" } },
  { name: "node", means: "a Node.js service, its default heap, whose live heap grows 1 MiB a second to 300 MiB", env: { HOLD_MIB: "300", RATE_MIB: "1" }, runtime: { image: "node", command: ["node", "-e", NODE_GROWING_HEAP_PROGRAM] } },
  {
    name: "jvm",
    means: "a JVM service, its default heap (a quarter of the limit), whose live heap grows 1 MiB a second to 150 MiB",
    env: { HOLD_MIB: "150", RATE_MIB: "1" },
    runtime: { image: "openjdk", args: [`${PROGRAM_DIR}/${JAVA_GROWING_HEAP_FILE}`], program: { file: JAVA_GROWING_HEAP_FILE, source: JAVA_GROWING_HEAP_PROGRAM } },
  },
];

/** The ConfigMap that holds `pattern`'s program, in the comparison's namespace. */
export const programConfigMap = (pattern: string): string => `program-${pattern}`;

/** The arms, each its own autoscaler (or none) in front of every pattern. */
export const ARMS = ["none", "vpa", "appmonitor", "trend"] as const;

/** An arm. */
export type Arm = (typeof ARMS)[number];

/** What each arm is, for the table's legend. */
export const ARM_MEANS: Readonly<Record<Arm, string>> = {
  none: "no autoscaler",
  vpa: "the VPA 1.8.1, updateMode InPlaceOrRecreate, controlledValues RequestsAndLimits",
  appmonitor: "appmonitor with its shipped defaults: threshold 75 %, multiplier 2, Rollout",
  trend: "appmonitor with updateMode InPlaceOrRollout and the trend trigger (horizon and window 120 s)",
};

/** The AppMonitor specs of the appmonitor arms (targetRef added per workload). */
export const APPMONITOR_SPECS: Readonly<Record<"appmonitor" | "trend", Readonly<Record<string, unknown>>>> = {
  appmonitor: { memThresholdPercent: 75, memMultiplier: 2 },
  trend: { memThresholdPercent: 75, memMultiplier: 2, updateMode: "InPlaceOrRollout", trend: { horizonSeconds: 120, windowSeconds: 120 } },
};

/** The name of pattern `pattern`'s workload in arm `arm`: `<arm>-<pattern>`. */
export const workloadName = (arm: Arm, pattern: string): string => `${arm}-${pattern}`;

/** Labels every Pod of the comparison carries: its arm and its pattern. */
export const ARM_LABEL = "bench.appmonitor.dev/arm";
export const PATTERN_LABEL = "bench.appmonitor.dev/pattern";

/** The images the patterns run: memhog's, and a {@link Runtime}'s: Node.js's (memory-scaler's) and OpenJDK's. */
export interface PatternImages {
  readonly memhog: string;
  readonly node: string;
  readonly openjdk: string;
}

/** The Deployment of `pattern` in `arm`: its program with the pattern's environment, at {@link START_RESOURCES}, placed by `placement`. */
export function patternDeployment(arm: Arm, pattern: Pattern, images: PatternImages, placement: { nodeSelector: Readonly<Record<string, string>>; tolerations: readonly object[] }): Record<string, unknown> {
  const name = workloadName(arm, pattern.name);
  const labels = { app: name, [ARM_LABEL]: arm, [PATTERN_LABEL]: pattern.name };
  const cache = pattern.env.MEMHOG_FILE !== undefined;
  const { runtime } = pattern;
  const program = runtime?.program !== undefined;
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, labels },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels },
        spec: {
          nodeSelector: { ...placement.nodeSelector },
          tolerations: placement.tolerations.map((t) => ({ ...t })),
          terminationGracePeriodSeconds: 1,
          containers: [{
            name: CONTAINER,
            image: runtime === undefined ? images.memhog : images[runtime.image],
            imagePullPolicy: "IfNotPresent",
            ...(runtime?.command === undefined ? {} : { command: [...runtime.command] }),
            ...(runtime?.args === undefined ? {} : { args: [...runtime.args] }),
            env: Object.entries(pattern.env).map(([k, value]) => ({ name: k, value })),
            resources: structuredClone(START_RESOURCES),
            ...(runtime === undefined ? {} : { terminationMessagePolicy: "FallbackToLogsOnError" }),
            ...(cache ? { volumeMounts: [{ name: "cache", mountPath: "/cache" }] } : {}),
            ...(program ? { volumeMounts: [{ name: "program", mountPath: PROGRAM_DIR, readOnly: true }] } : {}),
          }],
          ...(cache ? { volumes: [{ name: "cache", emptyDir: {} }] } : {}),
          ...(program ? { volumes: [{ name: "program", configMap: { name: programConfigMap(pattern.name) } }] } : {}),
        },
      },
    },
  };
}

/** The VerticalPodAutoscaler of the vpa arm's workload `name`. */
export function verticalPodAutoscaler(name: string): Record<string, unknown> {
  return {
    apiVersion: "autoscaling.k8s.io/v1",
    kind: "VerticalPodAutoscaler",
    metadata: { name },
    spec: {
      targetRef: { apiVersion: "apps/v1", kind: "Deployment", name },
      updatePolicy: { updateMode: "InPlaceOrRecreate" },
      resourcePolicy: { containerPolicies: [{ containerName: "*", controlledValues: "RequestsAndLimits" }] },
    },
  };
}

/** The AppMonitor spec of an appmonitor arm's workload `name`: the arm's spec and a targetRef to it. */
export function appMonitorSpec(arm: "appmonitor" | "trend", name: string): Record<string, unknown> {
  return { ...structuredClone(APPMONITOR_SPECS[arm]), targetRef: { apiVersion: "apps/v1", kind: "Deployment", name } };
}
