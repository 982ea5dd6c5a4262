import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { BINARY_SETS, binarySetsFor } from "../../../scripts/lib/binaries.ts";
import { coldSecondsOf, coldTimes } from "../../harness/bins/cold-times.ts";

const times = coldTimes();

describe("build.sh's sets by what needs them", () => {
  it("name every set of cold-times.txt once", () => {
    assert.deepEqual(Object.values(BINARY_SETS).flat().sort(), times.sets.map((s) => s.name).sort());
  });
  const cases: { parts: Parameters<typeof binarySetsFor>[0]; want: string[] }[] = [
    { parts: {}, want: ["etcd", "kwok", "kube", "crds"] },
    { parts: { realNode: true, eventing: true }, want: ["etcd", "kwok", "kube", "crds", "node", "proxy", "dns", "registry", "ksm", "eventing"] },
    { parts: { realNode: true, prometheusOperator: true, eventing: true, serving: true, helm: true, vpa: true }, want: times.sets.map((s) => s.name) },
  ];
  for (const c of cases) it(`for ${JSON.stringify(c.parts)}`, () => assert.deepEqual([...binarySetsFor(c.parts)].sort(), [...c.want].sort()));
});

describe("coldSecondsOf", () => {
  it("all the sets: the measured whole", () => assert.equal(coldSecondsOf(times, times.sets.map((s) => s.name)), times.binaries.seconds));
  it("some: their share of it", () => {
    const sum = times.sets.reduce((s, r) => s + r.seconds, 0);
    assert.equal(coldSecondsOf(times, ["kube"]), Math.round(((times.sets.find((s) => s.name === "kube")?.seconds ?? 0) * times.binaries.seconds) / sum));
  });
  it("refuses a set the table does not have", () => assert.throws(() => coldSecondsOf(times, ["nope"]), /no set nope/));
});
