import { test } from "node:test";
import assert from "node:assert/strict";
import { registryReadyLine } from "../../harness/stack/registry.ts";

const image = (reference: string, pushed: boolean) => ({ reference, mirrored: `127.0.0.1:5000/${reference}`, digest: "sha256:0", pushed, ms: 1 });

test("a registry without any archive says which images it lacks and the command that makes them, not '0 of 0 images pushed'", () => {
  const line = registryReadyLine({ url: "http://127.0.0.1:5000", images: [], missing: ["memhog", "alert-receiver"] }, 500);
  assert.equal(line, "registry ready at http://127.0.0.1:5000 in 0.5 s (its start and the pushes), 0 images served (0 pushed now); no archive for memhog, alert-receiver: the real node cannot pull them until `npm run image -- memhog alert-receiver` makes them and the stack starts again (`npm run demo` pushes into a running stack itself)");
});

test("a registry with every archive says how many it serves and pushed, and nothing of missing ones", () => {
  const line = registryReadyLine({ url: "http://127.0.0.1:5000", images: [image("quay.io/metral/memhog:v0.0.1", false), image("ghcr.io/a:latest", true)], missing: [] }, 4_000);
  assert.equal(line, "registry ready at http://127.0.0.1:5000 in 4.0 s (its start and the pushes), 2 images served (1 pushed now)");
});
