/**
 * A runtime's used heap in percent of its heap limit, from the metrics the program exports of
 * itself (`spec.containerPolicies[].heapMetrics: Watch`): one builder for rule-sync's
 * `AppMonitorHeapThreshold` rules, its MetricsReady check, and memory-scaler's evidence
 * (`functions/memory-scaler/kube/prometheus.ts`), so that what the rule alerted on and what
 * memory-scaler reads back are the same series. Pure. Which metric each runtime needs and why:
 * docs/fixed-heaps.md, "The heap's own threshold".
 *
 * The series come from the program's own scrape, not from cAdvisor: they must carry the
 * `namespace`, `pod` and `container` labels of the Pod and container they were scraped from, as a
 * PodMonitor or ServiceMonitor of prometheus-operator writes them (a plain scrape config relabels
 * `__meta_kubernetes_namespace`, `__meta_kubernetes_pod_name` and
 * `__meta_kubernetes_pod_container_name` to them). Each library's series are reduced with
 * `sum by (namespace, pod, container)` (a JVM's pools, .NET's generations, Go's memory classes),
 * and a runtime's libraries are tried in turn (`or`): the first that has both sides for a
 * container gives its value.
 */
import { promqlNumber } from "./promql.ts";

/** The runtimes whose heap metrics are read: `spec.containerPolicies[].runtime`'s values. */
export type HeapMetricsRuntime = "Node.js" | "JVM" | "Go" | ".NET";

/**
 * .NET's GC heap hard limit in a container with a memory limit, in percent of that limit: its
 * default (`GCHeapHardLimit` unset: "the larger of 20 MB or 75% of the memory limit on the
 * container", https://learn.microsoft.com/dotnet/core/runtime-config/garbage-collector#heap-hard-limit).
 * No .NET library exports the limit, so the rule divides by this share of the container's limit.
 */
export const DOTNET_HEAP_LIMIT_PERCENT = 75;

/**
 * `GOMEMLIMIT` unset, as `go_gc_gomemlimit_bytes` reports it: `math.MaxInt64`, which a float64 sample
 * and this literal both round to 2^63 (https://pkg.go.dev/runtime/debug#SetMemoryLimit). The rule
 * keeps a limit below it only.
 */
const GO_NO_MEMORY_LIMIT = "9.223372036854775807e18";

/** One library's names for a runtime's used heap and its heap limit. */
export interface HeapSource {
  /** The library and where its names are documented, for docs and MetricsReady's messages. */
  readonly library: string;
  /** The used heap's metric (MetricsReady names it when absent). */
  readonly usedMetric: string;
  /** The heap limit's metric; undefined: a share of the container's memory limit (.NET). */
  readonly limitMetric: string | undefined;
  /** The used heap's series under `matchers` (scope and container matchers), in bytes, not reduced. */
  used(matchers: string): string;
  /** The heap limit's series under `matchers`, in bytes, not reduced; only when {@link limitMetric} is set. */
  limit(matchers: string): string;
}

/** A source whose used heap and limit are each one metric, `extra` matchers on both. */
function plain(library: string, usedMetric: string, limitMetric: string | undefined, extra = "", limitFilter = ""): HeapSource {
  const tail = extra === "" ? "" : `, ${extra}`;
  return {
    library,
    usedMetric,
    limitMetric,
    used: (m) => `${usedMetric}{${m}${tail}}`,
    limit: (m) => `${limitMetric ?? ""}{${m}${tail}}${limitFilter}`,
  };
}

