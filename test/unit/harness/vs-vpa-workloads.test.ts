import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { validateAppMonitorSpec } from "../../../functions/lib/appmonitor-spec.ts";
import { appMonitorSpec, ARM_LABEL, ARMS, PATTERN_LABEL, PATTERNS, patternDeployment, PROGRAM_DIR, programConfigMap, START_RESOURCES, verticalPodAutoscaler, workloadName } from "../../harness/lib/vs-vpa-workloads.ts";

const images = { memhog: "memhog:1", node: "node:24", openjdk: "openjdk:17" };
const placement = { nodeSelector: { node: "real" }, tolerations: [{ key: "real", operator: "Exists", effect: "NoSchedule" }] };
type Container = { env: { name: string; value: string }[]; resources: unknown; volumeMounts?: unknown[] };
type PodSpec = { containers: Container[]; volumes?: unknown[]; nodeSelector: unknown; tolerations: unknown };
const podSpec = (d: Record<string, unknown>) => (d.spec as { template: { spec: PodSpec } }).template.spec;

describe("the comparison's workloads", () => {
  test("every pattern in every arm: a Deployment named <arm>-<pattern>, labelled with both, at the same start resources, placed, its pattern's environment", () => {
    for (const pattern of PATTERNS) {
      for (const arm of ARMS) {
        const d = patternDeployment(arm, pattern, images, placement);
        assert.equal((d.metadata as { name: string }).name, workloadName(arm, pattern.name));
        assert.deepEqual((d.metadata as { labels: Record<string, string> }).labels[ARM_LABEL], arm);
        assert.deepEqual((d.metadata as { labels: Record<string, string> }).labels[PATTERN_LABEL], pattern.name);
        const spec = podSpec(d);
        assert.deepEqual(spec.containers[0]?.resources, START_RESOURCES);
        assert.deepEqual(spec.nodeSelector, placement.nodeSelector);
        assert.deepEqual(Object.fromEntries(spec.containers[0]?.env.map((e) => [e.name, e.value]) ?? []), pattern.env);
      }
    }
  });

  test("the runtimes' patterns run their runtime's image with its program, the log's tail their termination message; the others memhog's, with its own entrypoint", () => {
    const seen = PATTERNS.map((p) => {
      const c = podSpec(patternDeployment("vpa", p, images, placement)).containers[0] as Container & { image: string; command?: string[]; args?: string[]; terminationMessagePolicy?: string };
      return [p.name, c.image, c.command?.[0] ?? c.args?.[0] ?? "", c.terminationMessagePolicy ?? ""];
    });
    assert.deepEqual(seen.filter(([, image]) => image !== "memhog:1"), [
      ["node", "node:24", "node", "FallbackToLogsOnError"],
      ["jvm", "openjdk:17", `${PROGRAM_DIR}/Grow.java`, "FallbackToLogsOnError"],
    ]);
    assert.ok(seen.filter(([, image]) => image === "memhog:1").every(([, , command, policy]) => command === "" && policy === ""));
  });

  test("only the page-cache reader gets a writable directory (an emptyDir at /cache, where its file is), and only the JVM its program, read-only from its ConfigMap", () => {
    const volumes = PATTERNS.flatMap((p) => {
      const spec = podSpec(patternDeployment("none", p, images, placement));
      return spec.volumes === undefined ? [] : [[p.name, spec.volumes, spec.containers[0]?.volumeMounts]];
    });
    assert.deepEqual(volumes, [
      ["cache", [{ name: "cache", emptyDir: {} }], [{ name: "cache", mountPath: "/cache" }]],
      ["jvm", [{ name: "program", configMap: { name: programConfigMap("jvm") } }], [{ name: "program", mountPath: PROGRAM_DIR, readOnly: true }]],
    ]);
    assert.equal(PATTERNS.find((p) => p.name === "cache")?.env.MEMHOG_FILE?.startsWith("/cache/"), true);
    assert.match(PATTERNS.find((p) => p.name === "jvm")?.runtime?.program?.source ?? "", /public class Grow/);
  });

  test("the appmonitor arms' AppMonitors pass the CRD's validation, each targeting its one Deployment", () => {
    for (const arm of ["appmonitor", "trend"] as const) {
      const spec = validateAppMonitorSpec(appMonitorSpec(arm, "trend-leak")) as { targetRef?: { name: string } };
      assert.equal(spec.targetRef?.name, "trend-leak");
    }
  });

  test("the vpa arm's VerticalPodAutoscaler: InPlaceOrRecreate, RequestsAndLimits, targeting its Deployment", () => {
    const v = verticalPodAutoscaler("vpa-leak") as { spec: { targetRef: { name: string }; updatePolicy: { updateMode: string }; resourcePolicy: { containerPolicies: { controlledValues: string }[] } } };
    assert.equal(v.spec.targetRef.name, "vpa-leak");
    assert.equal(v.spec.updatePolicy.updateMode, "InPlaceOrRecreate");
    assert.equal(v.spec.resourcePolicy.containerPolicies[0]?.controlledValues, "RequestsAndLimits");
  });
});
