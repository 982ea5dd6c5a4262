// The Knative Eventing images test/harness/bins/build.sh makes (cached; the stack's start runs it too),
// read back from their OCI archives: each is named as the rendered install names it (or, for
// event_display, the tests' observer, as eventingImage names it), holds its
// command's static binary where ko would put it and Go's zone database beside it (named by
// ZONEINFO, for a PingSource's time zone), and runs as the non-root user 65532.
import { before, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { eventingImage } from "../../harness/stack/eventing-manifests.ts";
import { EVENTING_SINK_COMMANDS, eventingImageArchive, eventingInstall, type EventingModule } from "../../harness/stack/eventing-source.ts";
import { buildBinaries } from "../../../scripts/lib/binaries.ts";
import { runCommand } from "../../support/run-command.ts";

let binDir: string;
let module: EventingModule;
let installImages: Set<string>;

before(async () => {
  binDir = await buildBinaries(process.env, undefined, ["eventing"]);
  const install = await eventingInstall();
  module = install.module;
  installImages = new Set(JSON.stringify(install.objects).match(/localhost\/appmonitor\/knative-eventing\/[^"]+/g) ?? []);
});

/** One member of a tar archive, as text. */
async function member(archive: string, name: string): Promise<string> {
  const result = await runCommand("tar", ["-xOf", archive, name]);
  assert.equal(result.code, 0, `${archive} ${name}: ${result.stderr}`);
  return result.stdout;
}

test("each command's archive is named as the install (or, for the observer, eventingImage) names it, and holds its binary and the zone database, run as 65532", async () => {
  const sinks = module.commands.filter((c) => c in EVENTING_SINK_COMMANDS);
  assert.deepEqual(sinks, Object.keys(EVENTING_SINK_COMMANDS), "the sink commands are built");
  assert.equal(installImages.size, module.commands.length - sinks.length);
  for (const command of module.commands) {
    const archive = eventingImageArchive(binDir, command);
    assert.ok(existsSync(archive), archive);
    const index = JSON.parse(await member(archive, "index.json")) as { manifests: { digest: string; annotations: Record<string, string> }[] };
    assert.equal(index.manifests.length, 1);
    const [entry] = index.manifests as [(typeof index.manifests)[0]];
    const name = entry.annotations["io.containerd.image.name"] as string;
    assert.equal(name, eventingImage(command, module.version));
    assert.ok(command in EVENTING_SINK_COMMANDS || installImages.has(name), `${name} is used by the install`);
    const blob = (digest: string): string => `blobs/sha256/${digest.replace(/^sha256:/, "")}`;
    const manifest = JSON.parse(await member(archive, blob(entry.digest))) as { config: { digest: string }; layers: { digest: string }[] };
    const config = JSON.parse(await member(archive, blob(manifest.config.digest))) as { config: { User: string; Entrypoint: string[]; Env: string[] } };
    const binary = command.split("/").pop() as string;
    assert.deepEqual(config.config, { Entrypoint: [`/ko-app/${binary}`], User: "65532:65532", Env: ["ZONEINFO=/ko-app/zoneinfo.zip"] });
    assert.equal(manifest.layers.length, 1);
    const layer = await runCommand("bash", ["-c", 'tar -xOf "$1" "$2" | tar -tvf -', "-", archive, blob((manifest.layers[0] as { digest: string }).digest)]);
    assert.equal(layer.code, 0, layer.stderr);
    const entries = layer.stdout.trim().split("\n").map((line) => line.split(/\s+/));
    assert.deepEqual(entries.map((e) => [e[0], e[1], e[5]]), [
      ["drwxr-xr-x", "0/0", "ko-app/"],
      ["-rwxr-xr-x", "0/0", `ko-app/${binary}`],
      ["-rw-r--r--", "0/0", "ko-app/zoneinfo.zip"],
    ]);
  }
});