/**
 * Every runtime's sources, in the order tried:
 *
 * - JVM: Micrometer's and Prometheus client_java 1.x's `jvm_memory_used_bytes` / `jvm_memory_max_bytes`
 *   with `area="heap"`; client_java 0.x's (simpleclient_hotspot, the JMX exporter's Java agent)
 *   `jvm_memory_bytes_used` / `jvm_memory_bytes_max`; OpenTelemetry's `jvm.memory.used` /
 *   `jvm.memory.limit` with `jvm.memory.type=heap`. A pool without a maximum of its own reports -1
 *   (G1's Eden and Survivor spaces: they share the heap), and OpenTelemetry leaves it out: only
 *   maxima above 0 are summed, so under G1 the limit is the old generation's, the heap's `-Xmx`.
 * - Node.js: prom-client's `nodejs_heap_size_used_bytes` over `nodejs_heap_old_space_limit_bytes`,
 *   the old space's limit (`--max-old-space-size`, which V8's heap error is about), a gauge the
 *   program registers itself: prom-client exports no limit, and V8's `heap_size_limit` also counts
 *   the young generation's reserve, which old objects never fill (docs/fixed-heaps.md).
 * - Go: client_golang's `go_memstats_sys_bytes` less `go_memstats_heap_released_bytes` over
 *   `go_gc_gomemlimit_bytes` (a default metric since client_golang 1.20); OpenTelemetry's `go.memory.used` over `go.memory.limit`. `GOMEMLIMIT`
 *   bounds all the memory the Go runtime maps less what it released, not the heap alone
 *   (https://go.dev/doc/gc-guide#Memory_limit), so that is what is compared; without `GOMEMLIMIT`
 *   there is no limit and no series.
 * - .NET: OpenTelemetry's `dotnet.gc.last_collection.heap.size` (.NET 9's `System.Runtime` meter)
 *   or `process.runtime.dotnet.gc.heap.size` (OpenTelemetry.Instrumentation.Runtime before it),
 *   summed over generations, over {@link DOTNET_HEAP_LIMIT_PERCENT} of the container's limit.
 */
export const HEAP_SOURCES: Readonly<Record<HeapMetricsRuntime, readonly HeapSource[]>> = {
  JVM: [
    plain("Micrometer, Prometheus client_java 1.x", "jvm_memory_used_bytes", "jvm_memory_max_bytes", 'area="heap"', " > 0"),
    plain("Prometheus client_java 0.x (simpleclient_hotspot, JMX exporter agent)", "jvm_memory_bytes_used", "jvm_memory_bytes_max", 'area="heap"', " > 0"),
    plain("OpenTelemetry (jvm.memory.used, jvm.memory.limit)", "jvm_memory_used_bytes", "jvm_memory_limit_bytes", 'jvm_memory_type="heap"', " > 0"),
  ],
  "Node.js": [plain("prom-client, with the program's nodejs_heap_old_space_limit_bytes gauge", "nodejs_heap_size_used_bytes", "nodejs_heap_old_space_limit_bytes")],
  Go: [
    {
      library: "Prometheus client_golang ≥ 1.20",
      usedMetric: "go_memstats_sys_bytes",
      limitMetric: "go_gc_gomemlimit_bytes",
      used: (m) => `go_memstats_sys_bytes{${m}} - go_memstats_heap_released_bytes{${m}}`,
      limit: (m) => `go_gc_gomemlimit_bytes{${m}} < ${GO_NO_MEMORY_LIMIT}`,
    },
    plain("OpenTelemetry (go.memory.used, go.memory.limit)", "go_memory_used_bytes", "go_memory_limit_bytes"),
  ],
  ".NET": [
    plain("OpenTelemetry, .NET 9 System.Runtime (dotnet.gc.last_collection.heap.size)", "dotnet_gc_last_collection_heap_size_bytes", undefined),
    plain("OpenTelemetry.Instrumentation.Runtime (process.runtime.dotnet.gc.heap.size)", "process_runtime_dotnet_gc_heap_size_bytes", undefined),
  ],
};

const BY = "(namespace, pod, container)";

/**
 * The lines of a runtime's used heap in percent of its heap limit, per namespace, pod and
 * container (labels exactly those), for the series under `matchers` (scope and container
 * matchers, as `working-set.ts` writes them): each source's ratio, `or` the next.
 *
 * @param runtime the container's declared runtime.
 * @param matchers the series matchers, e.g. `namespace="shop", container=~"api"`.
 * @param containerLimit the container memory limit series under the same matchers (`working-set.ts`
 *   `memoryLimitSeries`), not reduced: .NET's heap limit is a share of it.
 * @returns the expression's lines.
 */
export function heapPercentLines(runtime: HeapMetricsRuntime, matchers: string, containerLimit: string): string[] {
  return HEAP_SOURCES[runtime].flatMap((source, index) => [
    ...(index === 0 ? [] : ["or"]),
    "(",
    // 100 × used / limit, as the working-set alert: exact whenever the percentage is whole.
    `  100 * sum by ${BY} (${source.used(matchers)})`,
    `    / on ${BY}`,
    source.limitMetric === undefined
      ? `  (${promqlNumber(DOTNET_HEAP_LIMIT_PERCENT / 100)} * max by ${BY} (${containerLimit}))`
      : `  sum by ${BY} (${source.limit(matchers)})`,
    ")",
  ]);
}
